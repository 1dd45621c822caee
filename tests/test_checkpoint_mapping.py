"""helpers.checkpoint_mapping: refusing bad mappings, reporting what stays behind, assigning."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

from helpers import checkpoint_mapping, fixtures
from helpers.checkpoint_mapping import CheckpointMappingError, check_mapping
from helpers.errors import FriendlyError

CHECKPOINT = {
    "dense/kernel": np.array([[0.3], [-0.2]], np.float32),
    "dense/bias": np.array([0.1], np.float32),
    "dense/kernel/Adagrad": np.array([[0.6], [2.2]], np.float32),
    "dense/bias/Adagrad": np.array([0.7], np.float32),
    "global_step": np.array(100, np.int64),
}


class FakeReader:
    """What `tf.train.load_checkpoint` returns, for a dictionary of arrays."""

    def __init__(self, tensors):
        self.tensors = tensors

    def get_variable_to_shape_map(self):
        return {name: list(value.shape) for name, value in self.tensors.items()}

    def get_variable_to_dtype_map(self):
        return {name: value.dtype for name, value in self.tensors.items()}

    def get_tensor(self, name):
        return self.tensors[name]


class FakeVariable:
    def __init__(self, path, shape, dtype="float32"):
        self.path, self.shape, self.dtype = path, shape, dtype
        self.value = None

    def assign(self, value):
        self.value = np.array(value)


@pytest.fixture
def reader():
    return FakeReader(CHECKPOINT)


@pytest.fixture
def model():
    return types.SimpleNamespace(
        kernel=FakeVariable("regression/dense/kernel", (2, 1)),
        bias=FakeVariable("regression/dense/bias", (1,)),
    )


def test_a_complete_mapping_passes_and_reports_what_stays_in_the_checkpoint(reader, model):
    mapping = {"dense/kernel": model.kernel, "dense/bias": model.bias}
    report = check_mapping(reader, mapping, required=[model.kernel, model.bias])
    assert [name for name, _, _ in report.carried] == ["dense/kernel", "dense/bias"]
    assert [name for name, _, _ in report.left_behind] == [
        "dense/bias/Adagrad",
        "dense/kernel/Adagrad",
        "global_step",
    ]
    assert str(report) == (
        "Carried over: 2 of 5 checkpoint variables\n"
        "checkpoint name  shape   TF2 variable\n"
        "dense/kernel     (2, 1)  regression/dense/kernel\n"
        "dense/bias       (1,)    regression/dense/bias\n"
        "Not carried over: dense/bias/Adagrad (1,) float32, dense/kernel/Adagrad (2, 1) "
        "float32, global_step () int64"
    )
    assert model.kernel.value is None, "check_mapping assigns nothing"


def test_every_problem_is_listed_at_once_and_nothing_is_assigned(reader, model):
    extra = FakeVariable("regression/extra", (3,))
    step = FakeVariable("optimizer/iteration", (), dtype="int32")
    mapping = {"dense/kernal": model.kernel, "global_step": step, "dense/bias/Adagrad": extra}
    with pytest.raises(CheckpointMappingError) as raised:
        checkpoint_mapping.assign_from_checkpoint(
            reader, mapping, required=[model.kernel, model.bias]
        )
    error = raised.value
    assert isinstance(error, ValueError) and isinstance(error, FriendlyError)
    assert str(error) == (
        "The mapping does not fit the checkpoint and the model (4 problem(s)); nothing was "
        "assigned:\n"
        "checkpoint name     TF2 variable             problem\n"
        "dense/kernal        regression/dense/kernel  not in the checkpoint; closest: "
        "dense/kernel, dense/kernel/Adagrad\n"
        "global_step         optimizer/iteration      dtype int64 in the checkpoint, int32 in "
        "the model\n"
        "dense/bias/Adagrad  regression/extra         shape (1,) in the checkpoint, (3,) in "
        "the model\n"
        "(none)              regression/dense/bias    model variable left unmapped\n"
        "Checkpoint variables: dense/bias (1,), dense/bias/Adagrad (1,), dense/kernel (2, 1), "
        "dense/kernel/Adagrad (2, 1), global_step ()"
    )
    assert model.kernel.value is None and extra.value is None and step.value is None


def test_one_variable_mapped_twice_is_refused(reader, model):
    mapping = {"dense/bias": model.bias, "dense/bias/Adagrad": model.bias}
    with pytest.raises(CheckpointMappingError, match="also the target of dense/bias"):
        check_mapping(reader, mapping)


def test_a_name_with_nothing_close_gets_no_suggestion(reader, model):
    with pytest.raises(CheckpointMappingError) as raised:
        check_mapping(reader, {"encoder/layer_0/weights": model.kernel})
    assert "encoder/layer_0/weights  regression/dense/kernel  not in the checkpoint\n" in str(
        raised.value
    )


def test_assign_from_checkpoint_assigns_every_mapped_tensor(reader, model):
    step = FakeVariable("optimizer/iteration", (), dtype=np.dtype("int64"))
    mapping = {"dense/kernel": model.kernel, "dense/bias": model.bias, "global_step": step}
    report = checkpoint_mapping.assign_from_checkpoint(reader, mapping)
    assert np.array_equal(model.kernel.value, CHECKPOINT["dense/kernel"])
    assert np.array_equal(model.bias.value, CHECKPOINT["dense/bias"])
    assert int(step.value) == 100
    assert len(report.carried) == 3


def test_variable_names_are_readable_in_both_keras_versions():
    keras3 = types.SimpleNamespace(path="regression/dense/kernel", name="kernel")
    keras2 = types.SimpleNamespace(name="dense/kernel:0")
    assert checkpoint_mapping.variable_name(keras3) == "regression/dense/kernel"
    assert checkpoint_mapping.variable_name(keras2) == "dense/kernel"


def test_accumulators_of_an_unbuilt_optimizer_are_refused():
    optimizer = types.SimpleNamespace(_accumulators=[])
    with pytest.raises(CheckpointMappingError, match=r"call optimizer.build"):
        checkpoint_mapping.adagrad_accumulator(optimizer, object())


def test_the_tf1_fixture_checkpoint_restores_into_a_keras_model_with_its_slots():
    """The real thing, in this lane's Keras: weights, accumulators and the step counter."""
    from helpers.quiet import quiet_logs

    quiet_logs()
    import tensorflow as tf

    fixture = fixtures.fixture_dir("tf1_reference")
    run = json.loads((fixture / "tf1_run.json").read_text())
    checkpoint = str(fixture / run["checkpoint"])
    model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.Adagrad(0.05, epsilon=0.0)
    optimizer.build(model.trainable_variables)
    dense = model.layers[0]
    mapping = {
        "dense/kernel": dense.kernel,
        "dense/bias": dense.bias,
        "dense/kernel/Adagrad": checkpoint_mapping.adagrad_accumulator(optimizer, dense.kernel),
        "dense/bias/Adagrad": checkpoint_mapping.adagrad_accumulator(optimizer, dense.bias),
        "global_step": optimizer.iterations,
    }
    report = checkpoint_mapping.assign_from_checkpoint(checkpoint, mapping, model.weights)
    assert report.left_behind == ()
    reader = tf.train.load_checkpoint(checkpoint)
    for name, variable in mapping.items():
        assert np.array_equal(np.asarray(variable.numpy()), reader.get_tensor(name)), name
    assert np.array_equal(dense.kernel.numpy(), np.array(run["weights"]["dense/kernel"], "f4"))
    assert int(optimizer.iterations.numpy()) == run["steps"]

    with pytest.raises(CheckpointMappingError, match="model variable left unmapped"):
        check_mapping(checkpoint, {"dense/kernel": dense.kernel}, required=model.weights)
