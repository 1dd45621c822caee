"""workbench.compare_synchronized on the stored toy baseline (fixtures/workbench_toy), in
each lane: the faithful port passes every step; a wrong rate parts at step 0, a schedule that
differs from step 1 on parts at step 1 and not before; bad requests are one line."""

from __future__ import annotations

import numpy as np
import pytest
import workbench_toy as toy
from support import ROOT

from workbench import (
    SynchronizedError,
    compare_synchronized,
    load_baseline,
    map_checkpoint,
    one_step_bound,
)

pytestmark = pytest.mark.tensorflow
STORED = ROOT / "fixtures" / "workbench_toy"


def port(schedule):
    """The toy's TF2 port with this rate schedule, mapped with its optimizer's step counter."""
    import tensorflow as tf

    tf.keras.backend.clear_session()
    model = toy.build_model()
    optimizer = tf.keras.optimizers.SGD(schedule)
    optimizer.build(model.trainable_variables)
    baseline = load_baseline(STORED)
    mapping = map_checkpoint(baseline.checkpoint, model, optimizer=optimizer)
    assert not mapping.problems(), mapping.report()
    loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)

    def train_step(features, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(features["x"]))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))

    return baseline, mapping, train_step


def decay(rate=toy.RATE, staircase=False):
    import tensorflow as tf

    return tf.keras.optimizers.schedules.ExponentialDecay(
        rate, toy.DECAY_STEPS, toy.DECAY, staircase=staircase
    )


def test_the_faithful_port_passes_every_step():
    result = compare_synchronized(*port(decay()))
    assert result.passed and result.steps == 4, result.summary()
    assert result.summary().startswith("synchronized: every one of 4 steps")


def test_a_wrong_rate_parts_at_step_0_in_the_weights():
    result = compare_synchronized(*port(decay(0.12)))
    assert result.first_step == 0, result.summary()
    assert {part.kind for part in result.parts[0]} == {"weight"}
    assert set(result.layers(0)) == {"hidden", "logits"}


def test_a_schedule_that_differs_from_step_1_parts_there_and_not_before():
    """TF1 decays continuously (0.1, 0.0707, ...); a staircase keeps 0.1 for two steps."""
    result = compare_synchronized(*port(decay(staircase=True)))
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
        compare_synchronized(*port(decay()), steps=steps)
    assert "\n" not in str(raised.value)
