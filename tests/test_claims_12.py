"""Pins on the TensorFlow and Keras source that notebook 12 (clipping, Adam's epsilon, hooks
and checkpoint retention) quotes but its cells do not assert.

What the notebook runs on its own model (where each clipping lands, the cost of Keras'
epsilon, the logged steps, the NaN stops, the checkpoints kept) its cells assert. Left here:
the statements about the code that decides it, read in the files the notebook names, without
starting TensorFlow, so that a release that moves one fails with the claim's name.
`CrossShardOptimizer`'s scaling and sum, which the notebook quotes too, are pinned in
test_claims_10.py.
"""

from __future__ import annotations

import pytest
from support import KERAS_MAJOR, assert_quotes, definition, installed_source


@pytest.mark.reference_only
def test_estimator_train_adds_its_own_nan_hook_before_the_model_fns_hooks() -> None:
    source = installed_source("tensorflow_estimator", "python", "estimator", "estimator.py")
    train = definition(source, "_train_with_estimator_spec", "def _evaluate_build_graph(")
    nan_hook = "worker_hooks.append(tf.compat.v1.train.NanTensorHook(estimator_spec.loss))"
    assert nan_hook in train
    assert train.index(nan_hook) < train.index("worker_hooks.extend(estimator_spec.training_hooks)")
    hooks = installed_source("tensorflow", "python", "training", "basic_session_run_hooks.py")
    assert "def __init__(self, loss_tensor, fail_on_nan_loss=True):" in hooks


@pytest.mark.reference_only
def test_get_variable_value_is_load_checkpoint_get_tensor() -> None:
    """Estimator.get_variable_value is tf.train.load_variable on the model_dir, which is
    load_checkpoint(...).get_tensor: the same reader as the notebook's TF2 cell."""
    assert_quotes(
        "tensorflow_estimator/python/estimator/estimator.py",
        "get_variable_value",
        "def get_variable_names(",
        ["return tf.train.load_variable(self.model_dir, name)"],
    )
    assert_quotes(
        "tensorflow/python/training/checkpoint_utils.py",
        "load_variable",
        "def list_variables(",
        ["reader = load_checkpoint(ckpt_dir_or_file) return reader.get_tensor(name)"],
    )


def test_checkpoint_saver_hook_saves_first_at_the_step_it_starts_from() -> None:
    """CheckpointSaverHook saves when the session is created, numbered by the global_step read
    then (0 in a new run, the restored step in a resumed one)."""
    hooks = installed_source("tensorflow", "python", "training", "basic_session_run_hooks.py")
    saver = hooks[hooks.index("class CheckpointSaverHook(") : hooks.index("class StepCounterHook(")]
    created = definition(saver, "after_create_session", "def before_run(")
    assert "global_step = session.run(self._global_step_tensor)" in created
    assert "self._save(session, global_step)" in created
    save = definition(saver, "_save", "def _get_saver(")
    assert "self._get_saver().save(session, self._save_path, global_step=step," in save


@pytest.mark.reference_only
def test_keep_checkpoint_max_is_the_savers_max_to_keep() -> None:
    source = installed_source("tensorflow_estimator", "python", "estimator", "estimator.py")
    train = definition(source, "_train_with_estimator_spec", "def _evaluate_build_graph(")
    assert "max_to_keep=self._config.keep_checkpoint_max," in train


def test_adam_epsilon_defaults_differ_between_tf1_and_keras() -> None:
    tf1_adam = installed_source("tensorflow", "python", "training", "adam.py")
    assert 'use_locking=False, name="Adam"' in tf1_adam.replace("'", '"')
    assert "beta2=0.999, epsilon=1e-8," in tf1_adam
    keras_adam = installed_source("keras", "src", "optimizers", "adam.py")
    assert "beta_2=0.999, epsilon=1e-7," in keras_adam


def test_where_keras_clips_under_a_strategy() -> None:
    """Keras 2.15 sums the replicas' gradients and clips the sum; Keras 3 on TensorFlow clips
    each replica's gradient (of its loss scaled by 1/replicas) and sums afterwards."""
    if KERAS_MAJOR == 2:
        source = installed_source("keras", "src", "optimizers", "optimizer.py")
        assert (
            "grads_and_vars = self.aggregate_gradients(grads_and_vars) "
            "return super().apply_gradients(grads_and_vars, name=name)" in source
        )
        base = definition(source, "apply_gradients", "def _apply_weight_decay(")
        assert "grads = self._clip_gradients(grads)" in base
        return
    clip, step = "grads = self._clip_gradients(grads)", "self._backend_update_step("
    apply = assert_quotes(
        "keras/src/optimizers/base_optimizer.py",
        "_backend_apply_gradients",
        "def _backend_update_step(",
        [clip, step],
    )
    assert apply.rindex(clip) < apply.rindex(step)
    assert_quotes(
        "keras/src/backend/tensorflow/optimizer.py",
        "_backend_update_step",
        "def _distributed_tf_update_step(",
        ["grads_and_vars = self._all_reduce_sum_gradients(grads_and_vars)"],
    )
    assert_quotes(
        "keras/src/losses/loss.py",
        "scale_loss_for_distribution",
        "def unscale_loss_for_distribution(",
        ["ops.multiply( value, ops.cast(1.0 / num_replicas, value.dtype)"],
    )


def test_profiler_hook_traces_into_timelines_through_a_tf1_file_writer() -> None:
    """ProfilerHook writes `timeline-<step>.json` Chrome traces of FULL_TRACE steps, and its
    constructor opens a TF1 FileWriter (which raises under eager execution)."""
    hooks = installed_source("tensorflow", "python", "training", "basic_session_run_hooks.py")
    profiler = hooks[hooks.index("class ProfilerHook(") : hooks.index("def _as_graph_element(")]
    init = definition(profiler, "__init__", "def begin(")
    assert 'self._output_file = os.path.join(output_dir, "timeline-{}.json")' in init
    assert "self._file_writer = SummaryWriterCache.get(output_dir)" in init
    assert "config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)" in profiler
    assert "trace.generate_chrome_trace_format(" in profiler
    writer = installed_source("tensorflow", "python", "summary", "writer", "writer.py")
    assert "v1.summary.FileWriter is not compatible with eager execution." in writer


def test_tensorboard_profiles_with_tensorflows_profiler() -> None:
    """TensorBoard(profile_batch=...) starts and stops tf.profiler.experimental, into log_dir
    in Keras 2 and log_dir/train in Keras 3."""
    if KERAS_MAJOR == 2:
        source = installed_source("keras", "src", "callbacks.py")
        assert "self._start_profiler(logdir=self.log_dir)" in source
        start = definition(source, "_start_profiler", "def _stop_profiler(")
        assert "tf.profiler.experimental.start(logdir=logdir)" in start
        return
    board = "keras/src/callbacks/tensorboard.py"
    source = installed_source(board)
    assert 'self._train_dir = os.path.join(self._log_write_dir, "train")' in source
    assert "self._start_profiler(logdir=self._train_dir)" in source
    start = ["backend.tensorboard.start_trace(logdir)"]
    assert_quotes(board, "_start_profiler", "def _stop_profiler(", start)
    backend = installed_source("keras", "src", "backend", "tensorflow", "tensorboard.py")
    assert "tf.profiler.experimental.start(logdir=logdir)" in backend
    assert "tf.profiler.experimental.stop(save=save)" in backend
