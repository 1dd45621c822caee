"""workbench.compare on synthetic runs: each verdict, each rule of likely_causes, the worst
element, the one-ulp check, and bad inputs as one line. NumPy only, no TensorFlow."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from support import ROOT

from workbench.compare import (
    AMPLIFIED_ROUNDING,
    IDENTICAL,
    REAL,
    UNDECIDED,
    WITHIN,
    CompareError,
    amplified_rounding,
    compare_runs,
    likely_causes,
)

STEPS = 12
LOSSES = 1.0 / (1.0 + 0.3 * np.arange(STEPS))  # no two in an integer ratio
WEIGHTS = {"dense/kernel": np.arange(6.0).reshape(3, 2), "dense/bias": np.zeros(2)}


def run(losses=LOSSES, rates=None, norms=None, weights=None) -> dict:
    return {
        "losses": list(losses),
        "learning_rates": list(np.full(STEPS, 0.1) if rates is None else rates),
        "gradient_norms": list(np.linspace(2.0, 1.0, STEPS) if norms is None else norms),
        "weights": WEIGHTS if weights is None else weights,
    }


def names(causes) -> list[str]:
    return [cause.name for cause in causes]


def test_identical_and_within_tolerance():
    assert compare_runs(run(), run()).verdict()[0] == IDENTICAL
    comparison = compare_runs(run(), run(LOSSES + 1e-7))
    assert comparison.verdict()[0] == WITHIN and comparison.first_step is None
    assert likely_causes(comparison) == []
    # within tolerance: the largest |diff| with the loosest step's bound, 1e-5 + 1e-6 * 1.0
    assert comparison.summary().splitlines()[1] == (
        "losses: within tolerance over 12 steps, max |diff| 1.00e-07 (≤ 1.1e-05)"
    )


def test_a_stored_tf1_run_loads_as_it_is_and_a_shifted_warm_up_is_found():
    stored = json.loads((ROOT / "fixtures" / "tf1_conv" / "tf1_run.json").read_text())
    assert "evaluation" in stored and "predictions" in stored  # predictions are ignored
    rates = stored["learning_rates"]
    late = {"losses": stored["losses"], "learning_rates": rates[1:] + rates[-1:]}
    comparison = compare_runs(stored, late)  # the schedule reads the step one ahead
    assert set(comparison.differences) == {"losses", "learning_rates"}
    assert comparison.not_compared == ["evaluation (the candidate has none)"]
    assert comparison.partings["learning_rates"].step == 0
    assert comparison.partings["losses"] is None
    causes = likely_causes(comparison)
    assert causes[0].name == "learning-rate schedule" and "0.025 against 0.05" in causes[0].why


def test_the_loss_alone_differing_at_step_0_is_what_is_logged():
    causes = likely_causes(compare_runs(run(), run(LOSSES * 1.01)))
    assert names(causes) == ["logged loss"]  # the gradient agrees: the training does


def test_step_0_is_real_and_points_to_the_start():
    comparison = compare_runs(run(), run(LOSSES * 1.01, norms=np.linspace(2.0, 1.0, STEPS) * 1.1))
    assert comparison.first_step == 0
    verdict, reason = comparison.verdict()
    assert verdict == REAL and "before any update" in reason
    parted = "losses: parts at step 0 (baseline 1, candidate 1.01, |diff| 1.00e-02 (≥ 1.1e-05))"
    assert parted in comparison.summary().splitlines()[1]  # beyond its bound: a floor
    assert names(likely_causes(comparison)) == [
        "initial weights",
        "per-replica batch",
        "batch-norm statistics or dropout",
        "matmul precision",
    ]


def test_a_replica_count_factor_names_the_loss_reduction():
    comparison = compare_runs(run(), run(LOSSES * 8, norms=np.linspace(2.0, 1.0, STEPS) * 8))
    causes = likely_causes(comparison)
    assert causes[0].name == "loss reduction" and "factor of 8" in causes[0].why
    assert "logged loss" not in names(causes)


def test_a_loss_factor_with_equal_gradients_is_what_is_logged():
    causes = likely_causes(compare_runs(run(), run(LOSSES * 8)))
    assert names(causes) == ["logged loss"] and "factor of 8" in causes[0].why


def test_a_large_loss_one_ulp_apart_is_within_tolerance():
    large = np.full(STEPS, 1000.0, np.float32)
    nudged = np.nextafter(large, np.float32(np.inf))  # 6e-5 apart, beyond the absolute 1e-5
    comparison = compare_runs({"losses": large}, {"losses": nudged})
    assert comparison.verdict()[0] == WITHIN


def test_step_1_with_losses_only_names_the_loss_reduction_too():
    causes = likely_causes(compare_runs({"losses": LOSSES}, {"losses": parting_at(1)}))
    assert names(causes) == ["loss reduction", "optimizer settings"]
    assert "log gradient_norms" in causes[0].why


def test_a_gradient_at_step_0_without_losses_points_to_the_start():
    norms = np.linspace(2.0, 1.0, STEPS)
    causes = names(
        likely_causes(compare_runs({"gradient_norms": norms}, {"gradient_norms": norms * 1.1}))
    )
    assert "loss reduction" not in causes  # nothing says the loss of step 0 agrees
    assert causes[:1] == ["initial weights"] and "matmul precision" in causes


def test_the_loss_equal_but_the_gradient_not_at_step_0():
    norms = np.linspace(2.0, 1.0, STEPS) * 1.3
    comparison = compare_runs(run(), run(norms=norms))
    assert comparison.partings["losses"] is None
    assert names(likely_causes(comparison)) == ["loss reduction"]


def test_the_learning_rate_is_never_rounding():
    rates = np.full(STEPS, 0.1)
    rates[5:] = 0.01
    comparison = compare_runs(run(rates=rates), run())
    assert comparison.verdict()[0] == REAL
    assert likely_causes(comparison)[0].name == "learning-rate schedule"


def growing(start: int = 2) -> np.ndarray:
    """A difference that starts in the last bits and doubles every step until it leaves 1e-5."""
    gaps = np.zeros(STEPS)
    gaps[start:] = 1e-7 * 2.0 ** np.arange(STEPS - start)
    return LOSSES + gaps


def test_growing_smoothly_needs_the_one_ulp_check_which_decides():
    comparison = compare_runs(run(), run(growing()))
    first = comparison.first_step
    assert first is not None and first > 2
    assert comparison.verdict()[0] == UNDECIDED
    assert "amplified rounding" in names(likely_causes(comparison))
    # one ulp grows as far: rounding
    rounding = amplified_rounding(comparison, run(growing() * (1 + 1e-3)))
    assert rounding.verdict == AMPLIFIED_ROUNDING and rounding.leaves_tolerance["losses"]
    causes = names(likely_causes(comparison, rounding))
    assert causes[0] == "amplified rounding" and causes.count("amplified rounding") == 1
    # one ulp stays within the tolerance: not explained by one ulp at the start
    rounding = amplified_rounding(comparison, run(growing() + 1e-8))
    assert rounding.verdict == REAL and "not explained by one ulp at the start" in rounding.reason
    assert "amplified rounding" not in names(likely_causes(comparison, rounding))
    # one ulp leaves it, but by far less than what was observed: real
    nudged = growing()
    nudged[-1] += 1.2e-5  # leaves 1e-5, by a quarter of the observed 5e-5
    rounding = amplified_rounding(comparison, run(nudged), factor=2)
    assert rounding.verdict == REAL and "more than 2 times" in rounding.reason


def parting_at(step: int) -> np.ndarray:
    losses = LOSSES.copy()
    losses[step:] += 0.05
    return losses


def test_the_first_update_points_to_the_optimizer_and_clipping():
    causes = names(likely_causes(compare_runs(run(), run(parting_at(1)))))
    assert causes == ["optimizer settings", "global-norm clipping"]
    without_norms = {"losses": LOSSES, "learning_rates": np.full(STEPS, 0.1)}
    parted = {**without_norms, "losses": parting_at(3)}
    assert names(likely_causes(compare_runs(without_norms, parted))) == ["data order"]


def test_clipping_only_after_a_step_whose_norm_is_the_largest_yet():
    spike = np.linspace(2.0, 1.0, STEPS)
    spike[5] = 9.0
    assert "global-norm clipping" in names(
        likely_causes(compare_runs(run(norms=spike), run(parting_at(6), norms=spike)))
    )
    causes = names(likely_causes(compare_runs(run(norms=spike), run(parting_at(8), norms=spike))))
    assert "global-norm clipping" not in causes and "data order" in causes


def test_a_known_clip_norm_names_clipping_where_the_clip_acted_before_the_parting():
    """With Adam a clip can act at step 0 and show only at step 2 (its first update does not
    depend on the gradient's scale): the largest-norm guess misses that, clip_norm does not."""
    norms = np.linspace(2.0, 1.0, STEPS)  # falling: no step's norm is the largest yet
    clipped = {**run(norms=norms), "clip_norm": 1.95}  # acted at step 0 only
    assert "global-norm clipping" not in names(
        likely_causes(compare_runs(run(norms=norms), run(parting_at(2), norms=norms)))
    )
    causes = likely_causes(compare_runs(clipped, run(parting_at(2), norms=norms)))
    clipping = next(cause for cause in causes if cause.name == "global-norm clipping")
    assert "(step 0: global norm above clip_norm 1.95)" in clipping.why
    never = {**run(norms=norms), "clip_norm": 5.0}
    causes = names(likely_causes(compare_runs(never, run(parting_at(2), norms=norms))))
    assert "global-norm clipping" not in causes and "data order" in causes


def test_momentum_rule_only_after_the_rate_changed():
    rates = np.full(STEPS, 0.1)
    rates[4:] = 0.05
    changed = names(likely_causes(compare_runs(run(rates=rates), run(parting_at(6), rates=rates))))
    assert "momentum rule" in changed
    assert "momentum rule" not in names(likely_causes(compare_runs(run(), run(parting_at(6)))))


def test_values_repeated_per_function_call_name_steps_per_function():
    blocks = np.repeat(LOSSES[3::4], 4)  # Keras logs the last step of each call of 4 steps
    comparison = compare_runs(run(), run(blocks))
    assert comparison.first_step == 0
    causes = likely_causes(comparison)
    assert causes[0].name == "steps per function" and "blocks of 4" in causes[0].why


def test_a_constant_loss_is_not_steps_per_function():
    flat = np.full(STEPS, 2.3)
    causes = names(likely_causes(compare_runs({"losses": LOSSES}, {"losses": flat})))
    assert "steps per function" not in causes and causes[0] == "initial weights"


def test_the_worst_element_and_weights_only():
    moved = {name: value.copy() for name, value in WEIGHTS.items()}
    moved["dense/kernel"][2, 1] += 1e-3
    moved["dense/bias"][0] += 1e-6  # within 1e-4
    comparison = compare_runs(run(), run(weights=moved))
    worst = comparison.worst
    assert (worst.variable, worst.index) == ("dense/kernel", (2, 1))
    assert worst.baseline == 5.0 and worst.candidate == pytest.approx(5.001)
    assert comparison.weights_outside and comparison.verdict()[0] == UNDECIDED
    assert names(likely_causes(comparison)) == ["optimizer settings"]
    worst_line = comparison.summary().splitlines()[-1]
    assert worst_line == (
        "weights: worst dense/kernel[2, 1] baseline 5, candidate 5.001, |diff| 1.00e-03 (≥ 0.0001)"
    )  # beyond its bound: a floor
    within = compare_runs(run(), run(weights={**WEIGHTS, "dense/bias": np.array([0.0, 3e-5])}))
    assert within.summary().splitlines()[-1] == (
        "weights: within tolerance, the element nearest its bound |diff| 3.00e-05 (≤ 0.0001)"
    )  # within its bound: a ceiling, and no name (which element rounds most is the CPU's)
    statistics = {**WEIGHTS, "bn/moving_variance": np.ones(2)}
    moved = {**statistics, "bn/moving_variance": np.array([1.0, 1.1])}
    causes = likely_causes(compare_runs(run(weights=statistics), run(weights=moved)))
    assert names(causes) == ["batch-norm statistics"]
    # the losses part late as well (a synchronized batch norm's other formula, amplified): the
    # statistics are still named, after what the parting points to
    late = LOSSES + np.where(np.arange(STEPS) >= 5, 1e-3, 0.0)
    causes = likely_causes(compare_runs(run(weights=statistics), run(late, weights=moved)))
    assert names(causes)[-1] == "batch-norm statistics" and "parts too (step 5)" in causes[-1].why


def test_nan_final_weights_are_outside_the_tolerance():
    diverged = {**WEIGHTS, "dense/bias": np.array([0.0, np.nan])}
    comparison = compare_runs(run(), run(weights=diverged))
    assert comparison.worst.variable == "dense/bias" and comparison.weights_outside
    assert comparison.verdict()[0] == UNDECIDED
    both = compare_runs(run(weights=diverged), run(weights=diverged))  # both diverged alike
    assert not both.weights_outside
    stepwise = compare_runs({"losses": [1.0, np.nan]}, {"losses": [1.0, np.nan]})
    assert stepwise.first_step is None  # NaN equals NaN: both diverged at that step
    assert compare_runs({"losses": [1.0, 2.0]}, {"losses": [1.0, np.nan]}).first_step == 1


def test_per_step_dicts_and_a_missing_quantity():
    steps = [{"loss": loss} for loss in LOSSES]
    comparison = compare_runs(run(), steps)
    assert comparison.verdict()[0] == IDENTICAL
    assert comparison.not_compared == [
        "learning_rates (the candidate has none)",
        "gradient_norms (the candidate has none)",
        "weights (the candidate has none)",
    ]


@pytest.mark.parametrize(
    ("candidate", "options", "expected"),
    [
        (
            run(LOSSES[:10], np.full(10, 0.1), np.ones(10)),
            {},
            "the baseline has 12 steps, the candidate 10",
        ),
        (
            run(LOSSES[3::4], np.full(3, 0.1), np.ones(3)),
            {},
            "logged 3 values for the baseline's 12 steps: one per function call of 4 steps",
        ),
        (
            run(weights={"dense/kernel": WEIGHTS["dense/kernel"]}),
            {},
            "'dense/bias' are in the baseline only",
        ),
        (run(weights={**WEIGHTS, "dense/bias": np.zeros(3)}), {}, "shape (2,) in the baseline"),
        (run(), {"atol": {"loss": 1e-6}}, "atol names 'loss'"),
        ([{"losss": 1.0}], {}, "per-step key 'losss'"),
        ([1.0, 2.0], {}, "step 0 is a float: give a dict per step"),
        ([{"loss": 1.0}, {"learning_rate": 0.1}], {}, "step 0 has no 'learning_rate'"),
        ("losses.json", {}, "give a dict of losses"),
        ({"losses": [[1.0, 2.0]]}, {}, "not one per step"),
        ({"accuracy": [1.0]}, {}, "has none of losses"),
    ],
)
def test_bad_inputs_are_one_line(candidate, options, expected):
    with pytest.raises(CompareError) as caught:
        compare_runs(run(), candidate, **options)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_the_evaluation_is_compared_and_parts_alone_undecided():
    """A moving average with another decay (notebook 10's EMA without num_updates) leaves the
    trained weights alone and moves what evaluation restores: the steps and the weights agree,
    the evaluation does not, so the verdict is not "within" (no false pass) but undecided
    until the one-ulp check, with the nudged run evaluated too, tells rounding apart."""
    steps = {"losses": [0.5, 0.4, 0.3], "weights": {"w": [1.0, 2.0]}}
    baseline = {**steps, "evaluation": {"loss": 0.25, "accuracy": 0.75}}
    same = compare_runs(baseline, {**steps, "evaluation": {"loss": 0.25 + 4e-6, "accuracy": 0.75}})
    assert same.verdict()[0] == WITHIN and not same.evaluation_outside
    assert "evaluation loss: within tolerance, |diff| 4.00e-06 (≤ 1.25e-05)" in same.summary()
    averaged = {**steps, "evaluation": {"loss": 0.2557, "accuracy": 0.75}}
    found = compare_runs(baseline, averaged)
    verdict, reason = found.verdict()
    assert verdict == UNDECIDED and "the evaluation is not (loss)" in reason
    assert [metric.name for metric in found.evaluation_outside] == ["loss"]
    assert (
        "evaluation loss: parts (baseline 0.25, candidate 0.2557, |diff| 5.70e-03 (≥ 1.25e-05))"
        in found.summary()
    )
    nudged_alike = {**steps, "evaluation": {"loss": 0.2557 + 1e-7, "accuracy": 0.75}}
    assert amplified_rounding(found, nudged_alike).verdict == REAL  # one ulp moves it not
    nudged_apart = {**steps, "evaluation": {"loss": 0.2557 - 2e-3, "accuracy": 0.75}}
    assert amplified_rounding(found, nudged_apart).verdict == AMPLIFIED_ROUNDING
    no_evaluation = amplified_rounding(found, steps)
    assert no_evaluation.verdict == UNDECIDED and "evaluate it too" in no_evaluation.reason
    one_metric = compare_runs(baseline, {**steps, "evaluation": {"loss": 0.25}})
    assert one_metric.not_compared == ["evaluation accuracy (the candidate has none)"]


@pytest.mark.parametrize(
    ("evaluation", "message"),
    [
        ([0.25], "evaluation is a list: give a dict of metric name to value"),
        ({"loss": "low"}, "evaluation metric 'loss' is 'low', not one number"),
        ({"loss": [0.1, 0.2]}, "evaluation metric 'loss' is [0.1, 0.2], not one number"),
    ],
)
def test_an_evaluation_that_is_not_metrics_is_one_line(evaluation, message):
    with pytest.raises(CompareError, match=re.escape(message)):
        compare_runs({"losses": [0.5]}, {"losses": [0.5], "evaluation": evaluation})
