"""Pins on the TensorFlow behaviour that notebook 09 (the realistic `model_fn`) states.

The claims of the notebook's prose that rest on TensorFlow, Keras or the estimator, not on
the notebook's own data, and that its cells do not assert themselves are checked here
against the lane's packages, so that a release that
changes one fails with the claim's name. The TPU statements, which nothing here can run, are
checked against the functions the notebook names as their source (reference lane only: they
live in `tensorflow_estimator`).
"""

from __future__ import annotations

import pytest
from support import KERAS_MAJOR, run_python_json

pytestmark = pytest.mark.tensorflow  # each script starts TensorFlow in a subprocess

CLAIMS = """
import json
import tempfile
from pathlib import Path

from helpers.quiet import quiet_logs

quiet_logs()
import numpy as np
import tensorflow as tf
import tensorflow.compat.v1 as tf1

from helpers import compat

out = {"keras_major": compat.keras_major()}


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

# crossed_column: a dictionary of dense features against parsed tf.Examples
ages = np.repeat([20.0, 30.0, 40.0, 55.0, 70.0], 5).astype(np.float32)
colors = np.array(["red", "green", "blue", "purple", ""] * 5)
boundaries = [25.0, 35.0, 50.0, 65.0]


def columns(*keys):
    age = tf1.feature_column.bucketized_column(tf1.feature_column.numeric_column("age"), boundaries)
    keys = [age if key == "age" else key for key in keys]
    cross_column = tf1.feature_column.crossed_column(keys, hash_bucket_size=12)
    return [tf1.feature_column.indicator_column(cross_column)]


def example(age, color):
    feature = {
        "age": tf.train.Feature(float_list=tf.train.FloatList(value=[age])),
        "color": tf.train.Feature(bytes_list=tf.train.BytesList(value=[color.encode()])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def input_layer(keys, parsed):
    with tf1.Graph().as_default():
        if parsed:
            spec = tf1.feature_column.make_parse_example_spec(columns(*keys))
            serialised = [example(a, c) for a, c in zip(ages, colors, strict=True)]
            features = tf1.io.parse_example(tf1.constant(serialised), spec)
            out["parsed_color_sparse"] = isinstance(features["color"], tf1.SparseTensor)
        else:
            features = {"age": tf1.constant(ages), "color": tf1.constant(colors)}
        dense = tf1.feature_column.input_layer(features, columns(*keys))
        with tf1.Session() as session:
            session.run([tf1.global_variables_initializer(), tf1.tables_initializer()])
            return session.run(dense)


bucket = tf.keras.layers.Discretization(bin_boundaries=boundaries)
hashed = tf.keras.layers.HashedCrossing(num_bins=12, output_mode="one_hot")
age_color = np.asarray(hashed((bucket(ages), tf.constant(colors))))
color_age = np.asarray(hashed((tf.constant(colors), bucket(ages))))
crossed = {
    (source, keys): input_layer(keys, source == "example")
    for source in ("dict", "example")
    for keys in (("age", "color"), ("color", "age"))
}
out["crossed"] = {
    f"{source} {' '.join(keys)}": [
        bool(np.array_equal(value, age_color)),
        bool(np.array_equal(value, color_age)),
    ]
    for (source, keys), value in crossed.items()
}

# a missing age (-1) lies below the first boundary: Keras's bucket 0 (TF1's bucketized_column
# is asserted by the notebook's own cell)
out["keras_bucket_of_minus_one"] = int(bucket(tf.constant([-1.0])).numpy()[0])

# warm start: init_from_checkpoint on a scope loads the slots, warm_start(".*") does not
folder = Path(tempfile.mkdtemp())


def adam_graph(warm_start=None):
    with tf1.Graph().as_default():
        kernel = tf1.get_variable("hidden/kernel", initializer=tf1.ones([2, 1]))
        loss = tf1.reduce_sum(tf1.matmul(tf1.constant([[1.0, 2.0]]), kernel) ** 2)
        train_op = tf1.train.AdamOptimizer(0.1).minimize(loss)
        if warm_start is not None:
            warm_start()
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            if warm_start is None:
                session.run(train_op)
                return tf1.train.Saver().save(session, str(folder / "adam.ckpt"))
            return {v.op.name: session.run(v) for v in tf1.global_variables()}


checkpoint = adam_graph()
saved = tf.train.load_checkpoint(checkpoint)
ways = {
    "init_from_checkpoint": lambda: tf1.train.init_from_checkpoint(
        checkpoint, {"hidden/": "hidden/"}
    ),
    "warm_start": lambda: tf1.train.warm_start(checkpoint, ".*"),
}
out["loaded"] = {
    way: [k for k, v in sorted(adam_graph(load).items()) if np.array_equal(v, saved.get_tensor(k))]
    for way, load in ways.items()
}

# one row: eager calls against a function traced for TensorSpec([None])
one_hot = tf.keras.layers.CategoryEncoding(5, output_mode="one_hot")
one_age, one_color = tf.constant([30.0]), tf.constant(["red"])
out["eager_one_row"] = [
    list(one_hot(bucket(one_age)).shape),
    list(hashed((bucket(one_age), one_color)).shape),
]


@tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.string)])
def traced(age, color):
    ids = bucket(age)
    return one_hot(ids), hashed((ids, color))


out["traced_one_row"] = [list(tensor.shape) for tensor in traced(one_age, one_color)]

# AUC: Keras interpolates PR curves as TF1's careful_interpolation; TF1's default differs
rng = np.random.default_rng(0)
labels = (rng.random(64) < 0.45).astype(np.float32)
scores = rng.random(64).astype(np.float32)


def tf1_auc(curve, summation_method):
    with tf1.Graph().as_default():
        value, update = tf1.metrics.auc(
            labels, scores, num_thresholds=200, curve=curve, summation_method=summation_method
        )
        with tf1.Session() as session:
            session.run(tf1.local_variables_initializer())
            session.run(update)
            return float(session.run(value))


def keras_auc(curve):
    metric = tf.keras.metrics.AUC(num_thresholds=200, curve=curve)
    metric.update_state(labels, scores)
    return float(metric.result())


out["auc"] = {
    curve: {
        "keras": keras_auc(curve),
        "trapezoidal": tf1_auc(curve, "trapezoidal"),
        "careful_interpolation": tf1_auc(curve, "careful_interpolation"),
    }
    for curve in ("ROC", "PR")
}

# Dropout: training=False leaves the input unchanged
dropout, ones = tf.keras.layers.Dropout(0.5, seed=1), tf.ones([1, 1000])
out["dropout_unchanged"] = {
    str(mode): bool(np.array_equal(dropout(ones, training=mode), ones)) for mode in (True, False)
}

# the stored TPUEstimator SavedModel (export_to_tpu=False): one MetaGraph, loads without tags
stored = Path("fixtures/tf1_model_fn/saved_model")
out["untagged_signatures"] = sorted(tf.saved_model.load(str(stored)).signatures)
print(json.dumps(out))
"""

TPU_SOURCES = """
import inspect
import json

from helpers.quiet import quiet_logs

quiet_logs()
import tensorflow as tf
from tensorflow.python.tpu.ops import tpu_ops
from tensorflow_estimator.python.estimator import training
from tensorflow_estimator.python.estimator.tpu import tpu_estimator

source = inspect.getsource
out = {}
for name in ("_train_on_tpu_system", "_eval_on_tpu_system"):
    text = source(getattr(tpu_estimator, name))
    out[name] = "outputs_from_all_shards=False" in text and "loss = loss[0]" in text
out["eval_steps"] = "must be set on TPU" in source(
    tpu_estimator.TPUEstimator._convert_eval_steps_to_hooks
)
out["host_call_concat"] = "tf.concat(dequeue_ops[i], axis=0)" in source(
    tpu_estimator._OutfeedHostCall.create_tpu_hostcall
)
out["export_tags"] = "tf.saved_model.TPU" in source(
    tpu_estimator.TPUEstimator._add_meta_graph_for_mode
)
out["run_local"] = "_NewCheckpointListenerForEvaluate" in source(
    training._TrainingExecutor.run_local
)
out["string_infeed"] = tf.string in tpu_ops._SUPPORTED_INFEED_DTYPES
# what the notebook's input_fn feeds model_fn: float32 numbers and int64 ids
out["fed_types_infeed"] = all(
    dtype in tpu_ops._SUPPORTED_INFEED_DTYPES for dtype in (tf.float32, tf.int64)
)
out["infeed_types"] = sorted(dtype.name for dtype in tpu_ops._SUPPORTED_INFEED_DTYPES)
out["dequeue_in_pipeline"] = "generate_dequeue_op" in source(
    tpu_estimator._InputPipeline.generate_infeed_enqueue_ops_and_dequeue_fn
)
with tf.Graph().as_default():
    try:
        tpu_ops.infeed_dequeue_tuple([tf.string], [[1]])
        out["string_dequeue"] = "built"
    except TypeError as error:
        out["string_dequeue"] = f"TypeError: {str(error).splitlines()[0]}"
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def claims() -> dict:
    """The lane's answers to every claim, computed once in one TensorFlow process."""
    return run_python_json(CLAIMS)


@pytest.fixture(scope="module")
def tpu_sources() -> dict:
    """What the estimator's TPU functions, which the notebook cites, contain."""
    return run_python_json(TPU_SOURCES)


def test_lane_keras(claims: dict) -> None:
    assert claims["keras_major"] == KERAS_MAJOR


def test_sparse_cross_puts_sparse_inputs_first(claims: dict) -> None:
    assert claims["mixed_order_ignored"]
    assert claims["dense_order_counts"]
    assert claims["sparse_order_counts"]


def test_crossed_column_order_depends_on_the_input(claims: dict) -> None:
    # [equal to HashedCrossing((age, color)), equal to HashedCrossing((color, age))]
    assert claims["parsed_color_sparse"]
    assert claims["crossed"] == {
        "dict age color": [True, False],
        "dict color age": [True, False],
        "example age color": [True, False],
        "example color age": [False, True],
    }


def test_missing_age_lands_in_the_first_bucket(claims: dict) -> None:
    assert claims["keras_bucket_of_minus_one"] == 0


def test_scope_warm_start_loads_slots_warm_start_settings_do_not(claims: dict) -> None:
    assert claims["loaded"] == {
        "init_from_checkpoint": ["hidden/kernel", "hidden/kernel/Adam", "hidden/kernel/Adam_1"],
        "warm_start": ["hidden/kernel"],
    }


def test_one_row_shapes_eager_and_traced(claims: dict) -> None:
    eager = [[5], [12]] if KERAS_MAJOR == 2 else [[1, 5], [1, 12]]
    assert claims["eager_one_row"] == eager
    assert claims["traced_one_row"] == [[1, 5], [1, 12]]


def test_auc_summation(claims: dict) -> None:
    roc, pr = claims["auc"]["ROC"], claims["auc"]["PR"]
    assert abs(roc["keras"] - roc["trapezoidal"]) <= 1e-6
    assert abs(pr["keras"] - pr["careful_interpolation"]) <= 1e-6
    assert abs(pr["keras"] - pr["trapezoidal"]) > 1e-4


def test_dropout_training_flag(claims: dict) -> None:
    assert claims["dropout_unchanged"] == {"True": False, "False": True}


def test_stored_saved_model_loads_without_tags(claims: dict) -> None:
    assert claims["untagged_signatures"] == ["scores", "serving_default"]


@pytest.mark.reference_only
def test_tpu_statements_rest_on_the_cited_source(tpu_sources: dict) -> None:
    assert tpu_sources["_train_on_tpu_system"]
    assert tpu_sources["_eval_on_tpu_system"]
    assert tpu_sources["eval_steps"]
    assert tpu_sources["host_call_concat"]
    assert tpu_sources["export_tags"]
    assert tpu_sources["run_local"]
    assert not tpu_sources["string_infeed"]
    assert tpu_sources["fed_types_infeed"]
    assert tpu_sources["dequeue_in_pipeline"]
    infeed_types = ["bfloat16", "bool", "complex64", "float32", "int32", "int64", "int8"]
    assert tpu_sources["infeed_types"] == [*infeed_types, "uint32", "uint8"]  # as listed
    assert tpu_sources["string_dequeue"].startswith("TypeError: <dtype: 'string'> is not a")
