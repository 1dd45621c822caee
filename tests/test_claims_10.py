"""Pins on the TensorFlow behaviour and source that notebook 10 (the convolutional `model_fn`
with batch norm) states but its cells do not assert.

What the notebook runs on its own model (the parity of both TF2 paths with the TF1 run, the
costs of per-replica and synchronized batch norm and of Keras' momentum, the swapped-layer
check, the bfloat16 pixels, the Grappler runs, `model.ckpt-0`) its cells assert. Left here:
the general rules its prose quotes, run in one TensorFlow subprocess in every lane (the fused
batch norm's in a second one, in the reference lane only; its rounding with oneDNN off in a
third, in every lane), so that a
release that changes one fails with the claim's name; and the statements about
`TPUEstimator` on a CPU and on a TPU, read in the files the notebook names as their source
(the estimator's only in the reference lane), without starting TensorFlow.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from support import (
    KERAS_MAJOR,
    assert_quotes,
    assert_tpu_estimator_quotes,
    definition,
    installed_source,
    run_python_json,
)

CLAIMS = """
import json

from helpers.quiet import quiet_logs

quiet_logs()
import tensorflow as tf

out = {}

# get_replica_context().all_reduce outside any strategy: the default replica context, identity
value = tf.constant([1.5, -2.0])
context = tf.distribute.get_replica_context()
out["default_all_reduce"] = context.all_reduce("SUM", value).numpy().tolist()

# the kernel's name, which the weight-decay filter `"kernel" in v.name` reads
layer = tf.keras.layers.Conv2D(2, 3, use_bias=False)
layer(tf.zeros([1, 4, 4, 1]))  # built by its first call, as in a model
out["kernel_name"] = layer.kernel.name
print(json.dumps(out))
"""

FUSED = """
import json

from helpers.quiet import quiet_logs

quiet_logs()
import tensorflow.compat.v1 as tf1

with tf1.Graph().as_default() as graph:
    x = tf1.zeros([2, 4, 4, 3])
    tf1.layers.BatchNormalization()(x, training=True)
    types = sorted({op.type for op in graph.get_operations() if "BatchNorm" in op.type})
    updates = len(tf1.get_collection(tf1.GraphKeys.UPDATE_OPS))
print(json.dumps({"types": types, "updates": updates}))
"""

ONEDNN_BATCH_NORM = """
import json

import numpy as np

from helpers.quiet import quiet_logs

quiet_logs()
import tensorflow as tf

batch = np.random.default_rng(0).normal(0.3, 1.2, (16, 8, 8, 16)).astype(np.float32)
ones, zeros = np.ones(16, np.float32), np.zeros(16, np.float32)
fused = tf.compat.v1.nn.fused_batch_norm(batch, ones, zeros, epsilon=1e-5, is_training=True)[0]
mean, variance = tf.nn.moments(tf.constant(batch), [0, 1, 2])
formula = (batch - mean) * tf.math.rsqrt(variance + 1e-5)
gap = float(np.abs(fused.numpy() - formula.numpy()).max())
print(json.dumps({"largest": gap}))
"""


@pytest.fixture(scope="module")
def claims() -> dict:
    """The lane's answers to every claim, computed once in one TensorFlow process."""
    return run_python_json(CLAIMS)


@pytest.mark.tensorflow
def test_all_reduce_of_the_default_replica_context_is_the_identity(claims: dict) -> None:
    assert claims["default_all_reduce"] == [1.5, -2.0]


@pytest.mark.tensorflow
def test_kernel_names_per_keras_generation_contain_kernel(claims: dict) -> None:
    expected = {2: "conv2d/kernel:0", 3: "kernel"}[KERAS_MAJOR]
    assert claims["kernel_name"] == expected


@pytest.mark.tensorflow
@pytest.mark.reference_only
def test_tf1_layers_batch_norm_is_fused_and_adds_update_ops() -> None:
    answer = run_python_json(FUSED)
    assert answer["types"] == ["FusedBatchNormV3"]
    assert answer["updates"] == 2  # the moving mean and the moving variance


def test_keras_sgd_accumulates_the_step_not_the_gradient() -> None:
    if KERAS_MAJOR == 2:
        quotes = [
            "m.assign(-gradient * lr + m * momentum)",
            "variable.assign_add(-gradient * lr + m * momentum)",
        ]
    else:
        quotes = [
            "def update_step(self, gradient, variable, learning_rate)",
            "ops.multiply(m, momentum), ops.multiply(gradient, learning_rate)",
        ]
    assert_quotes("keras/src/optimizers/sgd.py", "update_step", "def get_config(", quotes)


def test_cross_shard_optimizer_averages_gradients_scaled_then_summed() -> None:
    """By default (`Reduction.MEAN`) the loss is scaled by 1/num_shards, then summed."""
    source = installed_source("tensorflow", "python", "tpu", "tpu_optimizer.py")
    compute = definition(source, "compute_gradients", "def apply_gradients(")
    assert "self._reduction == losses.Reduction.MEAN" in compute
    assert "scale = 1.0 / num_shards loss *= scale" in compute
    apply = definition(source, "apply_gradients", "def get_slot(")
    assert "tpu_ops.cross_replica_sum(" in apply


# (function, the definition after it, quotes): in tensorflow_estimator/python/estimator/tpu/
TPU_ESTIMATOR_QUOTES = [
    (
        "as_estimator_spec",
        "class _OpQueueContext(",
        [
            "_OutfeedHostCall.create_cpu_hostcall(self._host_calls)",
            "hooks = [_OutfeedHostCallHook(host_call_ret['host_call'])]",
            "scaffold = self.scaffold_fn() if self.scaffold_fn else None",
        ],
    ),
    (
        "_call_input_fn",
        "def _validate_features_in_predict_input(",
        [
            "batch_size_for_input_fn = ctx.batch_size_for_input_fn",
            "if ctx.is_running_on_cpu(is_export_mode=False): "
            "with tf.compat.v1.device('/device:CPU:0'): return input_fn(**kwargs)",
        ],
    ),
    # create_tpu_hostcall (one host_call row per replica), which 10 quotes too, is pinned in
    # test_claims_09.py
]


@pytest.mark.reference_only
@pytest.mark.parametrize(("name", "following", "quotes"), TPU_ESTIMATOR_QUOTES)
def test_tpu_estimator_functions_hold_what_the_notebook_says(
    name: str, following: str, quotes: list[str]
) -> None:
    assert_tpu_estimator_quotes(name, following, quotes)


@pytest.mark.reference_only
def test_model_fn_gets_the_per_core_batch_on_a_tpu() -> None:
    source = installed_source(
        "tensorflow_estimator", "python", "estimator", "tpu", "tpu_context.py"
    )
    batch = definition(source, "batch_size_for_model_fn", "def master_job(")
    assert "return global_batch_size // self.num_replicas" in batch
    assert (
        source.index("class _InternalTPUContext(")
        < source.index("def batch_size_for_model_fn(")
        < source.index("class _OneCoreTPUContext(")
    )


@pytest.mark.reference_only
@pytest.mark.parametrize("word", ["transpose_input", "bfloat16"])
def test_tpu_estimator_has_no_transpose_input_or_bfloat16_setting(word: str) -> None:
    spec = importlib.util.find_spec("tensorflow_estimator")
    assert spec is not None and spec.submodule_search_locations
    folder = Path(spec.submodule_search_locations[0], "python", "estimator", "tpu")
    sources = sorted(folder.glob("*.py"))
    assert "tpu_estimator.py" in [path.name for path in sources]
    assert [path.name for path in sources if word in path.read_text()] == []


def test_keras_use_ema_is_not_tf1s_moving_average() -> None:
    """Keras 3's first update sets the average to the weight; `fit` ends by overwriting the
    weights with the averages (both generations)."""
    if KERAS_MAJOR == 2:
        optimizer = installed_source("keras", "src", "optimizers", "optimizer.py")
        trainer = installed_source("keras", "src", "engine", "training.py")
    else:
        optimizer = installed_source("keras", "src", "optimizers", "base_optimizer.py")
        trainer = installed_source("keras", "src", "backend", "tensorflow", "trainer.py")
        update = definition(
            optimizer,
            "_update_model_variables_moving_average",
            "def _overwrite_model_variables_with_average_value(",
        )
        assert "not_first_step = ops.not_equal(self.iterations, 0)" in update
    start = optimizer.index("def finalize_variable_values(")
    finalize = optimizer[start : optimizer.index(" def ", start + 4)]
    assert "self._overwrite_model_variables_with_average_value(var_list)" in finalize
    assert "self.optimizer.finalize_variable_values(" in trainer


def test_synchronized_batch_norm_takes_the_variance_from_sums_of_squares() -> None:
    """10: `BatchNormalization(synchronized=True)` all-reduces each replica's sum, sum of
    squares and count and takes E[x²] − E[x]², in both Keras generations."""
    if KERAS_MAJOR == 2:
        source = installed_source(
            "keras", "src", "layers", "normalization", "batch_normalization.py"
        )
        sync = definition(
            source, "_sync_calculate_mean_and_var", "def _dtensor_calculate_mean_and_var("
        )
    else:
        source = installed_source("keras", "src", "backend", "tensorflow", "nn.py")
        sync = definition(source, "_compute_moments_sync", "def _compute_moments(")
    assert "# var = E(x^2) - E(x)^2" in sync
    assert (
        "y_squared_sum = replica_ctx.all_reduce( tf.distribute.ReduceOp.SUM, local_squared_sum )"
        in sync
    )


def test_plain_batch_norm_moving_variance_per_keras_generation() -> None:
    """10 (cells 35 and 68): Keras 2's plain `BatchNormalization` runs the fused kernel and
    keeps its variance, which carries n/(n−1); Keras 3's feeds the uncorrected variance of
    `ops.moments` (`tf.nn.moments` on TensorFlow) into the moving variance. The notebook's cell
    after the cost table asserts each generation's factor."""
    layer = "keras/src/layers/normalization/batch_normalization.py"
    if KERAS_MAJOR == 2:
        assert "self._bessels_correction_test_only = True" in installed_source(layer)
        fused = [
            "variance computed by fused batch norm is with Bessel's correction",
            "if self._bessels_correction_test_only: return variance",
            "return tf.compat.v1.nn.fused_batch_norm(",
        ]
        assert_quotes(layer, "_fused_batch_norm", "def _renorm_correction_and_moments(", fused)
    else:
        call = [
            "mean, variance = self._moments(inputs, mask)",
            "moving_variance * self.momentum + variance * (1.0 - self.momentum)",
        ]
        assert_quotes(layer, "call", "def get_config(", call)
        moments = ["return ops.moments( inputs, axes=self._reduction_axes,"]
        assert_quotes(layer, "_moments", "def _renorm_correction_and_moments(", moments)
        nn = installed_source("keras", "src", "backend", "tensorflow", "nn.py")
        assert "return tf.nn.moments(x, axes, keepdims=keepdims)" in nn


@pytest.mark.tensorflow
def test_fused_batch_norm_rounds_as_moments_with_onednn_off() -> None:
    """Notebook 10 switches oneDNN off so that TF1's fused batch norm rounds as TF2's ops."""
    off = run_python_json(ONEDNN_BATCH_NORM, env={"TF_ENABLE_ONEDNN_OPTS": "0"})
    assert off["largest"] == 0.0  # with oneDNN on, the CPU's (1.9e-06 on an AMD EPYC, AVX-512)
