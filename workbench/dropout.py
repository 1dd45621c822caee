"""TF1's random masks in a Keras model, so a TF2 run with them on can match its baseline.

`tf1.nn.dropout(x, rate)` draws `RandomUniform(shape(x), seed, seed2)` and keeps the entries at
or above `rate`, scaled by `1 / (1 - rate)` (`_dropout` in tensorflow/python/ops/nn_ops.py).
Drop connect, as TPU image models write it (EfficientNet's `utils.drop_connect`), draws
`RandomUniform([batch, 1, 1, 1])` and keeps a whole example where `floor(survival_prob +
uniform)` is 1, computing `x / survival_prob * that`. The op keeps its random state between
calls, so step k draws the k-th mask of its sequence. TF1 drew each mask for the whole global
batch on one device; `TF1Dropout` and `TF1DropConnect` call the same op with the TF1 op's seeds
(`Baseline.dropout_seeds()`: every RandomUniform op, in the order the model_fn created them):
every replica draws the global batch's numbers and keeps its own rows (`tf1_uniform_rows`).
Notebook 15 derives it for dropout.

It needs TensorFlow's own kernel of the op: compile with `jit_compile=False` (XLA draws other
numbers), and on a TPU, where the step is compiled, compare with dropout off.
"""

from __future__ import annotations

import functools
from typing import Any


def tf1_uniform_rows(seeds: tuple[int, int], shape: Any, dtype: Any) -> Any:
    """This replica's rows of the draw TF1's `RandomUniform` op with `seeds` made for the
    global batch: `shape` is this replica's (its rows first); the op draws the rows of every
    replica, as TF1's one device did, and this replica keeps its consecutive share (as `fit`
    splits a batch). Call it once per step in the step's function: each call draws the next
    numbers of the op's sequence."""
    import tensorflow as tf

    replicas = tf.distribute.get_replica_context()
    replica, rows = replicas.replica_id_in_sync_group, shape[0]
    whole = tf.concat([[rows * replicas.num_replicas_in_sync], shape[1:]], axis=0)
    seed, seed2 = (int(s) for s in seeds)
    uniform = tf.raw_ops.RandomUniform(shape=whole, dtype=dtype, seed=seed, seed2=seed2)
    return uniform[replica * rows : (replica + 1) * rows]


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
            self.seeds = tuple(int(s) for s in seeds)
            self.rate, self.scale = rate, 1 / (1 - rate)  # as tf1.nn.dropout computes them

        def call(self, x: Any, training: bool = False) -> Any:
            if not training:
                return x
            uniform = tf1_uniform_rows(self.seeds, tf.shape(x), x.dtype)
            keep = uniform >= self.rate
            return tf.where(keep, x * tf.constant(self.scale, x.dtype), tf.zeros_like(x))

    return TF1Dropout


@functools.cache
def tf1_drop_connect_layer() -> type:
    """The layer class, built on first use (no TensorFlow at import)."""
    import tensorflow as tf

    class TF1DropConnect(tf.keras.layers.Layer):
        """Drop connect with a TF1 op's `(seed, seed2)`: each example of the global batch kept
        whole or dropped, as `x / survival_prob * floor(survival_prob + uniform)` with
        `uniform` of shape `[batch, 1, ..., 1]` (EfficientNet's `drop_connect`), cut to this
        replica's rows. Keras has no such layer; `Dropout(noise_shape=...)` draws other
        numbers and keeps at `uniform >= rate`, not by `floor`."""

        def __init__(self, seeds: tuple[int, int], survival_prob: float, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.seeds = tuple(int(s) for s in seeds)
            self.survival_prob = survival_prob

        def call(self, x: Any, training: bool = False) -> Any:
            if not training:
                return x
            shape = tf.concat([tf.shape(x)[:1], tf.ones([tf.rank(x) - 1], tf.int32)], axis=0)
            survival = tf.constant(self.survival_prob, x.dtype)
            kept = tf.floor(survival + tf1_uniform_rows(self.seeds, shape, x.dtype))
            return x / survival * kept  # TF1's order: the division first

    return TF1DropConnect


def TF1Dropout(seeds: tuple[int, int], rate: float, **kwargs: Any) -> Any:
    """A Keras layer that drops what TF1's `tf1.nn.dropout(x, rate)` with these seeds dropped."""
    return tf1_dropout_layer()(seeds, rate, **kwargs)


def TF1DropConnect(seeds: tuple[int, int], survival_prob: float, **kwargs: Any) -> Any:
    """A Keras layer that drops the examples TF1's drop connect with these seeds dropped."""
    return tf1_drop_connect_layer()(seeds, survival_prob, **kwargs)
