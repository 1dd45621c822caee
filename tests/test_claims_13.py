"""Pins on the TensorFlow and estimator source that notebook 13 (exporting and serving)
quotes but its cells do not assert.

What the notebook runs (the steps each exporter kept, the served scores, the method names and
tensors of both exports' signatures, `predict_keys`) its cells assert. Left here: the
statements about the code that decides it, read in the files the notebook names, without
starting TensorFlow. What TensorFlow Serving does with a method name (its model server's
`--enable_signature_method_name_check`) is quoted from its source, which is not installed here.
"""

from __future__ import annotations

import pytest
from support import KERAS_MAJOR, assert_quotes, definition, installed_source


def estimator_source(name: str) -> str:
    return installed_source("tensorflow_estimator", "python", "estimator", name)


@pytest.mark.reference_only
def test_best_exporter_keeps_five_and_exports_on_a_smaller_loss() -> None:
    assert_quotes(
        "tensorflow_estimator/python/estimator/exporter.py",
        "_loss_smaller",
        "def _verify_compare_fn_args(",
        [
            "default_key = metric_keys.MetricKeys.LOSS",
            "return best_eval_result[default_key] > current_eval_result[default_key]",
        ],
    )
    source = estimator_source("exporter.py")
    best = source[
        source.index("class BestExporter(") : source.index("def _garbage_collect_exports(")
    ]
    assert "compare_fn=_loss_smaller," in best and "exports_to_keep=5):" in best


def test_classification_and_regression_outputs_write_classify_and_regress_signatures() -> None:
    source = installed_source(
        "tensorflow", "python", "saved_model", "model_utils", "export_output.py"
    )
    assert "return signature_def_utils.classification_signature_def( examples," in source
    assert "return signature_def_utils.regression_signature_def(examples, self.value)" in source
    assert (
        "'Classification signatures can only accept a single tensor input of ' 'type tf.string."
        in source
    )
    utils = installed_source("tensorflow", "python", "saved_model", "signature_def_utils_impl.py")
    assert "intended for use with the TensorFlow Serving Classify API" in utils
    assert "intended for use with the TensorFlow Serving Regress API" in utils


def test_saved_model_save_writes_predict_signatures_only() -> None:
    source = installed_source("tensorflow", "python", "saved_model", "save.py")
    signatures = definition(source, "_generate_signatures", "def _add_asset_info(")
    assert signatures.count("method_name=") == 1
    assert "method_name=signature_constants.PREDICT_METHOD_NAME," in signatures


@pytest.mark.reference_only
def test_stop_if_no_decrease_hook_reads_the_eval_summaries() -> None:
    """The hook reads estimator.eval_dir(), skips evaluations before min_steps, stops when the
    best is max_steps_without_decrease steps behind, and looks every 60 s by default."""
    source = estimator_source("early_stopping.py")
    hook = definition(source, "stop_if_no_decrease_hook", "def read_eval_metrics(")
    assert "min_steps=0, run_every_secs=60, run_every_steps=None):" in hook
    improvement = definition(source, "_stop_if_no_metric_improvement_hook", "def _summaries(")
    assert "eval_dir = estimator.eval_dir()" in improvement
    assert "eval_results = read_eval_metrics(eval_dir)" in improvement
    assert "if step < min_steps: continue" in improvement
    assert "if step - best_val_step >= max_steps_without_improvement:" in improvement


def timer_trigger() -> str:
    """`SecondOrStepTimer.should_trigger_for_step`, the timer of the early-stopping hook."""
    hooks = installed_source("tensorflow", "python", "training", "basic_session_run_hooks.py")
    timer = hooks[hooks.index("class SecondOrStepTimer(") : hooks.index("class NeverTriggerTimer(")]
    return definition(timer, "should_trigger_for_step", "def update_last_triggered_step(")


@pytest.mark.reference_only
def test_the_hook_reads_global_step_beside_the_training_op_and_looks_once_a_step() -> None:
    """The step the hook sees is fetched in the training op's session.run, and its timer does
    not fire twice for the same step: two runs showing the same step make it look one later."""
    source = estimator_source("early_stopping.py")
    hook = source[
        source.index("class _StopOnPredicateHook(") : source.index("class _CheckForStoppingHook(")
    ]
    assert "return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)" in hook
    assert (
        "global_step = run_values.results if self._timer.should_trigger_for_step(global_step):"
        in hook
    )
    trigger = timer_trigger()
    assert "if self._last_triggered_step == step: return False" in trigger


def test_the_hooks_timer_fires_first_on_the_first_step() -> None:
    """It fires on the first step, then after every_secs seconds or every_steps steps: a run
    shorter than run_every_secs (and no run_every_steps) looks once."""
    trigger = timer_trigger()
    assert "if self._last_triggered_step is None: return True" in trigger
    assert "if time.time() >= self._last_triggered_time + self._every_secs: return True" in trigger
    assert "if step >= self._last_triggered_step + self._every_steps:" in trigger


def test_early_stopping_counts_epochs_from_start_from_epoch() -> None:
    if KERAS_MAJOR == 2:
        source = installed_source("keras", "src", "callbacks.py")
        source = source[source.index("class EarlyStopping(") : source.index("class RemoteMonitor(")]
    else:
        source = installed_source("keras", "src", "callbacks", "early_stopping.py")
    epoch_end = definition(source, "on_epoch_end", "def on_train_end(")
    assert "if current is None or epoch < self.start_from_epoch:" in epoch_end
    assert "self.wait += 1 if self._is_improvement(current, self.best):" in epoch_end
    assert "if self.wait >= self.patience and epoch > 0:" in epoch_end
