"""Pins on the Keras 3 source that the Keras 3 on JAX section of docs/surface.md rests on.

The section's rows link notebook 11 where a cell runs them; the rest name a Keras file and
function, read here without importing Keras (one test runs a JAX `fit`, in a subprocess), so
that a release that changes one fails with the claim's name. Keras 2 has no JAX backend: the
reference lane skips these.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from support import KERAS_MAJOR, definition, installed_source, run_python

pytestmark = pytest.mark.skipif(KERAS_MAJOR == 2, reason="Keras 2 has no JAX backend")


def keras_source(*parts: str) -> str:
    return installed_source("keras", "src", *parts)


def test_a_layer_is_a_tensorflow_trackable_on_the_tensorflow_backend_only() -> None:
    """tf.train.Checkpoint and tf.saved_model.save take TensorFlow trackables; a Keras 3 layer
    is one through TFLayer, its base on the TensorFlow backend, and JaxLayer's base is not."""
    layer = keras_source("layers", "layer.py")
    assert "from keras.src.backend.tensorflow.layer import TFLayer as BackendLayer" in layer
    assert "from keras.src.backend.jax.layer import JaxLayer as BackendLayer" in layer
    assert "class Layer(BackendLayer, Operation):" in layer
    assert "class TFLayer(KerasAutoTrackable):" in keras_source("backend", "tensorflow", "layer.py")
    jax_layer = keras_source("backend", "jax", "layer.py")
    assert "BaseLayer = object" in jax_layer and "class BaseLayer(nnx.Module):" in jax_layer
    assert "Trackable" not in jax_layer
    checkpoint = installed_source("tensorflow", "python", "checkpoint", "checkpoint.py")
    trackable = definition(
        checkpoint, "_assert_trackable", "def _update_checkpoint_state_internal("
    )
    assert (
        "if not isinstance( obj, (base.Trackable, def_function.Function)): raise ValueError("
        in trackable
    )
    save = installed_source("tensorflow", "python", "saved_model", "save.py")
    assert "if not isinstance(obj, base.Trackable): raise ValueError(" in save


def test_the_jax_trainer_takes_one_gradient_of_the_global_batch_and_the_optimizer_clips_it() -> (
    None
):
    trainer = keras_source("backend", "jax", "trainer.py")
    step = definition(trainer, "train_step", "def test_step(")
    assert "grad_fn = jax.value_and_grad( self.compute_loss_and_updates, has_aux=True )" in step
    assert (
        "self.optimizer.stateless_apply( optimizer_variables, grads, trainable_variables )" in step
    )
    assert "all_reduce" not in keras_source("backend", "jax", "optimizer.py")
    optimizer = keras_source("optimizers", "base_optimizer.py")
    clip = definition(optimizer, "_clip_gradients", "def exclude_from_weight_decay(")
    assert "return clip_by_global_norm(grads, self.global_clipnorm)" in clip


def test_steps_per_execution_runs_its_steps_as_separate_calls_on_jax() -> None:
    trainer = keras_source("backend", "jax", "trainer.py")
    make = definition(trainer, "_make_function", "def make_train_function(")
    assert "for _ in range(self.steps_per_execution - 1): data = next(iterator)" in make
    assert "outputs, state = step_function(state, data)" in make
    train_function = definition(trainer, "make_train_function", "def make_test_function(")
    assert "train_step = jit(" in train_function
    assert "step_function = self._make_function(train_step)" in train_function


def test_callbacks_reach_the_jax_state_through_self_model() -> None:
    callback = keras_source("callbacks", "callback.py")
    start = callback.index("def model(self):")
    model = callback[start : callback.index("return self._model ", start)]
    assert 'backend.backend() == "jax"' in model and "self._model.jax_state_sync()" in model


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="this lane has no JAX")
def test_a_model_captured_by_a_callback_has_no_values_during_a_jax_fit() -> None:
    """The JAX trainer empties the variables while it trains (`_get_jax_state(...,
    purge_model_variables=True)`): reading a model captured from outside the callback raises,
    and `self.model` syncs the state back first. Run in a JAX process of its own, since this
    lane's Keras runs on TensorFlow."""
    trainer = keras_source("backend", "jax", "trainer.py")
    purge = definition(trainer, "_purge_model_variables", "def _get_jax_state(")
    assert "for v in self.trainable_variables: v._value = None" in " ".join(purge.split())
    script = (
        "import os; os.environ['KERAS_BACKEND'] = 'jax'\n"
        "import numpy as np, keras\n"
        "model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])\n"
        "model.compile('sgd', 'mse'); seen = []\n"
        "def read(where):\n"
        "    try: np.asarray(model.layers[0].kernel); seen.append(where + ':read')\n"
        "    except TypeError: seen.append(where + ':TypeError')\n"
        "class Captured(keras.callbacks.Callback):\n"
        "    def on_train_batch_begin(self, batch, logs=None): read('begin')\n"
        "    def on_train_batch_end(self, batch, logs=None):\n"
        "        read('end'); np.asarray(self.model.layers[0].kernel); seen.append('synced')\n"
        "    def on_epoch_end(self, epoch, logs=None): read('epoch_end')\n"
        "model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=4, verbose=0,\n"
        "          callbacks=[Captured()])\n"
        "print(' '.join(seen))\n"
    )
    run = run_python(script)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == [
        "begin:read",  # before the first step
        "end:TypeError",
        "synced",
        "begin:read",  # still synced: no step since
        "end:TypeError",  # the step emptied them again
        "synced",
        "epoch_end:read",  # fit synced them at the epoch's end
    ]


def test_tensorboard_does_not_profile_on_jax_below_python_3_12() -> None:
    board = keras_source("callbacks", "tensorboard.py")
    init = definition(board, "__init__", "def set_model(")
    assert 'elif backend.backend() == "jax": if sys.version_info[1] < 12:' in init
    assert "requires python >= 3.12." in init and "profile_batch = 0" in init
    jax_board = keras_source("backend", "jax", "tensorboard.py")
    assert "jax.profiler.start_trace(logdir)" in jax_board
    assert "jax.profiler.stop_trace()" in jax_board


def test_the_jax_export_converts_with_jax2tf() -> None:
    export = keras_source("backend", "jax", "export.py")
    assert "class JaxExportArchive(SavedModelExportArchive):" in export
    assert "jax2tf_kwargs" in export
    saved_model = keras_source("export", "saved_model.py")
    assert (
        "def export_saved_model( model, filepath, verbose=None, input_signature=None, **kwargs ):"
        in saved_model
    )
    assert "class ExportArchive:" in saved_model and "def track_and_add_endpoint(" in saved_model


def test_data_parallel_splits_the_first_dimension_and_initialize_starts_jax_distributed() -> None:
    distribution = keras_source("distribution", "distribution_lib.py")
    data_parallel = distribution[distribution.index("class DataParallel(") :]
    layout = definition(data_parallel, "get_data_layout", "def get_variable_layout(")
    assert "data_shard_spec[0] = self.batch_dim_name # Shard on the first dim" in layout
    assert (
        "def initialize(job_addresses=None, num_processes=None, process_id=None):" in distribution
    )
    assert "jax.distributed.initialize(" in keras_source("backend", "jax", "distribution_lib.py")


def test_model_checkpoint_writes_keras_files() -> None:
    checkpoint = keras_source("callbacks", "model_checkpoint.py")
    assert "self.model.save_weights(" in checkpoint and "self.model.save(" in checkpoint


def test_dtensor_meshes_every_device_kind_and_keras_3_keeps_it_in_a_prototype() -> None:
    """Notebook 11's model-parallel section: TensorFlow's general counterpart, DTensor, takes
    CPU, GPU or TPU devices, and Keras 3 uses it only in its TensorFlow backend's prototype;
    its precision section: TensorFlow's TensorFloat-32 switch, on by default, covers GPUs and
    TPUs."""
    mesh = installed_source("tensorflow", "dtensor", "python", "mesh_util.py")
    distributed = definition(mesh, "create_distributed_mesh", "def barrier(")
    assert "Supported values are 'CPU', 'GPU', 'TPU'." in distributed
    assert "raise ValueError(f'Device type {device_type} is not CPU, GPU or TPU')" in distributed
    prototype = keras_source("backend", "tensorflow", "distribution_lib.py")
    assert prototype.startswith('"""!!!DO NOT USE!!!')
    assert "from tensorflow.experimental import dtensor" in prototype
    spec = importlib.util.find_spec("keras")
    assert spec is not None and spec.submodule_search_locations
    keras_dir = Path(spec.submodule_search_locations[0])
    users = sorted(
        file.relative_to(keras_dir).as_posix()
        for file in (keras_dir / "src").rglob("*.py")
        if "dtensor" in file.read_text() and not file.name.endswith("_test.py")
    )
    assert users == ["src/backend/tensorflow/distribution_lib.py"], users
    config = installed_source("tensorflow", "python", "framework", "config.py")
    tf32 = definition(config, "enable_tensor_float_32_execution", "def get_intra_op_parallelism")
    assert "TensorFloat-32 is enabled by default." in tf32
    assert "TPUs use bfloat16 precision instead of TensorFloat-32 precision" in tf32
    assert "Disabling TensorFloat-32 with this function also causes TPUs to run" in tf32


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="this lane has no JAX")
def test_jax_writes_its_default_matmul_precision_into_each_product_it_traces() -> None:
    """Notebook 11: `jax_default_matmul_precision` is read when a product is traced, so a
    program exported after it is set carries it."""
    lax = installed_source("jax", "_src", "lax", "lax.py")
    canonical = definition(lax, "canonicalize_precision", "def _balanced_eq(")
    assert (
        "if precision is None: if config.default_matmul_precision.value is None: return None"
        in canonical
    )
    assert "return canonicalize_precision(config.default_matmul_precision.value)" in canonical
    dot = definition(lax, "dot_general", "def ragged_dot(")
    assert "precision=canonicalize_precision(precision)" in dot
