"""Pins on upstream behaviour the notebooks work around or explain, per lane.

Each test states what the lane's TensorFlow/Keras does today. When upstream changes, the test
fails and names what to update, so a workaround never outlives the bug it works around. The
expectation follows the lane's Keras: 2 in the reference lane (TF 2.15), 3 in the Colab lane
(TF 2.20) and the current lane (the newest TF).
"""

from __future__ import annotations

import json

from conftest import KERAS_MAJOR, LANE, run_python_json

MIRRORED_FIT = """
import json
from helpers.quiet import quiet_logs
quiet_logs()
import numpy as np
import tensorflow as tf
from helpers import compat
cpu = tf.config.list_physical_devices("CPU")[0]  # the notebooks' stand-in for 8 TPU cores
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 8)
strategy = tf.distribute.MirroredStrategy(
    [device.name for device in tf.config.list_logical_devices("CPU")]
)
x = np.random.default_rng(0).normal(size=(256, 2)).astype("float32")
y = x @ np.array([[0.3], [-0.2]], "float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(8, drop_remainder=True)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.Adagrad(0.05), "mse", steps_per_execution=10)
try:
    model.fit(dataset, epochs=1, steps_per_epoch=20, verbose=0)
    outcome = "trained"
except Exception as error:
    outcome = f"{type(error).__name__}: {error}"
print(json.dumps({
    "outcome": outcome,
    "keras_major": compat.keras_major(),
    "workaround": compat.steps_per_execution_that_works(strategy, 10)[0],
}))
"""

EPOCH_ROUNDING = """
import json
from helpers.quiet import quiet_logs
quiet_logs()
import numpy as np
import tensorflow as tf

x = np.ones((64, 2), "float32")
dataset = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(8)
model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse", steps_per_execution=10)
model.fit(dataset, epochs=2, steps_per_epoch=25, verbose=0)
print(json.dumps({"steps": int(model.optimizer.iterations.numpy())}))
"""


def test_fit_with_mirrored_strategy_and_steps_per_execution():
    """Keras 3: fails (keras-team/keras#19246 family); Keras 2: works."""
    report = run_python_json(MIRRORED_FIT)
    assert report["keras_major"] == KERAS_MAJOR, f"{LANE} lane: Keras {report['keras_major']}"
    if KERAS_MAJOR == 2:
        assert report["outcome"] == "trained"
        assert report["workaround"] == 10, "Keras 2 needs no workaround"
        return
    assert report["workaround"] == 1
    assert report["outcome"] != "trained", (
        "Upstream fixed Model.fit with MirroredStrategy and steps_per_execution > 1: remove "
        "the workaround in helpers.compat.steps_per_execution_that_works and its note in "
        "02_keras_fit, and this pin."
    )
    assert "You must feed a value for placeholder tensor" in report["outcome"], report


def test_steps_per_execution_and_epoch_length():
    """Keras 3 rounds each epoch up to whole executions; Keras 2 runs the steps asked for."""
    steps = run_python_json(EPOCH_ROUNDING)["steps"]
    expected = 50 if KERAS_MAJOR == 2 else 60
    assert steps == expected, json.dumps(
        {"lane": LANE, "steps": steps, "update": "02_keras_fit's rounding cell and README"}
    )


UNEVEN_EVALUATION = """
import json
from helpers.quiet import quiet_logs
quiet_logs()
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]  # the notebooks' stand-in for 8 TPU cores
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 8)
strategy = tf.distribute.MirroredStrategy(
    [device.name for device in tf.config.list_logical_devices("CPU")]
)
dataset = tf.data.Dataset.from_tensor_slices(([[4.0, 4.5]], [[0.8]])).batch(1)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
try:
    model.evaluate(dataset, verbose=0)
    outcome = "evaluated"
except Exception as error:
    outcome = f"{type(error).__name__}: {error}"
print(json.dumps({"outcome": outcome}))
"""

ESTIMATOR_CHECKPOINT_RESTORE = """
import json
from helpers.quiet import quiet_logs
quiet_logs()
import numpy as np
import tensorflow as tf

checkpoint = "fixtures/tf1_reference/checkpoint/model.ckpt-100"
restored = {}
for layer_name in ("dense", "linear"):
    layer = tf.keras.layers.Dense(1, kernel_initializer="zeros", name=layer_name)
    model = tf.keras.Sequential([tf.keras.Input((2,)), layer])
    tf.train.Checkpoint(model=model).restore(checkpoint)
    restored[layer_name] = bool(np.any(model.layers[0].kernel.numpy() != 0))
print(json.dumps(restored))
"""


def test_one_example_evaluation_batch_over_several_replicas():
    """02_keras_fit shows the guide's batch(1) evaluation: Keras 2 copes, Keras 3 fails."""
    outcome = run_python_json(UNEVEN_EVALUATION)["outcome"]
    if KERAS_MAJOR == 2:
        assert outcome == "evaluated"
        return
    assert outcome != "evaluated", (
        "Keras now evaluates a batch that leaves replicas empty: update the note in "
        "02_keras_fit's guide section and this pin."
    )
    assert "must have the same size and shape" in outcome, outcome


def test_checkpoint_restore_of_an_estimator_checkpoint_matches_by_name_only_in_keras_2():
    """04_verify_migration's restore trap: Keras 2 restores a layer named like TF1's."""
    restored = run_python_json(ESTIMATOR_CHECKPOINT_RESTORE)
    expected = {"dense": KERAS_MAJOR == 2, "linear": False}
    assert restored == expected, (
        "tf.train.Checkpoint.restore of a TF1 checkpoint changed behaviour: update the "
        "restore-trap text of 04_verify_migration and this pin."
    )
