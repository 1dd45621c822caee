"""Pins on the TensorFlow and estimator source that notebook 13 (exporting and serving)
quotes but its cells do not assert.

What the notebook runs (the steps each exporter kept, the served scores, the method names of
both exports, `predict_keys`) its cells assert. Left here: the statements about the code that
decides it, read in the files the notebook names, without starting TensorFlow.
"""

from __future__ import annotations

import pytest
from support import definition, installed_source


def estimator_source(name: str) -> str:
    return installed_source("tensorflow_estimator", "python", "estimator", name)


@pytest.mark.reference_only
def test_best_exporter_keeps_five_and_exports_on_a_smaller_loss() -> None:
    source = estimator_source("exporter.py")
    smaller = definition(source, "_loss_smaller", "def _verify_compare_fn_args(")
    assert "default_key = metric_keys.MetricKeys.LOSS" in smaller
    assert "return best_eval_result[default_key] > current_eval_result[default_key]" in smaller
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
