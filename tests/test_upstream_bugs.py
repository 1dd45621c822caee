"""Pins on upstream behaviour the notebooks work around or explain, per lane.

Each test states what the lane's TensorFlow/Keras does today. When upstream changes, the test
fails and names what to update, so a workaround never outlives the bug it works around. The
expectation follows the lane's Keras: 2 in the reference lane (TF 2.15), 3 in the Colab lane
(TF 2.20) and the current lane (the newest TF).
"""

from __future__ import annotations

import json

import pytest
from support import KERAS_MAJOR, LANE, run_python_json

pytestmark = pytest.mark.tensorflow  # each case starts TensorFlow in a subprocess

OVER_EIGHT_REPLICAS = """
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


def outcome(run):
    try:
        run()
        return "ran"
    except Exception as error:
        return f"{type(error).__name__}: {error}"


def compiled_model(spe=1):
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
        model.compile(tf.keras.optimizers.Adagrad(0.05), "mse", steps_per_execution=spe)
    return model


def custom_loop_step(build):
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
        optimizer = tf.keras.optimizers.Adagrad(0.05)
        if build:
            optimizer.build(model.trainable_variables)

    def step_fn(inputs):
        features, labels = inputs
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(labels - model(features)), axis=-1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=8)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))

    @tf.function
    def train_step(inputs):
        strategy.run(step_fn, args=(inputs,))

    train_step(next(iter(strategy.experimental_distribute_dataset(dataset))))


one_example = tf.data.Dataset.from_tensor_slices(([[4.0, 4.5]], [[0.8]])).batch(1)
two_examples = tf.data.Dataset.from_tensor_slices((x[:2], y[:2])).batch(2)


class RowLengths(tf.keras.layers.Layer):  # a ragged input's row lengths, as a feature
    def call(self, ids):
        return tf.cast(ids.row_lengths(), "float32")[:, None]

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 1)


def ragged_ids_fit():
    ids = tf.ragged.constant([[1, 2], [3], [], [0, 4, 4]] * 4, dtype=tf.int64)
    data = tf.data.Dataset.from_tensor_slices((ids, np.zeros((16, 1), "float32"))).batch(16)
    with strategy.scope():
        inputs = tf.keras.Input((None,), dtype=tf.int64, ragged=True)
        model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(RowLengths()(inputs)))
        model.compile("sgd", "mse")
    model.fit(data, verbose=0)


print(json.dumps({
    "keras_major": compat.keras_major(),
    "fit_spe10": outcome(
        lambda: compiled_model(10).fit(dataset, epochs=1, steps_per_epoch=20, verbose=0)
    ),
    "loop_unbuilt": outcome(lambda: custom_loop_step(build=False)),
    "loop_built": outcome(lambda: custom_loop_step(build=True)),
    "evaluate_one_example": outcome(lambda: compiled_model().evaluate(one_example, verbose=0)),
    "fit_one_example": outcome(lambda: compiled_model().fit(one_example, verbose=0)),
    "fit_two_examples": outcome(lambda: compiled_model().fit(two_examples, verbose=0)),
    "fit_ragged_ids": outcome(ragged_ids_fit),
}))
"""


@pytest.fixture(scope="module")
def over_eight_replicas() -> dict:
    """One TensorFlow start for the pins that need MirroredStrategy over 8 virtual CPUs."""
    report = run_python_json(OVER_EIGHT_REPLICAS, timeout=600)  # seven experiments, one start
    assert report["keras_major"] == KERAS_MAJOR, f"{LANE} lane: Keras {report['keras_major']}"
    return report


def test_fit_with_mirrored_strategy_and_steps_per_execution(over_eight_replicas):
    """Keras 3: fails (keras-team/keras#19246 family); Keras 2: works."""
    outcome = over_eight_replicas["fit_spe10"]
    if KERAS_MAJOR == 2:
        assert outcome == "ran"
        return
    assert outcome != "ran", (
        "Upstream fixed Model.fit with MirroredStrategy and steps_per_execution > 1: remove "
        "the keras_bug_19246 fallback in 02_keras_fit and 04_verify_migration, and this pin."
    )
    assert "You must feed a value for placeholder tensor" in outcome, outcome


def test_custom_loop_needs_optimizer_build_in_scope_under_keras_3(over_eight_replicas):
    """03's last pitfall: Keras 3 fails over replicas unless the optimizer is built first."""
    unbuilt, built = over_eight_replicas["loop_unbuilt"], over_eight_replicas["loop_built"]
    assert built == "ran", built
    if KERAS_MAJOR == 2:
        assert unbuilt == "ran", unbuilt
        return
    assert unbuilt != "ran", (
        "Upstream fixed a Keras 3 custom loop whose optimizer builds at its first step under "
        "MirroredStrategy: revise 03_custom_loop's last pitfall section, and this pin."
    )
    assert unbuilt.startswith("InvalidArgumentError"), unbuilt
    assert "You must feed a value for placeholder tensor" in unbuilt, unbuilt


def test_one_example_batch_over_several_replicas(over_eight_replicas):
    """The guide's batch(1) over 8 replicas: Keras 2 evaluates and trains, Keras 3 fails both.

    02_keras_fit shows the evaluation; 04_verify_migration's settings table the training.
    """
    outcomes = {
        "evaluate": over_eight_replicas["evaluate_one_example"],
        "fit": over_eight_replicas["fit_one_example"],
    }
    if KERAS_MAJOR == 2:
        assert outcomes == {"evaluate": "ran", "fit": "ran"}
        return
    for method, outcome in outcomes.items():
        assert outcome != "ran", (
            f"Keras now runs {method} on a batch that leaves replicas empty: update the notes "
            "in 02_keras_fit's guide section and 04's settings table, and this pin."
        )
        assert "must have the same size and shape" in outcome, outcome


def test_two_examples_over_eight_replicas_leave_six_empty(over_eight_replicas):
    """16's per-replica-batch mistake at 8 replicas (2 examples a step): Keras 2 trains with six
    replicas empty, Keras 3's `fit` refuses the step with an InvalidArgumentError."""
    outcome = over_eight_replicas["fit_two_examples"]
    if KERAS_MAJOR == 2:
        assert outcome == "ran", outcome
        return
    assert outcome.startswith("InvalidArgumentError"), (
        "Keras 3 now fits 2 examples over 8 replicas otherwise: update 16's prose (its "
        f"mistakes' section) and this pin. Outcome: {outcome}"
    )


def test_fit_with_ragged_inputs_over_several_replicas(over_eight_replicas):
    """14's Keras 3 layer takes padded ids with weights, its Keras 2 layer ragged ones: Keras 3's
    `fit` refuses a ragged input over several replicas (tf.distribute's values.py asks the
    ragged tensor for a device)."""
    outcome = over_eight_replicas["fit_ragged_ids"]
    if KERAS_MAJOR == 2:
        assert outcome == "ran", outcome
        return
    assert outcome != "ran", (
        "Keras 3 now fits ragged inputs over several replicas: 14_tpu_embeddings could give its "
        "Keras 3 layer ragged ids as it gives Keras 2's; update its prose, and this pin."
    )
    assert outcome == "AttributeError: 'RaggedTensor' object has no attribute 'device'", outcome


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


def test_steps_per_execution_and_epoch_length():
    """Keras 3 rounds each epoch up to whole executions; Keras 2 runs the steps asked for."""
    steps = run_python_json(EPOCH_ROUNDING)["steps"]
    expected = 50 if KERAS_MAJOR == 2 else 60
    assert steps == expected, json.dumps(
        {"lane": LANE, "steps": steps, "update": "02_keras_fit's rounding cell and README"}
    )


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


def test_checkpoint_restore_of_an_estimator_checkpoint_matches_by_name_only_in_keras_2():
    """04_verify_migration's restore trap: Keras 2 restores a layer named like TF1's."""
    restored = run_python_json(ESTIMATOR_CHECKPOINT_RESTORE)
    expected = {"dense": KERAS_MAJOR == 2, "linear": False}
    assert restored == expected, (
        "tf.train.Checkpoint.restore of a TF1 checkpoint changed behaviour: update the "
        "restore-trap text of 04_verify_migration and this pin."
    )


ONE_DEVICE_FACTS = """
import json, tempfile
from helpers.quiet import quiet_logs
quiet_logs()
import numpy as np
import tensorflow as tf
from helpers.summaries import read_scalars

variable = tf.Variable([1.0])  # Adagrad's epsilon: under the square root, or added to it?
tf.keras.optimizers.Adagrad(0.05, initial_accumulator_value=0.1, epsilon=1.0).apply_gradients(
    [(tf.constant([0.5]), variable)]
)
under_root = 1 - 0.05 * 0.5 / np.sqrt(0.35 + 1.0)

model = tf.keras.Sequential([tf.keras.Input(shape=(2,), name="x"), tf.keras.layers.Dense(1)])
folder = tempfile.mkdtemp()
tf.saved_model.save(model, folder)
signature = tf.saved_model.load(folder).signatures["serving_default"]

model.compile("sgd", "mse", steps_per_execution=5)
x = np.ones((80, 2), "float32")
logs = tempfile.mkdtemp()
board = tf.keras.callbacks.TensorBoard(log_dir=logs, update_freq=1)
class BatchEnds(tf.keras.callbacks.Callback):  # as in 02: a callback that needs batch hooks
    def on_train_batch_end(self, batch, logs=None):
        pass


model.fit(x, x[:, :1], batch_size=8, epochs=2, callbacks=[board, BatchEnds()], verbose=0)
batch_steps = sorted(int(step) for step in read_scalars(logs, "batch_loss"))
alone = tempfile.mkdtemp()  # the TensorBoard callback without another that needs batch hooks
board = tf.keras.callbacks.TensorBoard(log_dir=alone, update_freq=1)
model.fit(x, x[:, :1], batch_size=8, epochs=1, callbacks=[board], verbose=0)
try:
    written_alone = len(read_scalars(alone, "batch_loss"))
except LookupError:
    written_alone = 0
row = tf.Variable(np.ones((3, 2), np.float32))  # 14: a row looked up twice, gradients 1 and 2
twice = tf.IndexedSlices(
    tf.constant([[1.0, 1.0], [2.0, 2.0]]), tf.constant([0, 0]), tf.constant([3, 2])
)
optimizer = tf.keras.optimizers.Adagrad(0.1, initial_accumulator_value=0.1, epsilon=0.0)
optimizer.apply_gradients([(twice, row)])
print(json.dumps({
    "repeated_row_update": float(row.numpy()[0, 0]),
    "epsilon_under_root": bool(abs(float(variable.numpy()[0]) - under_root) < 1e-6),
    "signature_inputs": sorted(signature.structured_input_signature[1]),
    "signature_outputs": sorted(signature.structured_outputs),
    "batch_loss_steps": batch_steps,
    "batch_loss_written_by_tensorboard_alone": written_alone,
}))
"""


@pytest.fixture(scope="module")
def one_device_facts() -> dict:
    """One TensorFlow start for the pins of one device."""
    return run_python_json(ONE_DEVICE_FACTS)


def test_keras_defaults_that_02_and_04_show(one_device_facts):
    """Adagrad's epsilon, automatic SavedModel names, TensorBoard's per-execution step numbers.

    04 shows where Keras' Adagrad puts epsilon (under the square root in Keras 2.15 and 3);
    02 shows the names `tf.saved_model.save` gives a Sequential model's signature and the steps
    at which `TensorBoard(update_freq=1)` writes `batch_loss` with `steps_per_execution=5`.
    """
    facts = {k: v for k, v in one_device_facts.items() if k != "repeated_row_update"}
    keras_2 = KERAS_MAJOR == 2
    expected = {
        "epsilon_under_root": True,
        "signature_inputs": ["x"] if keras_2 else ["inputs"],
        "signature_outputs": [facts["signature_outputs"][0]] if keras_2 else ["output_0"],
        "batch_loss_steps": [5, 10, 15, 20] if keras_2 else [1, 2, 3, 4],
        "batch_loss_written_by_tensorboard_alone": 0 if keras_2 else 2,
    }
    assert facts == expected, (
        f"{LANE} lane: Keras changed a default that 02_keras_fit or 04_verify_migration shows "
        f"(got {facts}): update the notebook's cell and prose, and this pin."
    )
    if keras_2:
        assert facts["signature_outputs"][0].startswith("dense"), facts


GRAPH_PBTXT = """
import json, tempfile
from pathlib import Path
from helpers.quiet import quiet_logs
quiet_logs()
import google.protobuf
import tensorflow as tf

tf1 = tf.compat.v1
folder = tempfile.mkdtemp()
error = None
with tf1.Graph().as_default():
    step = tf1.train.get_or_create_global_step()
    advance = step.assign_add(1)
    hook = tf1.train.CheckpointSaverHook(folder, save_steps=1)  # save_graph_def=True
    try:
        with tf1.train.MonitoredSession(tf1.train.ChiefSessionCreator(), hooks=[hook]) as s:
            s.run(advance)
    except TypeError as raised:
        error = str(raised)
print(json.dumps({
    "tensorflow": tf.__version__,
    "protobuf_major": int(google.protobuf.__version__.split(".")[0]),
    "error": error,
    "graph_pbtxt_written": (Path(folder) / "graph.pbtxt").exists(),
}))
"""


def test_checkpoint_saver_hook_writes_graph_pbtxt_except_with_tensorflow_2_20_and_protobuf_7():
    """06's TF1 cell passes save_graph_def=False: TF 2.20's graph_io.write_graph passes
    `float_format`, which protobuf 7's text_format.MessageToString no longer takes."""
    report = run_python_json(GRAPH_PBTXT)
    broken = report["tensorflow"].startswith("2.20.") and report["protobuf_major"] >= 7
    if not broken:
        assert report["error"] is None and report["graph_pbtxt_written"], json.dumps(
            {"lane": LANE, **report}
        )
        return
    assert report["error"] is not None and "float_format" in report["error"], (
        f"{LANE} lane: TensorFlow {report['tensorflow']} with protobuf "
        f"{report['protobuf_major']} now writes graph.pbtxt (got {report}): remove the "
        "save_graph_def=False comment in 06_preemption's run_tf1 cell (cell 10, keep or drop "
        "the argument), and this pin."
    )


def test_keras_3_adagrad_does_not_add_the_slices_of_a_repeated_row_before_its_update(
    one_device_facts,
):
    """14 trains embedding tables: a row looked up twice in a batch gets two slices in the
    gradient. TF1 and Keras 2 add them, then update (the accumulator grows by (1 + 2)**2);
    Keras 3's Adagrad on TensorFlow squares each (1**2 + 2**2), and 14's SummedAdagrad adds
    them first. When this fails, Keras 3 adds them itself: drop SummedAdagrad from 14."""
    updated = one_device_facts["repeated_row_update"]
    summed = 1 - 0.1 * 3 / (0.1 + 3**2) ** 0.5
    separately = 1 - 0.1 * 3 / (0.1 + 1**2 + 2**2) ** 0.5
    expected = summed if KERAS_MAJOR == 2 else separately
    assert updated == pytest.approx(expected, rel=1e-6), (
        f"{LANE} lane: Keras {KERAS_MAJOR}'s Adagrad updated a repeated row to {updated}, "
        f"expected {expected}: update 14_tpu_embeddings' Adagrad section and this pin."
    )
