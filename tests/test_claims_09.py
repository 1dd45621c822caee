"""Pins on the TensorFlow behaviour and source that notebook 09 (the realistic `model_fn`)
states but its cells do not assert.

What the notebook runs on its own data (the crosses of `crossed_column` and `HashedCrossing`,
the bucket of a missing age, the warm start of Adam's slots, the one-row shapes, the PR AUC,
`Dropout`, the infeed refusing strings, the stored SavedModel's signatures) its cells assert
in every lane. Left here: the general rules its prose quotes, run in one TensorFlow
subprocess in every lane, so that a release that changes one fails with the claim's name;
and the TPU statements, which nothing here can run, read in the files the notebook names as
their source (the estimator's only in the reference lane), without starting TensorFlow.
"""

from __future__ import annotations

import pytest
from support import assert_tpu_estimator_quotes, definition, installed_source, run_python_json

CLAIMS = """
import json

from helpers.quiet import quiet_logs

quiet_logs()
import numpy as np
import tensorflow as tf
import tensorflow.compat.v1 as tf1
from tensorflow.python.tpu.ops import tpu_ops

out = {}


def cross(inputs):
    crossed = tf.sparse.cross_hashed(inputs, num_buckets=1000)
    return tf.sparse.to_dense(crossed).numpy().tolist()


# sparse_cross_hashed: every SparseTensor first, in the listed order, then every dense one
letters, words = tf.constant([["a"], ["b"]]), tf.constant([["x"], ["y"]])
sparse_letters, sparse_words = tf.sparse.from_dense(letters), tf.sparse.from_dense(words)
out["mixed_order_ignored"] = cross([sparse_letters, words]) == cross([words, sparse_letters])
out["dense_order_counts"] = cross([letters, words]) != cross([words, letters])
out["sparse_order_counts"] = cross([sparse_letters, sparse_words]) != cross(
    [sparse_words, sparse_letters]
)

# make_parse_example_spec gives a crossed column's raw string key a VarLenFeature
age = tf1.feature_column.bucketized_column(tf1.feature_column.numeric_column("age"), [25.0])
cross = tf1.feature_column.crossed_column([age, "color"], hash_bucket_size=4)
spec = tf1.feature_column.make_parse_example_spec([tf1.feature_column.indicator_column(cross)])
example = tf.train.Example(features=tf.train.Features(feature={
    "age": tf.train.Feature(float_list=tf.train.FloatList(value=[30.0])),
    "color": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"red"])),
}))
parsed = tf.io.parse_example([example.SerializeToString()], spec)
out["parsed_color"] = [type(spec["color"]).__name__, type(parsed["color"]).__name__]

# AUC: for ROC, Keras's interpolation and TF1's default trapezoidal rule give the same sum
rng = np.random.default_rng(0)
labels = (rng.random(64) < 0.45).astype(np.float32)
scores = rng.random(64).astype(np.float32)
with tf1.Graph().as_default():
    value, update = tf1.metrics.auc(labels, scores, num_thresholds=200, curve="ROC")
    with tf1.Session() as session:
        session.run(tf1.local_variables_initializer())
        session.run(update)
        tf1_roc = float(session.run(value))
keras_roc = tf.keras.metrics.AUC(num_thresholds=200, curve="ROC")
keras_roc.update_state(labels, scores)
out["roc"] = {"keras": float(keras_roc.result()), "trapezoidal": tf1_roc}

# the types the infeed takes, as the notebook lists them
out["infeed_types"] = sorted(dtype.name for dtype in tpu_ops._SUPPORTED_INFEED_DTYPES)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def claims() -> dict:
    """The lane's answers to every claim, computed once in one TensorFlow process."""
    return run_python_json(CLAIMS)


@pytest.mark.tensorflow
def test_sparse_cross_puts_sparse_inputs_first(claims: dict) -> None:
    assert claims["mixed_order_ignored"]
    assert claims["dense_order_counts"]
    assert claims["sparse_order_counts"]


@pytest.mark.tensorflow
def test_parsed_examples_give_the_raw_color_as_a_sparse_tensor(claims: dict) -> None:
    assert claims["parsed_color"] == ["VarLenFeature", "SparseTensor"]


@pytest.mark.tensorflow
def test_roc_auc_keras_and_tf1_default_agree(claims: dict) -> None:
    assert abs(claims["roc"]["keras"] - claims["roc"]["trapezoidal"]) <= 1e-6


@pytest.mark.tensorflow
def test_infeed_types_are_the_listed_ones(claims: dict) -> None:
    infeed_types = ["bfloat16", "bool", "complex64", "float32", "int32", "int64", "int8"]
    assert claims["infeed_types"] == [*infeed_types, "uint32", "uint8"]


def test_infeed_queue_dequeues_with_infeed_dequeue_tuple() -> None:
    source = installed_source("tensorflow", "python", "tpu", "tpu_feed.py")
    dequeue = definition(source, "generate_dequeue_op", "def _generate_enqueue_op(")
    assert "tpu_ops.infeed_dequeue_tuple(" in dequeue


# (function, the definition after it, quotes): in tensorflow_estimator/python/estimator/...
TPU_ESTIMATOR_QUOTES = [
    # core 0's loss: the train and eval loops keep one shard's output, then its first loss
    (
        "_train_on_tpu_system",
        "def _predict_on_tpu_system(",
        ["outputs_from_all_shards=False", "loss = loss[0]"],
    ),
    (
        "_eval_on_tpu_system",
        "def _train_on_tpu_system(",
        ["outputs_from_all_shards=False", "loss = loss[0]"],
    ),
    ("_convert_eval_steps_to_hooks", "def _call_input_fn(", ["must be set on TPU"]),
    (
        "create_tpu_hostcall",
        "class _OutfeedHostCallHook(",
        ["tf.concat(dequeue_ops[i], axis=0)"],
    ),
    ("_add_meta_graph_for_mode", "def _call_model_fn(", ["tf.saved_model.TPU"]),
    (
        "generate_infeed_enqueue_ops_and_dequeue_fn",
        "def _invoke_input_fn_and_record_structure(",
        ["generate_dequeue_op"],
    ),
]


@pytest.mark.reference_only
@pytest.mark.parametrize(("name", "following", "quotes"), TPU_ESTIMATOR_QUOTES)
def test_tpu_estimator_functions_hold_what_the_notebook_says(
    name: str, following: str, quotes: list[str]
) -> None:
    assert_tpu_estimator_quotes(name, following, quotes)


@pytest.mark.reference_only
def test_train_and_evaluate_runs_locally_with_an_evaluating_listener() -> None:
    source = installed_source("tensorflow_estimator", "python", "estimator", "training.py")
    run_local = definition(source, "run_local", "def _start_std_server(")
    assert "_NewCheckpointListenerForEvaluate(" in run_local
