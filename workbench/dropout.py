"""TF1's dropout masks in a Keras model, so a TF2 run with dropout on can match its baseline.

`tf1.nn.dropout(x, rate)` draws `RandomUniform(shape(x), seed, seed2)` and keeps the entries at
or above `rate`, scaled by `1 / (1 - rate)` (`_dropout` in tensorflow/python/ops/nn_ops.py). The
op keeps its random state between calls, so step k draws the k-th mask of its sequence. TF1
drew each mask for the whole global batch on one device; `TF1Dropout` calls the same op with
the TF1 op's seeds (`Baseline.dropout_seeds()`, in the order the model_fn created them): every
replica draws the global batch's mask and keeps its own rows. Notebook 15 derives it.

It needs TensorFlow's own kernel of the op: compile with `jit_compile=False` (XLA draws other
numbers), and on a TPU, where the step is compiled, compare with dropout off.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def tf1_dropout_layer() -> type:
    """The layer class, built on first use so that importing the workbench needs no TensorFlow."""
    import tensorflow as tf

    class TF1Dropout(tf.keras.layers.Layer):
        """`tf1.nn.dropout(x, rate)` with a TF1 op's `(seed, seed2)`: the global batch's mask,
        cut to this replica's rows. For `tf1.nn.dropout(x, keep_prob)` pass
        `rate=1 - keep_prob`, as TF1 computes it."""

        def __init__(self, seeds: tuple[int, int], rate: float, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.seed, self.seed2 = (int(s) for s in seeds)
            self.rate, self.scale = rate, 1 / (1 - rate)  # as tf1.nn.dropout computes them

        def call(self, x: Any, training: bool = False) -> Any:
            if not training:
                return x
            replicas = tf.distribute.get_replica_context()
            replica, rows = replicas.replica_id_in_sync_group, tf.shape(x)[0]
            shape = tf.concat([[rows * replicas.num_replicas_in_sync], tf.shape(x)[1:]], axis=0)
            uniform = tf.raw_ops.RandomUniform(
                shape=shape, dtype=x.dtype, seed=self.seed, seed2=self.seed2
            )
            keep = uniform[replica * rows : (replica + 1) * rows] >= self.rate
            return tf.where(keep, x * tf.constant(self.scale, x.dtype), tf.zeros_like(x))

    return TF1Dropout


def TF1Dropout(seeds: tuple[int, int], rate: float, **kwargs: Any) -> Any:
    """A Keras layer that drops what TF1's `tf1.nn.dropout(x, rate)` with these seeds dropped."""
    return tf1_dropout_layer()(seeds, rate, **kwargs)
