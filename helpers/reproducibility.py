"""One call for repeatable runs.

The committed notebooks are compared output by output with a fresh run (nbval), and the
migration is judged by comparing numbers across TF1 and TF2. Both need the same random
numbers and deterministic kernels on every run.
"""

from __future__ import annotations

import os


def make_reproducible(seed: int) -> None:
    """Seed Python, NumPy and TensorFlow, and make TensorFlow's ops deterministic.

    `enable_op_determinism` makes TensorFlow pick deterministic kernels (and raise for ops
    that have none) so that reductions give bit-identical results run after run.
    """
    import tensorflow as tf

    os.environ["PYTHONHASHSEED"] = str(seed)
    tf.keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()
