"""Pins on what notebook 08 says TensorFlow does with a step on its way to a TPU, per lane.

The notebook's cells assert these on its own examples; here they are pinned apart from its
outputs, so that a TensorFlow or Keras release that changes one fails with the claim's name.
The copyable `xla_check` is taken from the notebook itself (the cell that defines it), so the
test checks the code a reader copies. Everything runs in one subprocess that starts
TensorFlow once and prints the measured facts as JSON.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from support import ROOT, run_python_json

pytestmark = pytest.mark.tensorflow  # one subprocess that starts TensorFlow

NOTEBOOK = ROOT / "notebooks" / "08_tpu_readiness.ipynb"

CLAIMS = r"""
import inspect, json, os, re, sys
from helpers.quiet import quiet_logs
quiet_logs()
import numpy as np
import tensorflow as tf
from tensorflow.python.tpu.ops import tpu_ops

namespace = {"re": re, "tf": tf}
exec(sys.argv[1], namespace)  # the notebook's cell that defines xla_check
xla_check = namespace["xla_check"]
facts = {}

features = tf.constant([[1.0, -2.0], [3.0, 0.5], [-1.0, 2.0], [0.0, 1.0]])
labels = tf.constant([[1.0], [-1.0], [0.5], [0.0]])

def distinct(f):
    return tf.size(tf.unique(tf.reshape(tf.sign(f), [-1]))[0])

@tf.function
def nested(f, l):
    return distinct(f)

hidden = {
    "cond": lambda f, l: tf.cond(
        tf.reduce_all(tf.math.is_finite(l)),
        lambda: tf.cast(tf.reduce_sum(tf.cast(f, tf.float64)), tf.float32),
        lambda: tf.constant(0.0),
    ),
    "while_loop": lambda f, l: tf.while_loop(
        lambda i, n: i < 2, lambda i, n: (i + 1, n + distinct(f)), (0, 0)
    )[1],
    "nested": nested,
    "map_fn": lambda f, l: tf.map_fn(
        lambda row: tf.size(tf.unique(tf.sign(row))[0]), f, fn_output_signature=tf.int32
    ),
}
facts["hidden"] = {}
for name, step in hidden.items():
    graph = tf.function(step).get_concrete_function(features, labels).graph
    facts["hidden"][name] = {
        "found": xla_check(step, features, labels),
        "top_level": sorted({op.type for op in graph.get_operations()}),
    }

def build():
    model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    return model
checked, plain = build(), build()
plain.set_weights(checked.get_weights())
before = [w.copy() for w in checked.get_weights()]
facts["train_step_found"] = xla_check(checked.train_step, (features, labels))
tf.function(plain.train_step)((features, labels))
facts["one_step"] = {
    "moved": max(float(np.abs(a - b).max()) for a, b in zip(checked.get_weights(), before)),
    "from_one_plain_step": max(
        float(np.abs(a - b).max()) for a, b in zip(checked.get_weights(), plain.get_weights())
    ),
}

def soft_placement_of_a_tpu_step():
    seen = []
    @tf.function
    def step(x):
        seen.append(tf.config.get_soft_device_placement())
        return tf.compat.v1.tpu.replicate(lambda value: value + 1.0, [[x]])
    graph = step.get_concrete_function(tf.TensorSpec([2])).graph
    ops = [op for op in graph.get_operations() if op.type == "TPUReplicateMetadata"]
    return [seen[0], ops[0].get_attr("allow_soft_placement")]
facts["soft_placement"] = {"eager": tf.config.get_soft_device_placement()}
facts["soft_placement"]["nothing set"] = soft_placement_of_a_tpu_step()
for enabled in (True, False):
    tf.config.set_soft_device_placement(enabled)
    facts["soft_placement"][f"set to {enabled}"] = soft_placement_of_a_tpu_step()

with tf.Graph().as_default():
    try:
        tpu_ops.infeed_dequeue_tuple(dtypes=[tf.float64], shapes=[[8, 2]])
        facts["infeed_float64"] = "accepted"
    except TypeError as error:
        facts["infeed_float64"] = str(error)
    tpu_ops.infeed_dequeue_tuple(dtypes=[tf.float32, tf.bfloat16], shapes=[[8, 2], [8, 2]])
header = os.path.join(tf.sysconfig.get_include(), "tensorflow", "core", "tpu", "tpu_defs.h")
with open(header) as file:
    types = re.search(r"kTpuAllTypes = \{\s*\{([^}]*)\}", file.read()).group(1)
facts["tpu_types"] = [name.strip() for name in types.split(",")]

options = tf.distribute.RunOptions()
facts["run_options"] = [
    options.experimental_enable_dynamic_batch_size,
    options.experimental_bucketizing_dynamic_shape,
]
tf32 = tf.config.experimental.enable_tensor_float_32_execution
facts["tf32_doc"] = " ".join(tf32.__doc__.split())
facts["py_function_doc"] = " ".join(tf.py_function.__doc__.split())
from tensorflow.python.distribute import tpu_strategy
facts["tpu_function_creator"] = inspect.getsource(tpu_strategy.TPUExtended._tpu_function_creator)

count, batch = 61, 8
rng = np.random.default_rng(0)
x = rng.normal(size=(count, 2)).astype(np.float32)
y = rng.normal(size=(count, 1)).astype(np.float32)
padding = -count % batch
padded = tf.data.Dataset.from_tensor_slices((
    np.concatenate([x, np.zeros((padding, 2), np.float32)]),
    np.concatenate([y, np.zeros((padding, 1), np.float32)]),
    np.concatenate([np.ones(count, np.float32), np.zeros(padding, np.float32)]),
)).batch(batch, drop_remainder=True)
model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse", weighted_metrics=[tf.keras.metrics.MeanSquaredError(name="mse")])
kernel, bias = model.get_weights()
reported = model.evaluate(padded, return_dict=True, verbose=0)
facts["padded_evaluate"] = {
    "numpy_mse": float(np.mean(np.square(x @ kernel + bias - y))),
    "mse": reported["mse"],
    "loss": reported["loss"],
}
print(json.dumps(facts))
"""


def xla_check_cell() -> str:
    """The source of the notebook's cell that defines `xla_check`, as a reader copies it."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    (source,) = [s for s in sources if s.startswith("def xla_check(")]
    return source


@pytest.fixture(scope="module")
def facts() -> dict:
    code = f"import sys; sys.argv = ['claims', {xla_check_cell()!r}]\n" + CLAIMS
    return run_python_json(code)


@pytest.mark.parametrize(
    ("where", "kind", "op_type"),
    [
        ("cond", "float64", "Cast"),
        ("while_loop", "shape not static", "Unique"),
        ("nested", "shape not static", "Unique"),
        ("map_fn", "shape not static", "Unique"),
    ],
)
def test_xla_check_finds_what_branches_loops_nested_functions_and_map_fn_hide(
    facts: dict, where: str, kind: str, op_type: str
) -> None:
    case = facts["hidden"][where]
    assert op_type not in case["top_level"], "no longer hidden below the graph's top level"
    assert "XLA refused" not in case["found"], case["found"]
    assert op_type in case["found"].get(kind, []), case["found"]


def test_xla_check_runs_one_real_training_step(facts: dict) -> None:
    assert facts["train_step_found"] == {}
    assert facts["one_step"]["moved"] > 1e-3, "xla_check no longer trains the model it is given"
    assert facts["one_step"]["from_one_plain_step"] < 1e-6, "not the same as one plain step"


def test_soft_placement_is_off_in_a_traced_tpu_step_unless_set(facts: dict) -> None:
    placement = facts["soft_placement"]
    assert placement["eager"] is True
    assert placement["nothing set"] == [False, False]
    assert placement["set to True"] == [True, True]
    assert placement["set to False"] == [False, False]


def test_tpuestimator_infeed_refuses_float64_and_tpu_types_include_it(facts: dict) -> None:
    assert "is not a supported TPU infeed type" in facts["infeed_float64"]
    assert {"DT_FLOAT", "DT_BFLOAT16", "DT_DOUBLE"} <= set(facts["tpu_types"])


def test_tpu_strategy_passes_maximum_shapes_and_always_traces(facts: dict) -> None:
    assert facts["run_options"] == [True, False], "dynamic batch size on, bucketizing off"
    source = facts["tpu_function_creator"]
    assert "maximum_shapes=maximum_shapes" in source, "tpu.replicate no longer given the bound"
    assert "def_function.function(tpu_function)" in source, "TPUStrategy.run no longer traces"


def test_docstrings_quoted_by_the_notebook(facts: dict) -> None:
    tf32 = facts["tf32_doc"]
    assert "TensorFloat-32 is enabled by default" in tf32
    assert "TPUs also run certain float32 ops, like matrix multiplications and convolutions" in tf32
    assert "with lower precision by default" in tf32
    assert "must run in the same address space as the Python program" in facts["py_function_doc"]


def test_padded_evaluate_loss_is_averaged_over_the_padded_batch(facts: dict) -> None:
    evaluated = facts["padded_evaluate"]
    assert evaluated["mse"] == pytest.approx(evaluated["numpy_mse"], rel=1e-6)
    assert evaluated["loss"] == pytest.approx(evaluated["numpy_mse"] * 61 / 64, rel=1e-5)


def _source(package: str, *parts: str) -> str:
    """One installed source file, read without importing its package (no TensorFlow start)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed in this lane")
    return " ".join(Path(spec.submodule_search_locations[0], *parts).read_text().split())


def _keras_generation() -> int:
    """3 where `keras` is Keras 3 (its source has `keras/src/losses/loss.py`), else 2."""
    spec = importlib.util.find_spec("keras")
    assert spec is not None and spec.submodule_search_locations
    return 3 if Path(spec.submodule_search_locations[0], "src/losses/loss.py").exists() else 2


DYNAMIC_BATCH_DEFAULT = "batch_size: Boolean. Only applies to TPUStrategy. Default to True"
TF_QUOTES = [
    ("python/framework/config.py", "from 23 bits of precision to 10 bits"),
    ("python/framework/config.py", "potentially has a large performance cost"),
    ("python/distribute/distribute_lib.py", DYNAMIC_BATCH_DEFAULT),
    ("python/distribute/distribute_lib.py", "to reduce XLA recompilation"),
    ("python/tpu/tpu.py", "Automatic outside compilation is enabled"),
    ("python/tpu/tpu.py", "def _pad_all_input("),
    ("python/distribute/tpu_strategy.py", "device_util.get_host_for_device(tpu_device)"),
]

ESTIMATOR_QUOTES = [
    "executed on the CPU on every step",
    "must have static shape",
    "dynamic shape (should be static)",
    "Pads out the batch dimension",
    "all evaluation steps and all batches should have the same size",
]


@pytest.mark.parametrize(("path", "quote"), TF_QUOTES)
def test_tensorflow_source_holds_what_the_notebook_quotes(path: str, quote: str) -> None:
    assert quote in _source("tensorflow", *path.split("/"))


@pytest.mark.reference_only
@pytest.mark.parametrize("quote", ESTIMATOR_QUOTES)
def test_tpu_estimator_source_holds_what_the_notebook_quotes(quote: str) -> None:
    source = _source("tensorflow_estimator", "python", "estimator", "tpu", "tpu_estimator.py")
    assert quote.lower() in source.lower(), quote


def test_keras3_loss_docstring_divides_by_the_sample_size() -> None:
    if _keras_generation() != 3:
        pytest.skip("the notebook cites the Keras 3 `Loss` docstring")
    source = _source("keras", "src", "losses", "loss.py")
    assert '`"sum_over_batch_size"` and `"mean"` sum the loss and divide by the sample size' in (
        source
    )
    assert 'reduction="sum_over_batch_size"' in source
