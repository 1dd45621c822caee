"""workbench.mapping: the matching rules on their own (no TensorFlow), then real TF1
checkpoints (the fixtures', and TF1 graphs saved here) carried into Keras models in each lane."""

from __future__ import annotations

import numpy as np
import pytest
from support import KERAS_MAJOR, ROOT

from workbench.compare import REAL
from workbench.mapping import (
    AMBIGUOUS,
    AVERAGE_LIST,
    MATCHED,
    SKIPPED,
    UNKNOWN_SLOT,
    UNMATCHED,
    MappingError,
    Target,
    match,
    tf2_targets,
)

REFERENCE = ROOT / "fixtures" / "tf1_reference" / "checkpoint" / "model.ckpt-100"
CONV = ROOT / "fixtures" / "tf1_conv" / "checkpoint" / "model.ckpt-0"


def targets(*specs: tuple[str, tuple[int, ...]]) -> list[Target]:
    return [Target(name, shape) for name, shape in specs]


def test_names_then_creation_order_then_shape():
    shapes = {
        "conv2d/kernel": [3, 3, 3, 8],
        "conv2d_1/kernel": [3, 3, 8, 8],
        "conv2d_2/kernel": [3, 3, 8, 8],
        "input_layer/color/embedding_weights": [4, 2],
        "global_step": [],
    }
    state = match(
        shapes,
        targets(
            ("m/conv2d/kernel", (3, 3, 3, 8)),
            ("m/first/kernel", (3, 3, 8, 8)),
            ("m/second/kernel", (3, 3, 8, 8)),
            ("m/embedding/embeddings", (4, 2)),
        ),
    )
    paired = {n: state.targets[i].name for n, i in state.pairs.items()}
    assert paired == {
        "conv2d/kernel": "m/conv2d/kernel",
        "conv2d_1/kernel": "m/first/kernel",  # TF1's numbering and Keras' order
        "conv2d_2/kernel": "m/second/kernel",
        "input_layer/color/embedding_weights": "m/embedding/embeddings",
    }
    assert state.how["conv2d/kernel"] == "name"
    assert state.how["conv2d_1/kernel"] == "creation order"
    assert "only one of its shape" in state.how["input_layer/color/embedding_weights"]
    assert state.status["global_step"] == SKIPPED and "optimizer" in state.how["global_step"]


def test_same_shape_layers_without_an_order_are_ambiguous():
    shapes = {"encoder/dense/kernel": [4, 4], "decoder/dense/kernel": [4, 4]}
    state = match(shapes, targets(("a/kernel", (4, 4)), ("b/kernel", (4, 4))))
    assert state.status == {n: AMBIGUOUS for n in shapes}  # alphabetical is no creation order
    assert set(state.target_status.values()) == {AMBIGUOUS}
    ruled = match(
        shapes,
        targets(("a/kernel", (4, 4)), ("b/kernel", (4, 4))),
        rules=[(r"^encoder/dense/", "a/"), (r"^decoder/dense/", "b/")],
    )
    assert {n: ruled.targets[i].name for n, i in ruled.pairs.items()} == {
        "encoder/dense/kernel": "a/kernel",
        "decoder/dense/kernel": "b/kernel",
    }


def test_keras_numbering_offset_is_not_taken_for_names():
    """A second model in one process is numbered dense_1, dense_2: TF1's dense_1 is its first."""
    shapes = {"dense/kernel": [4, 4], "dense_1/kernel": [4, 4]}
    state = match(shapes, targets(("dense_1/kernel", (4, 4)), ("dense_2/kernel", (4, 4))))
    paired = {n: state.targets[i].name for n, i in state.pairs.items()}
    assert paired == {"dense/kernel": "dense_1/kernel", "dense_1/kernel": "dense_2/kernel"}
    assert any("numbered differently" in note for note in state.notes)


def test_a_rule_to_none_leaves_out_and_an_unused_rule_is_noted():
    shapes = {"dense/kernel": [2, 1], "dense/kernel/ExponentialMovingAverage": [2, 1]}
    rules = [(r"/ExponentialMovingAverage$", None), (r"^lineer/", "dense/")]
    state = match(shapes, targets(("dense/kernel", (2, 1))), rules)
    assert state.status["dense/kernel/ExponentialMovingAverage"] == SKIPPED
    assert state.status["dense/kernel"] == MATCHED
    assert state.notes == ["rule 2 ('^lineer/') matched no TF1 name"]


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ([("^a/",)], "give each rule as (pattern, replacement)"),
        ([("(", "b/")], "is not a regular expression"),
        ([("^a/", 3)], "is not a string or None"),
    ],
)
def test_a_bad_rule_is_one_line(rules, expected):
    with pytest.raises(MappingError, match="rule 1") as caught:
        match({"a/kernel": [1]}, targets(("a/kernel", (1,))), rules)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_different_kinds_of_one_shape_are_ambiguous_until_a_rule_says():
    shapes = {"dense/bias": [16]}
    state = match(shapes, targets(("m/layer_normalization/beta", (16,))))
    assert state.status["dense/bias"] == AMBIGUOUS
    assert "bias and beta" in state.how["dense/bias"] and "add a rule" in state.how["dense/bias"]
    ruled = match(
        shapes, targets(("m/layer_normalization/beta", (16,))), [("^dense/bias$", "beta")]
    )
    assert ruled.status["dense/bias"] == MATCHED


def test_a_moving_average_is_no_slot_and_maps_by_a_rule():
    shapes = {"dense/kernel": [2, 1], "dense/kernel/ExponentialMovingAverage": [2, 1]}
    both = targets(("dense/kernel", (2, 1)), ("average/dense/kernel", (2, 1)))
    unruled = match(shapes, both, has_optimizer=True)
    assert unruled.status["dense/kernel/ExponentialMovingAverage"] == AMBIGUOUS  # not a slot
    ruled = match(shapes, both, [(r"^(.*)/ExponentialMovingAverage$", r"average/\1")])
    paired = {n: ruled.targets[i].name for n, i in ruled.pairs.items()}
    assert paired == {
        "dense/kernel": "dense/kernel",
        "dense/kernel/ExponentialMovingAverage": "average/dense/kernel",
    }


def rmsprop_targets(centered: bool) -> list[Target]:
    lists = ["_velocities", "_momentums"] + (["_average_gradients"] if centered else [])
    slots = [Target(f"rmsprop/{a}", (2,), owner=0, slot=a) for a in lists]
    return [Target("d/kernel", (2,)), *slots]


def test_rmsprop_slots_centered_or_not():
    plain = {"d/kernel": [2], "d/kernel/RMSProp": [2], "d/kernel/RMSProp_1": [2]}
    state = match(plain, rmsprop_targets(False), has_optimizer=True)
    paired = {n: state.targets[i].slot for n, i in state.pairs.items() if "/RMSProp" in n}
    assert paired == {"d/kernel/RMSProp": "_velocities", "d/kernel/RMSProp_1": "_momentums"}
    centered = {**plain, "d/kernel/RMSProp_2": [2]}  # TF1 makes rms, mg, then momentum
    state = match(centered, rmsprop_targets(True), has_optimizer=True)
    paired = {n: state.targets[i].slot for n, i in state.pairs.items() if "/RMSProp" in n}
    assert paired == {
        "d/kernel/RMSProp": "_velocities",
        "d/kernel/RMSProp_1": "_average_gradients",
        "d/kernel/RMSProp_2": "_momentums",
    }


def test_rmsprops_momentum_slot_against_keras_rmsprop_without_momentum_says_why():
    shapes = {"d/kernel": [2], "d/kernel/RMSProp": [2], "d/kernel/RMSProp_1": [2]}
    keras = [Target("d/kernel", (2,)), Target("rmsprop/v", (2,), owner=0, slot="_velocities")]
    state = match(shapes, keras, has_optimizer=True)
    assert state.status["d/kernel/RMSProp"] == MATCHED
    assert "keeps a momentum slot even at momentum 0" in state.how["d/kernel/RMSProp_1"]
    ruled = match(shapes, keras, [(r"/RMSProp_1$", None)], has_optimizer=True)
    assert ruled.status["d/kernel/RMSProp_1"] == SKIPPED


def test_an_optimizer_variable_of_no_known_list_is_an_unmatched_slot():
    state = match(
        {"d/kernel": [2]},
        [Target("d/kernel", (2,)), Target("opt/d_kernel_extra", (2,), slot=UNKNOWN_SLOT)],
        has_optimizer=True,
    )
    assert state.target_status[1] == UNMATCHED and "no slot list" in state.target_how[1]


def test_a_trained_momentum_slot_needs_the_learning_rate():
    shapes = {"d/kernel": [2], "d/kernel/Momentum": [2]}
    both = [Target("d/kernel", (2,)), Target("sgd/m", (2,), owner=0, slot="momentums")]
    state = match(shapes, both, has_optimizer=True, nonzero={"d/kernel/Momentum"})
    assert state.status["d/kernel/Momentum"] == UNMATCHED
    assert "pass learning_rate=" in state.how["d/kernel/Momentum"]
    state = match(
        shapes, both, has_optimizer=True, nonzero={"d/kernel/Momentum"}, learning_rate=0.1
    )
    assert state.status["d/kernel/Momentum"] == MATCHED
    assert state.scale == {"d/kernel/Momentum": -0.1}


def test_rules_come_first_strip_keras_2_suffixes_and_name_what_took_a_target():
    shapes = {"global_step": [], "a/kernel": [2], "b/kernel": [2]}
    rules = [("^global_step$", None), ("^a/kernel$", "x/kernel:0"), ("^b/kernel$", "x/kernel")]
    state = match(shapes, targets(("x/kernel", (2,)), ("y/kernel", (3,))), rules)
    assert state.status["global_step"] == SKIPPED and "rule 1" in state.how["global_step"]
    assert state.status["a/kernel"] == MATCHED
    assert state.how["b/kernel"].endswith("'x/kernel', already taken by a/kernel")


def test_a_slot_of_an_unmatched_variable_says_to_map_it_first():
    shapes = {"x/kernel": [3], "x/kernel/Adagrad": [3]}
    state = match(shapes, targets(("y/bias", (2,))), has_optimizer=True)
    assert state.status["x/kernel/Adagrad"] == UNMATCHED
    assert "not matched: map it first" in state.how["x/kernel/Adagrad"]


def adam_targets(*lists: str) -> list[Target]:
    return [
        Target("d/kernel", (2,)),
        *(Target(f"adam/d_kernel{a}", (2,), owner=0, slot=a) for a in lists),
    ]


def test_berts_adam_slots_map_without_rules():
    shapes = {"d/kernel": [2], "d/kernel/adam_m": [2], "d/kernel/adam_v": [2]}
    state = match(shapes, adam_targets("_momentums", "_velocities"), has_optimizer=True)
    paired = {n: state.targets[i].slot for n, i in state.pairs.items()}
    assert paired == {
        "d/kernel": "",
        "d/kernel/adam_m": "_momentums",
        "d/kernel/adam_v": "_velocities",
    }


def test_a_slot_of_an_unknown_optimizer_is_the_only_one_left_or_named_once():
    one = match(
        {"d/kernel": [2], "d/kernel/lars_m": [2]}, adam_targets("momentums"), has_optimizer=True
    )
    assert one.status["d/kernel/lars_m"] == MATCHED, one.how
    shapes = {"d/kernel": [2], "d/kernel/mine_1": [2], "d/kernel/mine_2": [2]}
    two = match(shapes, adam_targets("_momentums", "_velocities"), has_optimizer=True)
    assert two.status["d/kernel/mine_1"] == UNMATCHED
    assert "slot_lists={'mine_1': LIST} (--slot mine_1=LIST)" in two.how["d/kernel/mine_1"]
    assert "_momentums, _velocities" in two.how["d/kernel/mine_1"]
    named = {"mine_1": "_momentums", "mine_2": "_velocities"}
    ruled = match(
        shapes, adam_targets("_momentums", "_velocities"), has_optimizer=True, slot_lists=named
    )
    assert {n: ruled.targets[i].slot for n, i in ruled.pairs.items()}["d/kernel/mine_2"] == (
        "_velocities"
    )


def test_a_child_of_another_shape_is_a_variable_not_a_slot():
    shapes = {"d/kernel": [2], "d/kernel/scale": [3]}
    state = match(shapes, targets(("d/kernel", (2,)), ("d/kernel/scale", (3,))))
    assert state.status["d/kernel/scale"] == MATCHED and state.how["d/kernel/scale"] == "name"


def test_averages_go_to_the_optimizers_averages_when_it_keeps_them():
    shapes = {"d/kernel": [2], "d/kernel/ExponentialMovingAverage": [2]}
    kept = [Target("d/kernel", (2,)), Target("adam/avg", (2,), owner=0, slot=AVERAGE_LIST)]
    state = match(shapes, kept, has_optimizer=True)
    assert state.status["d/kernel/ExponentialMovingAverage"] == MATCHED
    assert state.targets[state.pairs["d/kernel/ExponentialMovingAverage"]].name == "adam/avg"


def test_keras_3_names_a_depthwise_kernel_kernel():
    shapes = {"block/dw/depthwise_kernel": [3, 3, 8, 1], "block/conv/kernel": [1, 1, 8, 1]}
    mine = targets(("dw/kernel", (3, 3, 8, 1)), ("conv/kernel", (1, 1, 8, 1)))
    state = match(shapes, mine, [(r"^block/", "")])
    assert state.status["block/dw/depthwise_kernel"] == MATCHED
    plain = match({"dw/depthwise_kernel": [3, 3, 8, 1]}, targets(("m/dw/kernel", (3, 3, 8, 1))))
    assert plain.how["dw/depthwise_kernel"] == "name, depthwise_kernel as kernel (Keras 3's name)"


def test_a_rule_that_only_an_earlier_rule_shadows_says_so():
    shapes = {"a/kernel": [2]}
    rules = [(r"^a/", "x/"), (r"^a/kernel$", "y/kernel"), (r"^zzz", None)]
    state = match(shapes, targets(("x/kernel", (2,)), ("y/kernel", (3,))), rules)
    assert state.notes[0].startswith("rule 2 ('^a/kernel$') matched only TF1 names an earlier")
    assert state.notes[1] == "rule 3 ('^zzz') matched no TF1 name"


def test_a_published_checkpoint_without_slots_and_a_new_head():
    shapes = {"bert/kernel": [2]}
    mine = [
        Target("bert/kernel", (2,)),
        Target("head/kernel", (3,)),
        Target("adam/m", (2,), owner=0, slot="_momentums"),
        Target("adam/m_head", (3,), owner=1, slot="_momentums"),
    ]
    without = match(shapes, mine, has_optimizer=True)
    assert without.target_status[1] == UNMATCHED  # a head nobody named: not silently new
    assert without.target_status[2] == SKIPPED and "published" in without.target_how[2]
    state = match(shapes, mine, has_optimizer=True, new=[r"^head/"])
    assert state.target_status[1] == SKIPPED and state.target_how[1].startswith("new (new=)")
    with pytest.raises(MappingError, match=r"new: '\(' is not a regular expression"):
        match(shapes, mine, new=["("])


# ------------------------------------------------------------------ TensorFlow, in each lane


@pytest.fixture(scope="module")
def tf():
    from helpers.quiet import quiet_logs

    quiet_logs()
    import tensorflow

    return tensorflow


def fresh(tf):
    tf.keras.backend.clear_session()  # Keras numbers layers across models: start at dense
    return tf


def dense_model(tf, *layers, use_bias=True, inputs=2):
    """A built Sequential of Dense layers, each given as (name, units), on `inputs` features."""
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(units, name=n, use_bias=use_bias) for n, units in layers]
    )
    model(tf.zeros([1, inputs]))
    return model


@pytest.mark.tensorflow
def test_reference_run_with_adagrad_slots_and_step(tf):
    from workbench import map_checkpoint, read_checkpoint

    model = dense_model(fresh(tf), ("dense", 1))
    optimizer = tf.keras.optimizers.Adagrad(0.05)
    optimizer.build(model.trainable_variables)
    mapping = map_checkpoint(REFERENCE, model, optimizer=optimizer)
    assert not mapping.problems(), mapping.report()
    assigned = mapping.assign()
    stored = read_checkpoint(REFERENCE)
    assert sorted(assigned) == sorted(stored)
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), stored["dense/kernel"])
    slot = mapping.pairs["dense/kernel/Adagrad"]
    np.testing.assert_array_equal(np.asarray(slot.numpy()), stored["dense/kernel/Adagrad"])
    assert "accumulator" in next(r.tf2 for r in mapping.rows() if r.tf1 == "dense/kernel/Adagrad")
    assert int(optimizer.iterations.numpy()) == 100
    values = mapping.tf2_values()  # every pair, slots and the step counter included
    assert set(values) == set(stored)
    for name, value in stored.items():
        np.testing.assert_array_equal(values[name], value, err_msg=name)
    weights = read_checkpoint(REFERENCE, names=mapping.weight_names())
    assert (
        set(weights)
        == set(mapping.tf2_values(weights_only=True))
        == {
            "dense/kernel",
            "dense/bias",
        }
    )


@pytest.mark.tensorflow
def test_a_dtype_mismatch_stops_assign_in_one_line(tf):
    from workbench import map_checkpoint

    fresh(tf)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, name="dense", dtype="float64")])
    model(tf.zeros([1, 2], tf.float64))
    mapping = map_checkpoint(REFERENCE, model, rules=[(r"/Adagrad$", None)])
    with pytest.raises(MappingError) as caught:
        mapping.assign()
    message = str(caught.value)
    assert "is float32, its TF2 variable" in message and "float64" in message
    assert "nothing assigned" in message and "\n" not in message


@pytest.mark.tensorflow
@pytest.mark.skipif(KERAS_MAJOR != 2, reason="Keras 2's legacy optimizers")
def test_a_legacy_keras_2_optimizer_is_refused_in_one_line(tf):
    from workbench import map_checkpoint

    model = dense_model(fresh(tf), ("dense", 1))
    legacy = tf.keras.optimizers.legacy.Adagrad(0.05)
    with pytest.raises(MappingError, match="legacy Keras 2 optimizer") as caught:
        map_checkpoint(REFERENCE, model, optimizer=legacy)
    assert "\n" not in str(caught.value)


@pytest.mark.tensorflow
def test_notebook_04s_linear_layer_is_matched_by_shape_and_said_so(tf):
    from workbench import map_checkpoint

    model = dense_model(fresh(tf), ("linear", 1))
    mapping = map_checkpoint(REFERENCE, model, rules=[(r"/Adagrad$", None)])
    rows = {r.tf1: r for r in mapping.rows() if r.tf1}
    assert rows["dense/kernel"].status == MATCHED
    assert rows["dense/kernel"].how == "the only kernel of its shape"
    assert "linear/kernel" in rows["dense/kernel"].tf2


@pytest.mark.tensorflow
def test_an_unmatched_variable_stops_assign_in_one_line_and_assigns_nothing(tf):
    from workbench import map_checkpoint

    model = dense_model(fresh(tf), ("dense", 1), ("extra", 1))
    before = [w.numpy().copy() for w in model.weights]
    mapping = map_checkpoint(REFERENCE, model)
    with pytest.raises(MappingError) as caught:
        mapping.assign()
    message = str(caught.value)
    assert "\n" not in message
    assert "unmatched TF1 dense/kernel/Adagrad" in message and "pass the built optimizer" in message
    assert "unmatched TF2 " in message and "extra/kernel" in message and "add a rule" in message
    for weight, value in zip(model.weights, before, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value)  # nothing assigned
    assigned = mapping.assign(allow_unmatched=[r".*/Adagrad", r".*extra/.*"])
    assert sorted(assigned) == ["dense/bias", "dense/kernel"]


@pytest.mark.tensorflow
def test_bad_inputs_are_one_line(tf):
    from workbench import map_checkpoint

    fresh(tf)
    unbuilt = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    built = dense_model(tf, ("dense", 1))
    cases = [
        (lambda: map_checkpoint(ROOT / "fixtures" / "nothing", built), "no TensorFlow checkpoint"),
        (lambda: map_checkpoint(CONV.parent, built), "holds several checkpoints"),
        (lambda: map_checkpoint(REFERENCE, unbuilt), "build it first"),
        (
            lambda: map_checkpoint(REFERENCE, built, optimizer=tf.keras.optimizers.Adagrad()),
            "optimizer.build(model.trainable_variables)",
        ),
    ]
    for call, expected in cases:
        with pytest.raises(MappingError) as caught:
            call()
        assert expected in str(caught.value) and "\n" not in str(caught.value)


def small_resnet(tf, shortcut_first: bool = True):
    """Notebook 10's layers in creation order (convolutions, norms, then dense), each called
    once on its input shape so that Keras names its variables within the layer."""
    conv = lambda f, s=1, k=3: tf.keras.layers.Conv2D(f, k, s, padding="same", use_bias=False)  # noqa: E731
    norm = tf.keras.layers.BatchNormalization
    stem = [(conv(8), 3), (norm(), 8)]
    block_1 = [(conv(8), 8), (norm(), 8), (conv(8), 8), (norm(), 8)]
    shortcut = [(conv(16, 2, 1), 8), (norm(), 16)]
    block_2 = [(conv(16, 2), 8), (norm(), 16), (conv(16), 16), (norm(), 16)]
    layers = stem + block_1 + (shortcut + block_2 if shortcut_first else block_2 + shortcut)
    for layer, channels in layers:
        layer(tf.zeros([1, 4, 4, channels]))
    dense = tf.keras.layers.Dense(10)
    dense(tf.zeros([1, 16]))
    return [layer for layer, _ in layers] + [dense]


@pytest.mark.tensorflow
def test_notebook_10s_checkpoint_by_creation_order_with_momentum_slots(tf):
    from workbench import map_checkpoint, read_checkpoint

    fresh(tf)
    tf.keras.layers.Conv2D(1, 1)  # a layer made before: Keras' numbers start one later
    layers = small_resnet(tf)
    variables = [w for layer in layers for w in layer.weights]
    optimizer = tf.keras.optimizers.SGD(0.1, momentum=0.9)
    optimizer.build([v for v in variables if v.trainable])
    mapping = map_checkpoint(
        CONV, variables, rules=[(r"/ExponentialMovingAverage$", None)], optimizer=optimizer
    )
    assert not mapping.problems(), mapping.report()
    report = mapping.report()
    assert "numbered differently" in report and "creation order" in report
    mapping.assign()
    stored = read_checkpoint(CONV)
    convs = [layer for layer in layers if isinstance(layer, tf.keras.layers.Conv2D)]
    for index, layer in enumerate(convs):  # notebook 10's tf1_names: conv2d, conv2d_1, ...
        name = "conv2d/kernel" if index == 0 else f"conv2d_{index}/kernel"
        np.testing.assert_array_equal(layer.kernel.numpy(), stored[name])
    momentum = [r for r in mapping.rows() if r.tf1.endswith("/Momentum")]
    assert len(momentum) == 20 and {r.status for r in momentum} == {MATCHED}
    notes = [line for line in report.splitlines() if line.startswith("note: ")]
    assert any("-learning_rate x sum" in note for note in notes)


@pytest.mark.tensorflow
def test_a_different_layer_order_of_different_shapes_still_maps(tf):
    from workbench import map_checkpoint, read_checkpoint

    layers = small_resnet(fresh(tf), shortcut_first=False)
    variables = [w for layer in layers for w in layer.weights]
    mapping = map_checkpoint(
        CONV, variables, rules=[(r"/(ExponentialMovingAverage|Momentum)$", None)]
    )
    mapping.assign()
    shortcut = next(layer for layer in layers if getattr(layer, "kernel_size", None) == (1, 1))
    np.testing.assert_array_equal(shortcut.kernel.numpy(), read_checkpoint(CONV)["conv2d_3/kernel"])


def save_tf1_graph(tf, path, build) -> str:
    """A real TF1 checkpoint: variables made by `build` in a graph, saved by tf1.train.Saver."""
    tf1 = tf.compat.v1
    with tf1.Graph().as_default():
        train_op = build(tf1)
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            if train_op is not None:
                session.run(train_op)
            return tf1.train.Saver().save(session, str(path / "model.ckpt"), global_step=1)


def two_layers(tf1):
    tf1.set_random_seed(1)  # the same initial kernels in every run: the ratio of the losses below
    x = tf1.constant([[1.0, 2.0, 3.0, 4.0]])
    for scope in ("encoder", "decoder"):
        with tf1.variable_scope(scope):
            kernel = tf1.get_variable("dense/kernel", [4, 4])  # what tf1.layers.dense makes
            x = tf1.matmul(x, kernel)
    loss = tf1.reduce_sum(x**2)
    return tf1.train.AdamOptimizer(0.1).minimize(loss, tf1.train.get_or_create_global_step())


@pytest.mark.tensorflow
def test_a_same_shape_swap_is_ambiguous_then_caught_by_the_first_loss(tf, tmp_path):
    from workbench import compare_runs, likely_causes, map_checkpoint, read_checkpoint

    checkpoint = save_tf1_graph(tf, tmp_path, two_layers)
    stored = read_checkpoint(checkpoint)
    fresh(tf)
    first, second = (
        tf.keras.layers.Dense(4, use_bias=False),
        tf.keras.layers.Dense(4, use_bias=False),
    )
    model = tf.keras.Sequential([first, second])
    model(tf.zeros([1, 4]))
    optimizer = tf.keras.optimizers.Adam(0.1)
    optimizer.build(model.trainable_variables)
    mapping = map_checkpoint(checkpoint, model, optimizer=optimizer)
    ambiguous = {r.tf1 for r in mapping.rows() if r.status == AMBIGUOUS and r.tf1}
    assert ambiguous == {"encoder/dense/kernel", "decoder/dense/kernel"}
    with pytest.raises(MappingError, match="ambiguous TF1 decoder/dense/kernel"):
        mapping.assign()
    # the reader's rules, written the wrong way round: the swap maps and assigns...
    names = [target.name for target in tf2_targets(model)]
    swapped = [(r"^encoder/dense/kernel", names[1]), (r"^decoder/dense/kernel", names[0])]
    mapping = map_checkpoint(checkpoint, model, rules=swapped, optimizer=optimizer)
    assert not mapping.problems(), mapping.report()
    rows = {r.tf1: r for r in mapping.rows() if r.tf1}
    assert rows["beta1_power"].status == SKIPPED and "iterations" in rows["beta1_power"].how
    mapping.assign()
    for tf1, index in (("encoder", 1), ("decoder", 0)):  # slots follow their variable
        m, v = stored[f"{tf1}/dense/kernel/Adam"], stored[f"{tf1}/dense/kernel/Adam_1"]
        assert not np.allclose(m, v)  # one step trained: a swap of m and v would show
        np.testing.assert_array_equal(optimizer._momentums[index].numpy(), m)
        np.testing.assert_array_equal(optimizer._velocities[index].numpy(), v)
    # ...and the first loss, before any update, catches it
    x = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    tf1_loss = float(
        np.sum((x @ stored["encoder/dense/kernel"] @ stored["decoder/dense/kernel"]) ** 2)
    )
    tf2_loss = float(np.sum(model(x).numpy() ** 2))
    comparison = compare_runs({"losses": [tf1_loss]}, {"losses": [tf2_loss]}, rtol={"losses": 1e-6})
    assert comparison.first_step == 0 and comparison.verdict()[0] == REAL
    causes = likely_causes(comparison)
    assert causes[0].name == "initial weights", (tf1_loss, tf2_loss, causes)


def one_layer(tf1, optimizer):
    x = tf1.constant([[1.0, 2.0, 3.0, 4.0]])
    kernel = tf1.get_variable("dense/kernel", [4, 2])
    loss = tf1.reduce_sum(tf1.matmul(x, kernel) ** 2)
    return optimizer.minimize(loss, tf1.train.get_or_create_global_step())


@pytest.mark.tensorflow
def test_a_trained_momentum_slot_goes_over_as_minus_lr_times_the_sum(tf, tmp_path):
    from workbench import map_checkpoint, read_checkpoint

    lr = 0.01
    checkpoint = save_tf1_graph(
        tf, tmp_path, lambda tf1: one_layer(tf1, tf1.train.MomentumOptimizer(lr, 0.9))
    )
    accum = read_checkpoint(checkpoint)["dense/kernel/Momentum"]
    assert np.any(accum != 0)  # one step trained: the sum of one gradient
    model = dense_model(fresh(tf), ("dense", 2), use_bias=False, inputs=4)
    optimizer = tf.keras.optimizers.SGD(lr, momentum=0.9)
    optimizer.build(model.trainable_variables)
    unscaled = map_checkpoint(checkpoint, model, optimizer=optimizer)
    tf1_row, tf2_row = unscaled.problems()  # the TF1 slot, and the Keras slot left empty
    assert tf1_row.tf1 == "dense/kernel/Momentum" and "pass learning_rate=" in tf1_row.how
    assert tf2_row.status == UNMATCHED and not tf2_row.tf1
    mapping = map_checkpoint(checkpoint, model, optimizer=optimizer, learning_rate=lr)
    assert not mapping.problems(), mapping.report()
    mapping.assign()
    slot = optimizer.momentums[0].numpy()
    np.testing.assert_allclose(slot, -lr * accum, rtol=1e-6)  # Keras keeps m = 0.9 m - lr g
    assert np.all(np.sign(slot) == -np.sign(accum))


@pytest.mark.tensorflow
def test_centered_rmsprop_slots_go_to_their_keras_lists(tf, tmp_path):
    from workbench import map_checkpoint, read_checkpoint

    make = lambda tf1: one_layer(tf1, tf1.train.RMSPropOptimizer(0.01, momentum=0.9, centered=True))  # noqa: E731
    checkpoint = save_tf1_graph(tf, tmp_path, make)
    stored = read_checkpoint(checkpoint)
    model = dense_model(fresh(tf), ("dense", 2), use_bias=False, inputs=4)
    optimizer = tf.keras.optimizers.RMSprop(0.01, momentum=0.9, centered=True)
    optimizer.build(model.trainable_variables)
    mapping = map_checkpoint(checkpoint, model, optimizer=optimizer)
    assert not mapping.problems(), mapping.report()
    mapping.assign()
    lists = {"RMSProp": "_velocities", "RMSProp_1": "_average_gradients", "RMSProp_2": "_momentums"}
    for slot, attribute in lists.items():
        value = stored[f"dense/kernel/{slot}"]
        keras = getattr(optimizer, attribute)[0]
        np.testing.assert_array_equal(keras.numpy(), value)
    assert len({stored[f"dense/kernel/{s}"].tobytes() for s in lists}) == 3  # all differ


def bert_style(tf1):
    """BERT's weight-decay Adam writes its slots by hand (`adam_m`, `adam_v`), and the model
    keeps an ExponentialMovingAverage of its weights."""
    tf1.set_random_seed(3)
    with tf1.variable_scope("classifier"):
        kernel = tf1.get_variable("dense/kernel", [4, 3])
        bias = tf1.get_variable("dense/bias", [3], initializer=tf1.ones_initializer())
    for variable in (kernel, bias):
        for slot in ("adam_m", "adam_v"):
            name = f"{variable.op.name}/{slot}"
            tf1.get_variable(name, variable.shape, initializer=tf1.random_uniform_initializer())
    tf1.train.get_or_create_global_step()
    average = tf1.train.ExponentialMovingAverage(0.99)
    return average.apply([kernel, bias])


@pytest.mark.tensorflow
def test_berts_slots_and_the_averages_map_with_no_rule_in_each_keras(tf, tmp_path):
    from workbench import map_checkpoint, read_checkpoint

    checkpoint = save_tf1_graph(tf, tmp_path, bert_style)
    stored = read_checkpoint(checkpoint)
    fresh(tf)
    dense = tf.keras.layers.Dense(3, name="dense")
    model = tf.keras.Sequential([dense])
    model(tf.zeros([1, 4]))
    optimizer = tf.keras.optimizers.AdamW(1e-3, use_ema=True)
    optimizer.build(model.trainable_variables)
    mapping = map_checkpoint(checkpoint, model, optimizer=optimizer)
    assert not mapping.problems(), mapping.report()
    mapping.assign()
    index = 0 if optimizer._momentums[0].shape == (4, 3) else 1
    np.testing.assert_array_equal(
        optimizer._momentums[index].numpy(), stored["classifier/dense/kernel/adam_m"]
    )
    np.testing.assert_array_equal(
        optimizer._velocities[index].numpy(), stored["classifier/dense/kernel/adam_v"]
    )
    average = stored["classifier/dense/kernel/ExponentialMovingAverage"]
    kept = optimizer._model_variables_moving_average[index].numpy()
    np.testing.assert_array_equal(kept, average)


def attention_kernels(tf1):
    """Two same-shape sibling layers of one parent, as attention's query and key."""
    tf1.set_random_seed(5)
    x = tf1.constant([[1.0, -2.0, 0.5, 3.0]])
    with tf1.variable_scope("attention"):
        query = tf1.get_variable("query/kernel", [4, 4])
        key = tf1.get_variable("key/kernel", [4, 4])
    tf1.reduce_sum(tf1.matmul(x, query) * tf1.tanh(tf1.matmul(x, key)))
    return None


@pytest.mark.tensorflow
def test_sibling_layers_of_one_parent_are_exchanged_too(tf, tmp_path):
    from workbench import SWAPPED, check_swaps, map_checkpoint

    checkpoint = save_tf1_graph(tf, tmp_path, attention_kernels)
    fresh(tf)
    query = tf.keras.layers.Dense(4, use_bias=False, name="query")
    key = tf.keras.layers.Dense(4, use_bias=False, name="key")
    x = tf.constant([[1.0, -2.0, 0.5, 3.0]])
    query(x), key(x)
    variables = {"attention/query/kernel": query.kernel, "attention/key/kernel": key.kernel}
    rules = [(r"^attention/query/", "attention/key/"), (r"^attention/key/", "attention/query/")]
    mapping = map_checkpoint(checkpoint, variables, rules=rules)
    assert [a.description for a in mapping.alternatives()] == ["attention/key <-> attention/query"]
    tf1_query, tf1_key = (read(checkpoint, f"attention/{n}/kernel") for n in ("query", "key"))
    tf1_loss = float(np.sum((x.numpy() @ tf1_query) * np.tanh(x.numpy() @ tf1_key)))
    check = check_swaps(mapping, lambda: float(tf.reduce_sum(query(x) * tf.tanh(key(x)))), tf1_loss)
    assert check.verdict == SWAPPED, check.summary()


def read(checkpoint, name):
    from workbench import read_checkpoint

    return read_checkpoint(checkpoint, [name])[name]


@pytest.mark.tensorflow
def test_where_the_first_loss_cannot_tell_the_first_update_does(tf, tmp_path):
    """Kernels drawn as small as BERT's make every order's first loss equal within its bound;
    each kernel's first update still says which is which."""
    from workbench import CONFIRMED, SWAPPED, UNDECIDED_ORDER, check_swaps, map_checkpoint

    x, y = (
        np.array([[1.0, -2.0, 0.5, 3.0]], "float32"),
        np.array([[2.0, 1.0, -1.0, 0.5]], "float32"),
    )
    tf1 = tf.compat.v1
    with tf1.Graph().as_default(), tf1.Session() as session:
        tf1.set_random_seed(9)
        small = tf1.random_normal_initializer(stddev=3e-4)
        query = tf1.get_variable("attention/query/kernel", [4, 4], initializer=small)
        key = tf1.get_variable("attention/key/kernel", [4, 4], initializer=small)
        loss = tf1.reduce_sum(tf1.matmul(x, query) * tf1.matmul(y, key))
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
        session.run(tf1.global_variables_initializer())
        checkpoint = tf1.train.Saver().save(session, str(tmp_path / "model.ckpt"), global_step=0)
        tf1_loss = float(session.run(loss))
        session.run(train)
        after = {"attention/query/kernel": query.eval(), "attention/key/kernel": key.eval()}
    fresh(tf)
    layers = {n: tf.keras.layers.Dense(4, use_bias=False, name=n) for n in ("query", "key")}
    layers["query"](x), layers["key"](y)
    variables = {f"attention/{n}/kernel": layer.kernel for n, layer in layers.items()}

    def first_loss():
        return float(tf.reduce_sum(layers["query"](x) * layers["key"](y)))

    def first_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layers["query"](x) * layers["key"](y))
        kernels = [layers["query"].kernel, layers["key"].kernel]
        for kernel, gradient in zip(kernels, tape.gradient(loss, kernels), strict=True):
            kernel.assign_sub(0.1 * gradient)

    swapped = [(r"/query/", "/key/"), (r"/key/", "/query/")]
    for rules, verdict in (((), CONFIRMED), (swapped, SWAPPED)):
        mapping = map_checkpoint(checkpoint, variables, rules=rules)
        by_loss = check_swaps(mapping, first_loss, tf1_loss)
        assert by_loss.verdict == UNDECIDED_ORDER, by_loss.summary()
        mapping = map_checkpoint(checkpoint, variables, rules=rules)
        by_update = check_swaps(
            mapping, first_loss, tf1_loss, first_step=first_step, after_first_step=after
        )
        assert by_update.verdict == verdict, by_update.summary()
        assert "first update off by" in by_update.summary()


def adamax_style(tf1):
    tf1.get_variable("dense/kernel", [2, 3])
    for slot in ("foo_m", "foo_u"):
        tf1.get_variable(f"dense/kernel/{slot}", [2, 3], initializer=tf1.ones_initializer())
    return None


@pytest.mark.tensorflow
def test_slot_lists_name_an_optimizers_own_lists(tf, tmp_path):
    """Adamax keeps `_m` and `_u`, lists no table of the workbench's names."""
    from workbench import map_checkpoint

    checkpoint = save_tf1_graph(tf, tmp_path, adamax_style)
    fresh(tf)
    model = dense_model(tf, ("dense", 3), use_bias=False)
    optimizer = tf.keras.optimizers.Adamax()
    optimizer.build(model.trainable_variables)
    unnamed = map_checkpoint(checkpoint, model, optimizer=optimizer)
    assert unnamed.problems(), unnamed.report()
    named = map_checkpoint(
        checkpoint, model, optimizer=optimizer, slot_lists={"foo_m": "_m", "foo_u": "_u"}
    )
    assert not named.problems(), named.report()
