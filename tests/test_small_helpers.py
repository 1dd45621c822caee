"""helpers.compat, helpers.regression and helpers.summaries."""

from __future__ import annotations

import logging
import types

import numpy as np
import pytest
from support import run_python_json

from helpers import regression
from helpers.compat import (
    EstimatorUnavailableError,
    PackageUnavailableError,
    require_estimator,
    require_package,
)


def fake_tensorflow(version: str, with_estimator: bool):
    tpu = types.SimpleNamespace(TPUEstimator=object)
    v1 = (
        types.SimpleNamespace(estimator=types.SimpleNamespace(tpu=tpu))
        if with_estimator
        else (types.SimpleNamespace())
    )
    return types.SimpleNamespace(__version__=version, compat=types.SimpleNamespace(v1=v1))


def test_require_estimator_passes_where_tpu_estimator_exists():
    require_estimator(fake_tensorflow("2.15.1", with_estimator=True))


def test_require_estimator_explains_why_and_where_to_go_instead():
    with pytest.raises(EstimatorUnavailableError) as raised:
        require_estimator(fake_tensorflow("2.21.0", with_estimator=False))
    message = str(raised.value)
    assert "TensorFlow 2.21.0" in message and "removed it in 2.16" in message
    assert "TensorFlow 2.15 is installed" in message and "make run" in message
    assert raised.value._render_traceback_()[0].startswith("EstimatorUnavailableError: ")


@pytest.mark.tensorflow
def test_require_estimator_accepts_the_real_reference_lane():
    import tensorflow as tf

    if not tf.__version__.startswith("2.15."):
        pytest.skip("tf.compat.v1.estimator exists only up to TensorFlow 2.15")
    require_estimator(tf)


def test_require_package_returns_the_module_or_names_the_pip_command():
    assert require_package("json", "json").dumps([1]) == "[1]"
    with pytest.raises(PackageUnavailableError) as raised:
        require_package("keras_rs_not_here", "keras-rs==0.4.0")
    (rendered,) = raised.value._render_traceback_()
    assert rendered.startswith("PackageUnavailableError: This notebook needs the package keras-rs")
    assert "`pip install keras-rs==0.4.0`" in rendered and "\n" not in rendered


def test_regression_data_is_deterministic_and_follows_the_true_model():
    features, labels = regression.regression_data(256, seed=0)
    again, _ = regression.regression_data(256, seed=0)
    other, _ = regression.regression_data(256, seed=1)
    assert features.dtype == labels.dtype == np.float32
    assert features.shape == (256, 2) and labels.shape == (256, 1)
    assert np.array_equal(features, again) and not np.array_equal(features, other)
    residual = labels - (features @ regression.TRUE_KERNEL + regression.TRUE_BIAS)
    assert 0.005 < residual.std() < 0.02


def test_train_and_eval_sets_differ():
    (train_x, _), (eval_x, _) = regression.train_and_eval_data(seed=0)
    assert train_x.shape == (regression.TRAIN_EXAMPLES, 2)
    assert eval_x.shape == (regression.EVAL_EXAMPLES, 2)
    assert not np.array_equal(train_x[: regression.EVAL_EXAMPLES], eval_x)


@pytest.mark.tensorflow
def test_read_scalars_reads_tf2_summaries_by_step_and_reports_missing_tags(tmp_path):
    report = run_python_json(
        f"""
import json
from helpers.quiet import quiet_logs
quiet_logs()
import tensorflow as tf
from helpers.summaries import read_scalars
with tf.summary.create_file_writer({str(tmp_path)!r}).as_default():
    for step in (2, 0, 1):
        tf.summary.scalar("loss", step * 0.5, step=step)
values = read_scalars({str(tmp_path)!r}, "loss")
try:
    read_scalars({str(tmp_path)!r}, "accuracy")
    missing = ""
except LookupError as error:
    missing = str(error)
print(json.dumps({{"values": values, "missing": missing}}))
"""
    )
    assert report["values"] == {"0": 0.0, "1": 0.5, "2": 1.0}
    assert "no summary named 'accuracy'" in report["missing"]


@pytest.mark.tensorflow
def test_log_lines_brings_back_one_info_message_and_nothing_else():
    report = run_python_json(
        """
import json, logging
from helpers.quiet import log_lines, quiet_logs
quiet_logs()
import tensorflow as tf
import tensorflow.compat.v1 as tf1
with log_lines("Could not find") as lines:
    tf1.logging.info("Could not find trained model in model_dir: /x, running initialization")
    tf1.logging.info("Calling model_fn.")
tf1.logging.info("Could not find it again, outside the block")
print(json.dumps({"lines": lines, "level": tf.get_logger().level}))
"""
    )
    assert report["lines"] == [
        "Could not find trained model in model_dir: /x, running initialization"
    ]
    assert report["level"] == logging.ERROR  # quiet again after the block
