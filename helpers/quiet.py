"""Keep TensorFlow's start-up and deprecation noise out of what a reader sees.

TensorFlow 2.15 prints CUDA factory-registration errors on import even on machines without a
GPU, and TF1 APIs log a deprecation warning on nearly every call. None of it teaches, and it
would land in the committed notebooks as stderr outputs. The C++ log level is read when
TensorFlow is first imported, so call `quiet_logs()` before `import tensorflow`: it sets the
level, then imports TensorFlow itself where it is installed (a JAX-only runtime has none),
because TensorFlow's Python logger resets itself to INFO on stdout in interactive sessions
such as Jupyter when it is first used.

Where one log line explains a result, `log_lines` brings just that line back; C++ lines that
no log level reaches (XLA's first "Compiled cluster using XLA!") are kept out by
`stderr_silenced`.

Opt out with `quiet_logs(False)` or by setting TPU_MIGRATION_VERBOSE=1 before starting
Jupyter; a TF_CPP_MIN_LOG_LEVEL that is already set is respected.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
import warnings
from collections.abc import Iterator

NOISY_MODULES = r"(tensorflow|tensorflow_estimator|keras|tf_keras|absl)(\.|$)"


def verbose_requested() -> bool:
    return os.environ.get("TPU_MIGRATION_VERBOSE", "").strip().lower() not in ("", "0", "false")


def quiet_logs(enabled: bool | None = None) -> bool:
    """Silence TensorFlow, absl and deprecation warnings; return whether it did."""
    if enabled is None:
        enabled = not verbose_requested()
    if not enabled:
        return False
    imported = sys.modules.get("tensorflow") is not None  # None: made unimportable on purpose
    if imported and not os.environ.get("TF_CPP_MIN_LOG_LEVEL"):
        warnings.warn(
            "quiet_logs() was called after TensorFlow was imported: TensorFlow's C++ start-up "
            "messages were already printed. Call it before `import tensorflow`.",
            stacklevel=2,
        )
    # 3 hides C++ INFO, WARNING and ERROR lines; TF 2.15 logs harmless cuDNN/cuFFT/cuBLAS
    # "Unable to register factory" errors on every import, even without a GPU.
    if not os.environ.get("TF_CPP_MIN_LOG_LEVEL"):
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    warnings.filterwarnings("ignore", module=NOISY_MODULES)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)

    if importlib.util.find_spec("tensorflow") is None:  # a JAX-only runtime: nothing to quiet
        return True
    with stderr_silenced():  # newer TF logs through absl before any log level applies
        import absl.logging
        import tensorflow as tf

    tf.get_logger().setLevel(logging.ERROR)  # creates it now, so the INFO reset happens first
    absl.logging.set_verbosity(absl.logging.ERROR)
    return True


@contextlib.contextmanager
def stderr_silenced() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null: C++ code writes there, past Python's sys.stderr.

    TensorFlow >= 2.16 prints "All log messages before absl::InitializeLog() ..." and oneDNN
    notices while importing, and XLA "Compiled cluster using XLA!" at its first compilation,
    whatever TF_CPP_MIN_LOG_LEVEL says. A Python exception raised inside is not affected: it
    is reported after the descriptor is restored.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


@contextlib.contextmanager
def log_lines(containing: str) -> Iterator[list[str]]:
    """Collect the TensorFlow log messages that contain `containing`, INFO ones included.

    `quiet_logs()` hides TensorFlow's INFO messages, among them some that explain a result
    (TPUEstimator's "Could not find trained model in model_dir"). Inside this block the
    logger's only handler is a collector, so nothing else reaches the notebook.
    """
    import tensorflow as tf

    logger = tf.get_logger()
    lines: list[str] = []

    class Collector(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if containing in record.getMessage():
                lines.append(record.getMessage())

    saved = logger.handlers[:], logger.level, logger.propagate
    logger.handlers, logger.propagate = [Collector()], False
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.handlers, level, logger.propagate = saved
        logger.setLevel(level)
