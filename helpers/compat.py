"""Say plainly when this TensorFlow cannot run TF1 `TPUEstimator` code.

TensorFlow 2.16 removed `tf.compat.v1.estimator`, and tensorflow-estimator 2.15 fails to
import beside it. TensorFlow 2.15 has no wheels for Python 3.12+, which today's Colab runs. A
TF1 notebook on such a runtime should stop at its first cells with the reason and the way
forward, not fail later with an AttributeError deep inside a model_fn.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from helpers.errors import FriendlyError


class EstimatorUnavailableError(FriendlyError, ImportError):
    """This TensorFlow has no `tf.compat.v1.estimator`."""


def require_estimator(tf: Any) -> None:
    """Raise EstimatorUnavailableError unless `tf.compat.v1.estimator.tpu` can be used."""
    import sys

    try:
        estimator = tf.compat.v1.estimator
        estimator.tpu.TPUEstimator  # noqa: B018 - the attribute access is the check
    except (AttributeError, ImportError) as error:
        python = ".".join(map(str, sys.version_info[:2]))
        raise EstimatorUnavailableError(
            f"This runtime has TensorFlow {tf.__version__} on Python {python}, which has no "
            "tf.compat.v1.estimator (TPUEstimator): TensorFlow removed it in 2.16, and "
            "TensorFlow 2.15, the last release with it, needs Python 3.11 or older. Run this "
            "notebook where TensorFlow 2.15 is installed (on Python 3.11; the README's "
            "`make run` sets one up) or read its recorded outputs; the TensorFlow 2 notebooks "
            "run on this runtime. "
            f"({type(error).__name__}: {error})"
        ) from None


class PackageUnavailableError(FriendlyError, ImportError):
    """A package the notebook needs with this Keras is not installed."""


def require_package(module: str, requirement: str) -> ModuleType:
    """Import `module`, or raise PackageUnavailableError naming the pip requirement to install.

    The embedding layers come from packages of their own, one per Keras generation; a reader
    whose runtime lacks the one their Keras needs gets the command, not an import traceback.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise PackageUnavailableError(
            f"This notebook needs the package {requirement.split('=')[0]} (module {module}), "
            f"which this runtime cannot import ({type(error).__name__}: {error}). Install it with "
            f"`pip install {requirement}` (in a notebook: `%pip install {requirement}`) and run "
            "the notebook again."
        ) from None


def keras_major() -> int:
    """Major version of the Keras behind `tf.keras` (2 up to TF 2.15, 3 after)."""
    from helpers.runtime import keras_version

    return int(keras_version().split(".")[0])
