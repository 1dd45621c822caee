"""Say plainly when this TensorFlow cannot run TF1 `TPUEstimator` code.

TensorFlow 2.16 removed `tf.compat.v1.estimator`, and tensorflow-estimator 2.15 fails to
import beside it. TensorFlow 2.15 has no wheels for Python 3.12+, which today's Colab runs. A
TF1 notebook on such a runtime should stop at its first cells with the reason and the way
forward, not fail later with an AttributeError deep inside a model_fn.
"""

from __future__ import annotations

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
            "notebook in the reference lane (Python 3.11: `make run`, see the README) or read "
            "its recorded outputs; the TensorFlow 2 notebooks run on this runtime. "
            f"({type(error).__name__}: {error})"
        ) from None


KERAS_MIRRORED_STEPS_PER_EXECUTION_ISSUE = "https://github.com/keras-team/keras/issues/19246"


def keras_major() -> int:
    """Major version of the Keras behind `tf.keras` (2 up to TF 2.15, 3 after)."""
    from helpers.runtime import keras_version

    return int(keras_version().split(".")[0])


def steps_per_execution_that_works(strategy: Any, requested: int) -> tuple[int, str]:
    """The `steps_per_execution` to use with `strategy`, and why if it differs.

    Keras 3 fails in `Model.fit` with MirroredStrategy over more than one replica and
    `steps_per_execution > 1` ("You must feed a value for placeholder tensor"), a known
    upstream bug; Keras 2 and TPUStrategy are not affected. Returns `requested` unchanged
    where it works, else 1 with an explanation to print.
    """
    import tensorflow as tf

    affected = (
        keras_major() >= 3
        and isinstance(strategy, tf.distribute.MirroredStrategy)
        and strategy.num_replicas_in_sync > 1
        and requested > 1
    )
    if not affected:
        return requested, ""
    return 1, (
        f"Keras {keras_major()} cannot run Model.fit with MirroredStrategy on "
        f"{strategy.num_replicas_in_sync} replicas and steps_per_execution={requested} (it fails "
        "with 'You must feed a value for placeholder tensor'; upstream: "
        f"{KERAS_MIRRORED_STEPS_PER_EXECUTION_ISSUE}). This run uses steps_per_execution=1; "
        "on a TPU, with one replica, or with Keras 2 the requested value works."
    )
