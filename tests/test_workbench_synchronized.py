"""workbench.compare_synchronized on the stored toy baseline (fixtures/workbench_toy), in
each lane: the faithful port passes every step; a wrong rate parts at step 0, a schedule that
differs from step 1 on parts at step 1 and not before; bad requests are one line."""

from __future__ import annotations

import numpy as np
import pytest
import workbench_toy as toy
from support import LANE, ROOT

from workbench import (
    SynchronizedError,
    compare_synchronized,
    load_baseline,
    map_checkpoint,
    one_step_bound,
)

pytestmark = pytest.mark.tensorflow
STORED = ROOT / "fixtures" / "workbench_toy"


def port(
    schedule, baseline=None, optimizer=None, scale=1.0, stages=False, gradients=False,
    bias_scale=1.0, apply=False, quiet=False, between=None,
):  # fmt: skip
    """The toy's TF2 port (SGD on this schedule unless `optimizer` is given), mapped with its
    optimizer's step counter; with `stages`, its step returns the loss and gradient norm and
    the rate is read before each step; with `gradients`, it returns each variable's gradient
    (without the norm unless `stages`); `bias_scale` scales the logits' bias gradient alone,
    a mistake of the backward pass; with `apply`, the optimizer's apply_gradients is given
    for the update from TF1's own gradients; with `quiet`, the step returns nothing; `between`:
    a layer after the hidden one."""
    import tensorflow as tf

    tf.keras.backend.clear_session()
    model = toy.build_model(between)
    optimizer = optimizer or tf.keras.optimizers.SGD(schedule)
    optimizer.build(model.trainable_variables)
    baseline = baseline or load_baseline(STORED)
    mapping = map_checkpoint(baseline.checkpoint, model, optimizer=optimizer)
    assert not mapping.problems(), mapping.report()
    loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)

    def train_step(features, labels):
        with tf.GradientTape() as tape:
            loss = scale * loss_fn(labels, model(features["x"], training=True))
        found = tape.gradient(loss, model.trainable_variables)
        found[-1] = found[-1] * bias_scale  # the logits' bias, the last variable
        pairs = list(zip(found, model.trainable_variables, strict=True))
        optimizer.apply_gradients(pairs)
        if quiet:
            return None
        returned = {"loss": float(loss), "gradients": pairs} if gradients else {}
        if stages or not gradients:
            returned["loss"] = float(loss)
            returned["gradient_norm"] = float(tf.linalg.global_norm(found))
        return returned

    def rate():
        return float(schedule(optimizer.iterations)) if callable(schedule) else schedule

    extra = {"rate": rate} if stages else {}
    if apply:
        extra["apply_gradients"] = optimizer.apply_gradients
    return (baseline, mapping, train_step), extra


def synchronized(schedule, **options):
    arguments, extra = port(schedule, **options)
    return compare_synchronized(*arguments, **extra)


def decay(rate=toy.RATE, staircase=False):
    import tensorflow as tf

    return tf.keras.optimizers.schedules.ExponentialDecay(
        rate, toy.DECAY_STEPS, toy.DECAY, staircase=staircase
    )


def test_the_faithful_port_passes_every_step():
    result = synchronized(decay())
    assert result.passed and result.steps == 4, result.summary()
    assert result.summary().startswith("synchronized: every one of 4 steps")


def test_a_wrong_rate_parts_at_step_0_in_the_weights():
    result = synchronized(decay(0.12))
    assert result.first_step == 0, result.summary()
    assert {part.kind for part in result.parts[0]} == {"weight"}
    assert set(result.layers(0)) == {"hidden", "logits"}


def test_a_schedule_that_differs_from_step_1_parts_there_and_not_before():
    """TF1 decays continuously (0.1, 0.0707, ...); a staircase keeps 0.1 for two steps."""
    result = synchronized(decay(staircase=True))
    assert result.first_step == 1, result.summary()
    assert "step 1 parts" in result.summary()


def test_the_bound_of_one_step():
    before, after = np.array([1.0, 0.0, -2.0]), np.array([1.5, 0.0, -2.0])
    bound = one_step_bound(before, after)
    np.testing.assert_allclose(bound, 8 * 2.0**-23 * np.abs(after) + 1e-3 * 0.5)


@pytest.mark.parametrize(
    ("steps", "expected"), [(0, "steps=0"), (9, "steps=9: the baseline holds TF1's state")]
)
def test_bad_requests_are_one_line(steps, expected):
    with pytest.raises(SynchronizedError, match=expected) as raised:
        compare_synchronized(*port(decay())[0], steps=steps)
    assert "\n" not in str(raised.value)


def test_the_stages_name_the_cause_and_only_what_the_evidence_supports():
    faithful = synchronized(decay(), stages=True)
    assert faithful.passed and faithful.causes() == []
    wrong_rate = synchronized(decay(0.12), stages=True)
    (cause, why), *others = wrong_rate.causes()
    assert cause == "the learning-rate schedule" and "at step 0 the rate is 0.12" in why
    assert not [c for c, _ in others if "forward" in c]
    doubled = synchronized(decay(), stages=True, scale=2.0)  # a loss twice TF1's
    assert doubled.first_step == 0
    assert doubled.causes()[0][0].startswith(  # a whole factor: the reduction, by name
        "the loss's reduction: TF2's loss is 2 times TF1's (a sum where TF1 takes the mean over "
        "the batch of 8"
    ), doubled.summary()
    off = synchronized(decay(), stages=True, scale=1.3)  # no whole factor: the forward pass
    assert off.causes()[0][0] == (
        "the forward pass: a layer's arithmetic or setting, or the loss or its reduction"
    ), off.summary()  # the toy has no dropout, batch norm or layer norm: none is offered
    without_rate = synchronized(decay(0.12))
    assert "the rate (pass rate= to compare it)" in without_rate.causes()[0][0]
    assert "epsilon" not in without_rate.causes()[0][0]  # SGD has no slots, so no epsilon


@pytest.mark.skipif(LANE != "reference", reason="recording needs TPUEstimator (reference lane)")
def test_keras_adams_epsilon_parts_every_weight_while_the_slots_match(tmp_path):
    """TF1's AdamOptimizer takes epsilon 1e-8, Keras' Adam 1e-7 by default."""
    import tensorflow as tf

    from workbench import record_baseline

    baseline = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "adam", batch_size=8,
                               steps=3, params={"optimizer": "adam"})  # fmt: skip
    for epsilon, passed in ((1e-8, True), (1e-7, False)):
        adam = tf.keras.optimizers.Adam(decay(), epsilon=epsilon)
        result = synchronized(decay(), baseline=baseline, optimizer=adam, stages=True)
        assert result.passed == passed, result.summary()
    assert result.first_step == 0 and {p.kind for p in result.parts[0]} == {"weight"}
    (cause, why), *_ = result.causes()
    assert cause.startswith("the update from matching slots") and "epsilon" in cause
    assert "rate, loss, gradient_norm match" in why
    # TF1's own gradients through Keras' Adam part as well: the optimizer's side, by evidence
    adam = tf.keras.optimizers.Adam(decay(), epsilon=1e-7)
    applied = synchronized(decay(), baseline=baseline, optimizer=adam, stages=True, apply=True)
    assert applied.update_parts[0] and {p.kind for p in applied.update_parts[0]} == {"weight"}
    (cause, why), *_ = applied.causes()
    assert cause.startswith("the update: the optimizer's rule or settings (its epsilon, betas")


def a_result(parts, kinds_compared, stages=(), **graph):
    """A Synchronized as compare_synchronized fills it, for the causes' logic alone: `parts`
    maps a step to the (name, kind) that part there."""
    from workbench.synchronized import Part, Stage, Synchronized

    result = Synchronized(8, **graph)
    for step, parted in parts.items():
        result.parts[step] = [Part(name, kind, 1e-3, 1e-5) for name, kind in parted]
        result.compared[step] = dict(kinds_compared)
        result.stages[step] = [Stage(name, 0.5, 0.5 if same else 0.7, not same)
                               for name, same in stages]  # fmt: skip
    return result


MATCHING = (("rate", True), ("loss", True), ("gradient_norm", True))
ADAM_SLOTS = [("dense/kernel/Adam", "slot"), ("dense/kernel/Adam_1", "slot")]


def test_a_clip_is_named_where_the_slots_part_at_the_steps_the_clip_acted():
    clipped = {"clip_acted": [0, 1, 3], "clip_norm": 0.4}
    per_replica = a_result({s: ADAM_SLOTS for s in (0, 1, 3)}, {"slot": 2}, MATCHING, **clipped)
    (cause, why), (second, _) = per_replica.causes()
    assert cause.startswith("the clip: each replica clipping by its own norm")
    assert "every step that parts (0, 1, 3) is one where TF1's clip acted (0, 1, 3)" in why
    assert second.startswith("the slots' update")
    # Adam's epsilon: the weights part, the slots (made of the applied gradients) match, so
    # the clip comes last: only a sign flip that the slots do not show would leave it
    epsilon = a_result({0: [("dense/kernel", "weight")]}, {"slot": 2, "weight": 2}, MATCHING,
                       **clipped)  # fmt: skip
    causes = [c for c, _ in epsilon.causes()]
    assert "the optimizer's epsilon" in causes[0] and causes[-1].startswith("the clip")
    # SGD has no slots: weights that part at steps where the clip did and did not act
    sgd = a_result({1: [("dense/kernel", "weight")], 2: [("dense/kernel", "weight")]},
                   {"weight": 2}, MATCHING, **clipped)  # fmt: skip
    (first, _), *_, (last, why) = sgd.causes()
    assert first.startswith("the update (1 of 2 weights part)") and "clip" not in first
    assert last.startswith("the clip") and why.endswith("TF1's clip acted at step 1")
    # a step where TF1's clip did not act: a clip only TF2 applies, last
    elsewhere = a_result({2: ADAM_SLOTS}, {"slot": 2}, MATCHING, **clipped)
    (first, _), (last, why) = elsewhere.causes()
    assert first.startswith("the slots' update")
    assert last.startswith("a clip TF2 applies where TF1's did not act: a clip_norm below 0.4")
    assert "TF1's clip did not act at step 2" in why
    # no clip in TF1's graph: a clip of TF2's own (Keras' clipnorm), last
    unclipped = a_result({0: ADAM_SLOTS}, {"slot": 2}, MATCHING)
    assert unclipped.causes()[-1][0].startswith("a clip TF2 applies and TF1 does not")
    # Keras SGD against TF1's Momentum: its slots part by construction, no clip is offered
    momentum = a_result({0: [("dense/kernel/Momentum", "slot")]}, {"slot": 1}, MATCHING,
                        **clipped)  # fmt: skip
    assert not [c for c, _ in momentum.causes() if "clip" in c]
    assert momentum.causes()[0][0].startswith("TF1's Momentum slot holds a sum")


@pytest.mark.parametrize(
    ("graph", "named", "not_named"),
    [
        ({}, [], ["dropout", "batch norm", "layer norm"]),
        ({"random_ops": 1}, ["dropout's masks or another random draw (1 random op(s)"],
         ["batch norm", "layer norm"]),
        ({"batch_norm": True, "layer_norm": True}, ["batch norm per replica", "layer norm's"],
         ["dropout"]),
    ],
)  # fmt: skip
def test_the_forward_pass_names_only_what_the_graph_has(graph, named, not_named):
    stages = (("rate", True), ("loss", False))
    result = a_result({0: [("dense/kernel", "weight")]}, {"weight": 1}, stages, **graph)
    (cause, why), *_ = result.causes()
    assert cause.startswith("the forward pass") and "the loss is 0.7, TF1's 0.5" in why
    assert all(part in cause for part in named) and not [p for p in not_named if p in cause]


def test_a_step_where_only_the_loss_parts_says_so():
    """A summed loss under a clip by the global norm and Adam: the same update from a loss 16
    times TF1's, so no variable parts; the loss stage still does."""
    from workbench.synchronized import Stage, Synchronized

    result = Synchronized(8, batch_size=16)
    result.parts[0], result.compared[0] = [], {"weight": 4, "slot": 8}
    result.stages[0] = [Stage("loss", 0.646, 0.646 * 16, True)]
    summary = result.summary()
    assert "step 0 parts (started from model.ckpt-0): stages only" in summary
    assert "no variable parts at this step, only the stages below" in summary
    assert "TF2's loss is 16 times TF1's" in result.causes()[0][0]
    assert "over the batch of 16" in result.causes()[0][0]
    assert result.causes()[1][0].startswith("the forward pass")  # still listed, second
    near = Synchronized(8)
    near.parts[0], near.stages[0] = [], [Stage("loss", 1.0, 2.0019, True)]
    assert near.causes()[0][0].startswith("the forward pass")  # 2.0019 is no whole factor


def test_a_slot_that_parts_is_grouped_with_its_variables_layer():
    result = a_result({0: [("hidden/kernel", "weight"), *[(f"hidden/{n}", "slot") for n in (
        "kernel/Adam", "bias/Adam_1")], ("global_step", "step")]}, {"slot": 2})  # fmt: skip
    assert result.layers(0) == {
        "hidden": ["kernel", "kernel/Adam", "bias/Adam_1"],
        "global_step": ["global_step"],
    }


def test_a_baseline_without_gradients_compares_the_rest():
    """The stored toy baseline predates the gradients: a port that returns them is compared
    as before, and the summary says nothing of gradients."""
    baseline = load_baseline(STORED)
    result = synchronized(decay(), baseline=baseline, gradients=True)
    assert result.passed and not result.gradients_compared, result.summary()
    assert baseline.gradients is None and baseline.gradient(0) is None
    assert "gradients: not compared: the baseline holds none" in result.summary()
    assert "gradients of the loss: not recorded (a baseline of an older" in baseline.summary()


@pytest.mark.skipif(LANE != "reference", reason="recording needs TPUEstimator (reference lane)")
def test_every_variables_gradient_is_compared_and_a_backward_mistake_names_its_variable(
    tmp_path,
):
    """The baseline records the loss's gradient of each trainable variable at its state
    steps. The faithful port's gradients match at every step; one whose logits' bias takes
    half its gradient parts at step 0 in that gradient alone: with the loss matching and no
    norm returned, the first stage is the gradients and the cause the backward pass there."""
    from workbench import record_baseline

    baseline = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "sgd", batch_size=8,
                               steps=3)  # fmt: skip
    names = {"hidden/kernel", "hidden/bias", "logits/kernel", "logits/bias"}
    assert set(baseline.gradient(0)) == names and baseline.gradient(3) is None
    faithful = synchronized(decay(), baseline=baseline, gradients=True, stages=True)
    assert faithful.passed and faithful.gradients_compared == {0: 4, 1: 4, 2: 4}
    assert "matches TF1's next state and gradients within" in faithful.summary()
    halved = synchronized(decay(), baseline=baseline, gradients=True, bias_scale=0.5)
    assert halved.first_step == 0 and halved.first_stage(0) == "gradients", halved.summary()
    assert halved.layers(0, gradients=True) == {"logits": ["bias"]}
    (cause, why), *_ = halved.causes()
    assert cause.startswith("the backward pass of these variables")
    assert why.endswith("the gradients of 1 of 4 variables part: logits: bias")
    assert "gradients: 1 of 4 variables part: logits/bias" in halved.summary()
    with_norm = synchronized(decay(), baseline=baseline, gradients=True, bias_scale=0.5,
                             stages=True)  # fmt: skip
    assert with_norm.first_stage(0) == "gradient_norm"  # the norm comes first in the step
    (cause, why), *_ = with_norm.causes()
    assert cause.startswith("the gradients:") and why.endswith("part: logits: bias")


def test_the_gradient_stage_orders_the_causes():
    """Gradients that part with the loss matching name the backward pass first, never the
    optimizer; gradients that all match add that observation to the optimizer's cause."""
    from workbench.synchronized import Part

    backward = a_result({0: [("hidden/kernel", "weight")]}, {"weight": 2}, MATCHING[:2])
    backward.gradient_parts[0] = [Part("hidden/kernel", "gradient", 1e-2, 1e-5)]
    backward.gradients_compared[0] = 2
    causes = [cause for cause, _ in backward.causes()]
    assert causes[0].startswith("the backward pass") and not any("epsilon" in c for c in causes)
    assert backward.first_stage(0) == "gradients"
    update = a_result({0: [("hidden/kernel", "weight")]}, {"weight": 2, "slot": 2}, MATCHING)
    update.gradients_compared[0] = 2
    (cause, why), *_ = update.causes()
    assert "the optimizer's epsilon" in cause and "the gradients of all 2 variables" in why
    assert update.first_stage(0) == "update (weight)"


def test_a_sparse_gradient_is_compared_dense():
    """A `tf.IndexedSlices` gradient (an embedding's) sums its rows per index, as the
    baseline's TF1 gradient was recorded."""
    import tensorflow as tf

    from workbench.synchronized import _dense

    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([1, 1]),
                              tf.constant([3, 2]))  # fmt: skip
    np.testing.assert_array_equal(_dense(slices), [[0, 0], [4, 6], [0, 0]])


@pytest.mark.skipif(LANE != "reference", reason="recording needs TPUEstimator (reference lane)")
def test_gradients_of_another_loss_than_the_specs_are_not_kept(tmp_path):
    """A train_op that minimizes the loss plus a penalty the EstimatorSpec's loss leaves out:
    the recorded gradients would not be the ones TF1 applied, and their norm is not the
    clip's, so none are kept and the baseline says why."""
    from workbench import record_baseline

    baseline = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "l2", batch_size=8,
                               steps=2, params={"l2": 0.5, "clip": 10.0})  # fmt: skip
    assert baseline.gradients is None and baseline.gradient(0) is None
    assert "differentiates another loss than the EstimatorSpec's" in baseline.gradients_note
    assert "gradients of the loss: not recorded (at step 0" in baseline.summary()
    clipped = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "clip", batch_size=8,
                              steps=2, params={"clip": 10.0})  # fmt: skip
    assert clipped.gradients is not None and not clipped.gradients_note


def test_the_gradient_comparison_floors_noise_and_skips_what_both_froze():
    """A gradient that is zero in theory (rounding noise) passes within the floor of 8 ulps of
    the largest gradient element; a variable frozen on both sides (no TF2 gradient, TF1's
    step left it unchanged) is not compared; one TF2 left out while TF1 trained it parts."""
    from workbench.synchronized import _compare_gradients

    tf1 = {"a": np.array([1.0, -2.0]), "noise": np.array([1e-12, -3e-13])}
    tf2 = {"a": np.array([1.0, -2.0]), "noise": np.array([5e-8, 4e-8])}
    parts, compared, _ = _compare_gradients(tf1, tf2, ["a", "noise"], set())
    assert not parts and compared == 2
    parts, compared, _ = _compare_gradients(tf1, {"a": tf1["a"]}, ["a", "noise"], {"noise"})
    assert not parts and compared == 1
    parts, _, _ = _compare_gradients(tf1, {"noise": tf1["noise"]}, ["a", "noise"], set())
    assert [part.name for part in parts] == ["a"]


class FakeMapping:
    """What _gradients_by_name reads of a mapping: its pairs and the TF2 names."""

    def __init__(self, variables):
        self.pairs = dict(variables)

    def target_names(self):
        return {name: f"dense/{name}:0" for name in self.pairs}


@pytest.mark.parametrize(
    ("gradients", "expected"),
    [
        (iter(()), "train_step's gradients are empty: return a list of (gradient, variable)"),
        ([(np.ones(2), object())], "none of train_step's gradients is paired with a variable"),
        ({"bias": np.ones(2)}, "'bias' is neither a TF1 name the mapping pairs"),
        ({"kernel": object()}, "train_step's gradient of kernel is a object: give one array"),
        (42, "give a list of (gradient, variable) pairs"),
    ],
)
def test_bad_gradients_are_one_line(gradients, expected):
    from workbench.synchronized import _gradients_by_name

    mapping = FakeMapping({"kernel": object()})
    with pytest.raises(SynchronizedError, match=None) as caught:
        _gradients_by_name(gradients, mapping)
    message = str(caught.value)
    assert expected in message and "\n" not in message


def test_gradients_by_tf2_name_by_pair_and_none_count_as_given():
    from workbench.synchronized import _gradients_by_name

    kernel = object()
    mapping = FakeMapping({"kernel": kernel, "bias": object()})
    by_tf2 = _gradients_by_name({"dense/kernel:0": [1.0], "bias": None}, mapping)
    assert list(by_tf2) == ["kernel"]
    assert list(_gradients_by_name([([2.0], kernel), (None, object())], mapping)) == ["kernel"]


def test_gradients_without_a_compared_loss_put_the_forward_pass_first():
    from workbench.synchronized import Part

    result = a_result({0: []}, {"weight": 2}, (("rate", True),), random_ops=1)
    result.gradient_parts[0] = [Part("hidden/kernel", "gradient", 1e-2, 1e-5)]
    result.gradients_compared[0] = 2
    (first, why), (second, _) = result.causes()
    assert first.startswith("the forward pass") and "the loss was not compared" in why
    assert second.startswith("the backward pass")
    assert "no variable parts after this step: the gradients below part" in result.summary()


@pytest.mark.skipif(LANE != "reference", reason="recording needs TPUEstimator (reference lane)")
def test_the_update_from_tf1s_own_gradients_tells_the_optimizer_from_the_gradients(tmp_path):
    """apply_gradients given TF1's recorded gradients from TF1's state: the faithful port's
    update matches at every step; a backward mistake (the logits' bias takes half its
    gradient), with nothing returned by the step, leaves that update matching, so the
    gradients train_step computes come first and no optimizer cause is offered; a wrong rate
    parts there, so the optimizer's side comes first."""
    from workbench import record_baseline

    baseline = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "sgd", batch_size=8,
                               steps=3)  # fmt: skip
    faithful = synchronized(decay(), baseline=baseline, apply=True)
    assert faithful.passed and faithful.update_compared == {0: 5, 1: 5, 2: 5}, faithful.summary()
    assert "update from TF1's gradients: TF1's state after it at every step" in faithful.summary()
    halved = synchronized(decay(), baseline=baseline, apply=True, bias_scale=0.5, quiet=True)
    assert halved.first_step == 0 and not halved.update_parts, halved.summary()
    assert halved.first_stage(0) == "gradients (TF1's own gradients update as TF1 did)"
    causes = [cause for cause, _ in halved.causes()]
    assert causes[0].startswith("the gradients train_step computes"), causes
    assert len(causes) == 1 and "optimizer" not in causes[0] and "dropout" not in causes[0]
    assert "update from TF1's gradients: all 5 variables match" in halved.summary()
    fast = synchronized(decay(0.12), baseline=baseline, apply=True, quiet=True)
    assert fast.first_step == 0 and fast.first_stage(0) == "update (weight)", fast.summary()
    assert {part.kind for part in fast.update_parts[0]} == {"weight"}
    (cause, why), *_ = fast.causes()
    assert cause.startswith("the update: the optimizer's rule or settings (weight decay")
    assert "epsilon" not in cause  # SGD: no slots, so no epsilon or betas
    assert "through apply_gradients part from TF1's next state in 4 of 5 variables" in why


def test_the_update_stage_is_skipped_where_the_baseline_holds_no_gradients():
    stored = synchronized(decay(), apply=True)  # the stored toy baseline predates gradients
    assert stored.passed and not stored.update_compared, stored.summary()
    assert "update from TF1's gradients: not compared: the baseline holds no gradients" in (
        stored.summary()
    )


def test_bad_apply_gradients_are_one_line():
    import tensorflow as tf

    from workbench.synchronized import _call_apply

    arguments, _ = port(decay())
    with pytest.raises(SynchronizedError, match="apply_gradients is a int: give a function"):
        compare_synchronized(*arguments, apply_gradients=42)
    baseline, _, train_step = arguments
    unmapped = map_checkpoint(baseline.checkpoint, toy.build_model())  # no optimizer: no step
    with pytest.raises(SynchronizedError, match="needs the optimizer's step counter") as caught:
        compare_synchronized(baseline, unmapped, train_step, apply_gradients=print)
    assert "\n" not in str(caught.value)

    def wrong(pairs):
        raise tf.errors.InvalidArgumentError(None, None, "Incompatible shapes: [4] vs. [2]\nmore")

    with pytest.raises(SynchronizedError) as caught:
        _call_apply(wrong, [])
    message = str(caught.value)
    assert message.startswith("apply_gradients raised InvalidArgumentError: Incompatible shapes")
    assert "\n" not in message


def test_statistics_alone_are_not_put_on_the_gradients():
    """The update from TF1's gradients writes no batch-norm statistic: where only those part
    and that update matches, the stage stays the update and the cause the statistics."""
    result = a_result({0: [("bn/moving_variance", "statistic")]}, {"weight": 2}, MATCHING)
    result.update_compared[0] = 3
    assert result.first_stage(0) == "update (statistic)"
    assert result.causes()[0][0].startswith("batch norm's moving statistics")
    weights = a_result({0: [("dense/kernel", "weight")]}, {"weight": 2}, MATCHING)
    weights.update_compared[0] = 3
    assert weights.first_stage(0) == "gradients (TF1's own gradients update as TF1 did)"


@pytest.mark.skipif(LANE != "reference", reason="recording needs TPUEstimator (reference lane)")
def test_tf1s_drop_connect_masks_are_drawn_again_from_the_recorded_seeds(tmp_path):
    """A model_fn with drop connect (EfficientNet's): the port with `TF1DropConnect` on the
    baseline's seeds passes one step at a time; one with Keras' `Dropout` over whole examples
    (`noise_shape`), other numbers, parts at step 0 in the forward pass, which names the
    baseline's random op."""
    import tensorflow as tf

    from workbench import TF1DropConnect, record_baseline

    # The port's step runs eagerly, where ops of equal seeds share one cached kernel and its
    # random state: a graph seed no other test uses keeps this op's seeds its own.
    baseline = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "dc", batch_size=8,
                               steps=3, params={"drop_connect": 0.75}, seed=11)  # fmt: skip
    [op] = baseline.random_ops
    assert op["type"] == "RandomUniform" and op["shape"] == [8, 1]
    faithful = TF1DropConnect(baseline.dropout_seeds()[0], survival_prob=0.75)
    result = synchronized(decay(), baseline=baseline, stages=True, between=faithful)
    assert result.passed, result.summary()
    keras = tf.keras.layers.Dropout(0.25, noise_shape=(None, 1), seed=7)
    other = synchronized(decay(), baseline=baseline, stages=True, between=keras)
    assert other.first_step == 0 and other.first_stage(0) == "loss", other.summary()
    assert "dropout's masks or another random draw (1 random op(s)" in other.causes()[0][0]
