"""Compare a TF2 run with its TF1 baseline step by step, and say what a difference means.

The inputs are plain data, so any training code can produce them: per-step `losses`,
`learning_rates` and `gradient_norms` (the global norm, before any clipping), and the final
`weights` (name -> array, in the baseline's names). The model's weights alone compare alike
on both sides: `mapping.tf2_values(weights_only=True)` on the TF2 side, and
`read_checkpoint(tf1_final_checkpoint, names=mapping.weight_names())` on the TF1 side. A run
is a dict of those keys (other keys are ignored, so a stored `tf1_run.json` loads as it is)
or a list of per-step dicts (`loss`, `learning_rate`, `gradient_norm`).

`compare_runs` finds the first step where the runs part, by quantity, and the worst element of
the final weights. Its verdict follows from one fact: the loss of a step is computed before
that step's update, so at step 0 nothing has been trained yet and no rounding has been
amplified. A step-0 difference beyond the tolerance is real (unless the matrix products ran at
another precision, which `likely_causes` lists); a later one may be rounding that
training amplified, which `amplified_rounding` tells apart (notebook 10's one-ulp check).
`likely_causes` ranks notebook 04's checklist (`CHECKLIST`) by what was observed; each rule
says why the observation points there in the `why` it gives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.errors import FriendlyError
from workbench.text import format_difference


class CompareError(FriendlyError, ValueError):
    """The runs cannot be compared as given; the message says what to change."""


STEPWISE = ("losses", "learning_rates", "gradient_norms")
PER_STEP_KEYS = {
    "loss": "losses",
    "learning_rate": "learning_rates",
    "gradient_norm": "gradient_norms",
}
# |candidate - baseline| <= atol + rtol * |baseline|. Losses and weights: notebook 10's bounds
# (1e-5, 1e-4) for another CPU or an accelerator, and for a loss a few float32 ulps of its
# size (a loss of 1000 is 6e-5 per ulp); a schedule's rate is computed, not trained, so only
# its float rounding is allowed; a norm scales with the gradients, so it is relative.
ATOL = {
    "losses": 1e-5,
    "learning_rates": 0.0,
    "gradient_norms": 1e-7,
    "weights": 1e-4,
    "evaluation": 1e-5,
}
RTOL = {
    "losses": 1e-6,
    "learning_rates": 1e-6,
    "gradient_norms": 1e-5,
    "weights": 0.0,
    "evaluation": 1e-5,
}

# The verdicts: the first element of Comparison.verdict() and RoundingCheck.verdict.
IDENTICAL, WITHIN, REAL, AMPLIFIED_ROUNDING, UNDECIDED = (
    "identical",
    "within tolerance",
    "real difference",
    "amplified rounding",
    "undecided: run the one-ulp check (amplified_rounding)",
)


@dataclass(frozen=True)
class Run:
    """One run as arrays: per-step quantities (float64) and final weights."""

    stepwise: dict[str, np.ndarray]
    weights: dict[str, np.ndarray]
    clip_norm: float | None = None  # the clip_norm of clip_by_global_norm, when known
    evaluation: dict[str, float] = field(default_factory=dict)  # metric -> value after training

    @property
    def steps(self) -> int:
        return len(next(iter(self.stepwise.values()))) if self.stepwise else 0


def as_run(data: Any, which: str = "the run") -> Run:
    """Read a dict of per-step arrays (and `weights`) or a list of per-step dicts."""
    if isinstance(data, Run):
        return data
    if isinstance(data, Sequence) and not isinstance(data, str):
        data = _per_step(data, which)
    if not isinstance(data, Mapping):
        raise CompareError(
            f"{which} is a {type(data).__name__}: give a dict of {', '.join(STEPWISE)} and "
            "weights, or a list of per-step dicts"
        )
    stepwise = {}
    for key in STEPWISE:
        if key in data and data[key] is not None:
            values = np.asarray(data[key], dtype=np.float64)
            if values.ndim != 1:
                raise CompareError(f"{which}: {key} has shape {values.shape}, not one per step")
            stepwise[key] = values
    lengths = {key: len(values) for key, values in stepwise.items()}
    if len(set(lengths.values())) > 1:
        raise CompareError(f"{which}: the quantities have different step counts {lengths}")
    weights = {str(k): np.asarray(v, dtype=np.float64) for k, v in data.get("weights", {}).items()}
    clip_norm = data.get("clip_norm")
    evaluation = _evaluation(data.get("evaluation"), which)
    if not stepwise and not weights and not evaluation:
        raise CompareError(f"{which} has none of {', '.join(STEPWISE)} or weights to compare")
    return Run(stepwise, weights, None if clip_norm is None else float(clip_norm), evaluation)


def _evaluation(given: Any, which: str) -> dict[str, float]:
    """The evaluation's metrics as floats by name (`evaluate(..., return_dict=True)`, or the
    baseline's recorded `evaluation`)."""
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise CompareError(
            f"{which}: evaluation is a {type(given).__name__}: give a dict of metric name to "
            "value, as evaluate(..., return_dict=True) returns"
        )
    metrics = {}
    for name, value in given.items():
        try:
            metrics[str(name)] = float(np.asarray(value, dtype=np.float64))
        except (TypeError, ValueError):
            raise CompareError(
                f"{which}: evaluation metric {name!r} is {value!r}, not one number"
            ) from None
    return metrics


def _per_step(steps: Sequence[Any], which: str) -> dict[str, list[Any]]:
    """A list of per-step dicts as a dict of per-step lists; every step logs the same keys."""
    for number, step in enumerate(steps):
        if not isinstance(step, Mapping):
            raise CompareError(
                f"{which}: step {number} is a {type(step).__name__}: give a dict per step "
                "({'loss': ...}) or a dict of lists ({'losses': [...]})"
            )
        unknown = sorted(set(step) - set(PER_STEP_KEYS))
        if unknown:
            raise CompareError(
                f"{which}: per-step key {unknown[0]!r} is not one of {', '.join(PER_STEP_KEYS)}"
            )
    logged = [single for single in PER_STEP_KEYS if any(single in step for step in steps)]
    for number, step in enumerate(steps):
        missing = [single for single in logged if single not in step]
        if missing:
            raise CompareError(
                f"{which}: step {number} has no {missing[0]!r}: log the same quantities at "
                "every step"
            )
    return {PER_STEP_KEYS[single]: [step[single] for step in steps] for single in logged}


@dataclass(frozen=True)
class Parting:
    """Where a quantity first leaves its tolerance."""

    quantity: str
    step: int
    baseline: float
    candidate: float
    difference: float
    bound: float


@dataclass(frozen=True)
class Worst:
    """The final weights' element furthest beyond its bound, by |difference| - bound (a NaN
    difference counts as furthest); when every element is within, the one nearest its bound."""

    variable: str
    index: tuple[int, ...]
    baseline: float
    candidate: float
    difference: float
    bound: float


@dataclass(frozen=True)
class Metric:
    """One evaluation metric of both runs: the values, |difference| and its bound."""

    name: str
    baseline: float
    candidate: float
    difference: float
    bound: float

    @property
    def outside(self) -> bool:
        return not (self.difference <= self.bound)  # NaN against a number is outside


@dataclass
class Comparison:
    """Two runs side by side: per-step |differences|, where each quantity parts, the worst
    final weight; `verdict()` and `summary()` say what that means."""

    baseline: Run
    candidate: Run
    atol: dict[str, float]
    rtol: dict[str, float]
    differences: dict[str, np.ndarray] = field(default_factory=dict)  # |diff| per step
    bounds: dict[str, np.ndarray] = field(default_factory=dict)  # atol + rtol·|baseline| per step
    partings: dict[str, Parting | None] = field(default_factory=dict)
    worst: Worst | None = None
    not_compared: list[str] = field(default_factory=list)
    evaluation: list[Metric] = field(default_factory=list)  # the metrics both runs have

    @property
    def evaluation_outside(self) -> list[Metric]:
        return [metric for metric in self.evaluation if metric.outside]

    @property
    def first_step(self) -> int | None:
        steps = [p.step for p in self.partings.values() if p is not None]
        return min(steps) if steps else None

    @property
    def weights_outside(self) -> bool:
        return self.worst is not None and not (self.worst.difference <= self.worst.bound)

    @property
    def identical(self) -> bool:
        return (
            all(not d.any() for d in self.differences.values())
            and (self.worst is None or self.worst.difference == 0)
            and all(metric.difference == 0 for metric in self.evaluation)
        )

    def verdict(self) -> tuple[str, str]:
        """(verdict, reason) from this comparison alone."""
        first = self.first_step
        if self.identical:
            return IDENTICAL, "every compared value is bit for bit the baseline's"
        if first is None and not self.weights_outside and not self.evaluation_outside:
            return WITHIN, "every compared value is within its tolerance"
        rate = self.partings.get("learning_rates")
        if rate is not None:
            return REAL, (
                f"the learning rate parts at step {rate.step}: a schedule is computed from the "
                "step, not trained, so no rounding of the weights reaches it"
            )
        if first == 0:
            return REAL, (
                "they part at step 0, before any update: nothing had trained yet to amplify "
                "rounding (matrix products at another precision can still differ: see "
                "likely_causes)"
            )
        if first is None and not self.weights_outside:
            names = ", ".join(metric.name for metric in self.evaluation_outside)
            return UNDECIDED, (
                f"every step and the final weights are within tolerance, the evaluation is not "
                f"({names}): what evaluation alone uses (moving averages restored for it, "
                "batch-norm statistics, the metric itself), or the weights' rounding carried "
                "into the metrics (the one-ulp check, with the nudged run evaluated too)"
            )
        where = f"from step {first}" if first is not None else "in the final weights only"
        return UNDECIDED, f"they part {where}, after updates that can amplify rounding"

    def summary(self) -> str:
        verdict, reason = self.verdict()
        lines = [f"verdict: {verdict} ({reason})"]
        for quantity, difference in self.differences.items():
            parting = self.partings[quantity]
            peak = float(difference.max()) if difference.size else 0.0
            if parting is None:
                # with its bound (the loosest step's), as output_compare reads a bounded value:
                # which step rounds most, and by how much, is the CPU's, not the migration's
                bounds = self.bounds[quantity]
                within = format_difference(peak, float(bounds.max()) if bounds.size else None)
                lines.append(
                    f"{quantity}: within tolerance over {difference.size} steps, "
                    f"max |diff| {within}"
                )
            else:
                beyond = format_difference(parting.difference, at_least=parting.bound)
                lines.append(
                    f"{quantity}: parts at step {parting.step} (baseline {parting.baseline:.8g}, "
                    f"candidate {parting.candidate:.8g}, |diff| {beyond}), "
                    f"max |diff| {format_difference(peak)}"
                )
        w = self.worst
        if w is not None and self.weights_outside:
            lines.append(
                f"weights: worst {w.variable}{list(w.index)} baseline {w.baseline:.8g}, candidate "
                f"{w.candidate:.8g}, |diff| {format_difference(w.difference, at_least=w.bound)}"
            )
        elif w is not None:  # within: which element rounds most is the CPU's choice
            lines.append(
                "weights: within tolerance, the element nearest its bound |diff| "
                f"{format_difference(w.difference, w.bound)}"
            )
        for metric in self.evaluation:  # within: the digits are the CPU's, as for the steps
            if metric.outside:
                beyond = format_difference(metric.difference, at_least=metric.bound)
                lines.append(
                    f"evaluation {metric.name}: parts (baseline {metric.baseline:.8g}, "
                    f"candidate {metric.candidate:.8g}, |diff| {beyond})"
                )
            else:
                within = format_difference(metric.difference, metric.bound)
                lines.append(f"evaluation {metric.name}: within tolerance, |diff| {within}")
        lines += [f"not compared: {what}" for what in self.not_compared]
        return "\n".join(lines)


def _tolerances(
    given: Mapping[str, float] | None, defaults: dict[str, float], name: str
) -> dict[str, float]:
    given = dict(given or {})
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise CompareError(f"{name} names {unknown[0]!r}: the quantities are {', '.join(defaults)}")
    return {**defaults, **{k: float(v) for k, v in given.items()}}


def _gap_and_bound(
    baseline: np.ndarray, candidate: np.ndarray, atol: float, rtol: float
) -> tuple[np.ndarray, np.ndarray]:
    """|candidate - baseline| (0 where both are NaN: both diverged there), and each element's
    bound atol + rtol * |baseline| (a non-finite baseline counts as 0)."""
    gap = np.where(np.isnan(baseline) & np.isnan(candidate), 0.0, np.abs(candidate - baseline))
    finite = np.nan_to_num(baseline, nan=0.0, posinf=0.0, neginf=0.0)
    return gap, atol + rtol * np.abs(finite)


def compare_runs(
    baseline: Any,
    candidate: Any,
    atol: Mapping[str, float] | None = None,
    rtol: Mapping[str, float] | None = None,
) -> Comparison:
    """Compare every step and the final weights; refuse runs that cannot be compared.

    `atol`/`rtol` override the defaults (ATOL, RTOL) per quantity: `losses`,
    `learning_rates`, `gradient_norms`, `weights`. A quantity only one run has is listed in
    `not_compared`; different step counts, or weights named in one run only, raise
    CompareError. NaN equals NaN (both diverged at that step).
    """
    base, cand = as_run(baseline, "the baseline"), as_run(candidate, "the candidate")
    comparison = Comparison(
        base, cand, _tolerances(atol, ATOL, "atol"), _tolerances(rtol, RTOL, "rtol")
    )
    if base.stepwise and cand.stepwise and base.steps != cand.steps:
        calls = base.steps // cand.steps if cand.steps else 0
        if calls > 1 and base.steps % cand.steps == 0:
            raise CompareError(
                f"the candidate logged {cand.steps} values for the baseline's {base.steps} steps: "
                f"one per function call of {calls} steps (steps_per_execution={calls}, or a "
                "loop inside tf.function); log every step, or run one step per call"
            )
        raise CompareError(
            f"the baseline has {base.steps} steps, the candidate {cand.steps}: train the "
            "candidate for as many steps on the same batches (several steps per function can "
            "round an epoch up to whole executions)"
        )
    for quantity in STEPWISE:
        if (quantity in base.stepwise) != (quantity in cand.stepwise):
            side = "the candidate" if quantity in base.stepwise else "the baseline"
            comparison.not_compared.append(f"{quantity} ({side} has none)")
        if quantity in base.stepwise and quantity in cand.stepwise:
            b, c = base.stepwise[quantity], cand.stepwise[quantity]
            difference, bound = _gap_and_bound(
                b, c, comparison.atol[quantity], comparison.rtol[quantity]
            )
            outside = np.flatnonzero(~(difference <= bound))  # NaN against a number is outside
            comparison.differences[quantity] = difference
            comparison.bounds[quantity] = bound
            comparison.partings[quantity] = None
            if outside.size:
                s = int(outside[0])
                comparison.partings[quantity] = Parting(
                    quantity, s, float(b[s]), float(c[s]), float(difference[s]), float(bound[s])
                )
    comparison.worst = _worst(base.weights, cand.weights, comparison)
    comparison.evaluation = _metrics(base.evaluation, cand.evaluation, comparison)
    if not comparison.differences and comparison.worst is None and not comparison.evaluation:
        raise CompareError("the runs share no quantity: log the same ones on both sides")
    return comparison


def _metrics(base: dict, cand: dict, comparison: Comparison) -> list[Metric]:
    """The metrics both runs evaluated, each within atol + rtol x |baseline| ("evaluation");
    a metric of one run only is listed as not compared."""
    if bool(base) != bool(cand):
        side = "the candidate" if base else "the baseline"
        comparison.not_compared.append(f"evaluation ({side} has none)")
        return []
    for name in sorted(set(base) ^ set(cand)):
        side = "the candidate" if name in base else "the baseline"
        comparison.not_compared.append(f"evaluation {name} ({side} has none)")
    atol, rtol = comparison.atol["evaluation"], comparison.rtol["evaluation"]
    metrics = []
    for name in sorted(set(base) & set(cand)):
        b, c = base[name], cand[name]
        gap = 0.0 if np.isnan(b) and np.isnan(c) else abs(c - b)
        bound = atol + rtol * (abs(b) if np.isfinite(b) else 0.0)
        metrics.append(Metric(name, b, c, gap, bound))
    return metrics


def _worst(base: dict, cand: dict, comparison: Comparison) -> Worst | None:
    if not base or not cand:
        if base or cand:
            side = "the candidate" if base else "the baseline"
            comparison.not_compared.append(f"weights ({side} has none)")
        return None
    only = sorted(set(base) ^ set(cand))
    if only:
        side = "the baseline" if only[0] in base else "the candidate"
        raise CompareError(
            f"weights {only[0]!r} are in {side} only: name the final weights alike on both "
            "sides (Mapping.tf2_values() uses the TF1 names)"
        )
    worst = None
    for name in base:
        if base[name].shape != cand[name].shape:
            raise CompareError(
                f"weights {name!r}: shape {base[name].shape} in the baseline, "
                f"{cand[name].shape} in the candidate"
            )
        gap, bound = _gap_and_bound(
            base[name], cand[name], comparison.atol["weights"], comparison.rtol["weights"]
        )
        excess = np.nan_to_num(gap - bound, nan=np.inf)
        if gap.size == 0:
            continue
        flat = int(np.argmax(excess))
        index = tuple(int(i) for i in np.unravel_index(flat, gap.shape))
        candidate = Worst(
            name,
            index,
            float(base[name][index]),
            float(cand[name][index]),
            float(gap[index]),
            float(bound[index]),
        )
        if worst is None or excess[index] > worst.difference - worst.bound:
            worst = candidate
    return worst


@dataclass(frozen=True)
class RoundingCheck:
    """What one ulp of difference in the initial weights grows to over the same training."""

    spread: dict[str, float]  # quantity -> max |run - nudged run|
    leaves_tolerance: dict[str, bool]  # quantity -> whether the one-ulp pair leaves it
    verdict: str
    reason: str


def amplified_rounding(comparison: Comparison, nudged: Any, factor: float = 10.0) -> RoundingCheck:
    """Notebook 10's one-ulp check: is the observed difference what rounding can grow to?

    `nudged`: the candidate's training run again, from the same start with every initial
    weight one float32 ulp up (`np.nextafter(w, np.float32(np.inf))`), on the same batches,
    at the same rates; `comparison.candidate` is the run it is set against. A last-bit
    difference (another CPU's summation order, a fused kernel) is carried through training;
    how far it grows depends on the model and the rates. If the one-ulp pair stays within a
    tolerance the observed runs leave, rounding does not explain the difference: real. If
    the pair leaves it too, and the observed difference is at most `factor` times the pair's
    spread, the difference is consistent with amplified rounding. `factor` is a judgement,
    not a measurement: another machine differs in the last bits at every step, not once, so
    its runs may part further than a single nudge; a much larger difference is not rounding.
    """
    run = as_run(nudged, "the nudged run")
    pair = compare_runs(comparison.candidate, run, atol=comparison.atol, rtol=comparison.rtol)
    spread = {q: float(np.nanmax(d)) if d.size else 0.0 for q, d in pair.differences.items()}
    leaves = {q: p is not None for q, p in pair.partings.items()}
    observed = {q: float(np.nanmax(d)) for q, d in comparison.differences.items() if d.size}
    parted = [q for q, p in comparison.partings.items() if p is not None]
    if pair.worst is not None:
        spread["weights"], leaves["weights"] = pair.worst.difference, pair.weights_outside
        if comparison.worst is not None:
            observed["weights"] = comparison.worst.difference
            if comparison.weights_outside:
                parted.append("weights")
    if pair.evaluation:
        spread["evaluation"] = max(metric.difference for metric in pair.evaluation)
        leaves["evaluation"] = bool(pair.evaluation_outside)
    if comparison.evaluation:
        observed["evaluation"] = max(metric.difference for metric in comparison.evaluation)
        if comparison.evaluation_outside:
            if "evaluation" not in spread:  # not a schedule: rounding is not ruled out
                return RoundingCheck(
                    spread, leaves, UNDECIDED,
                    "the evaluation parts and the nudged run has none: evaluate it too",
                )  # fmt: skip
            parted.append("evaluation")
    if not parted:
        return RoundingCheck(spread, leaves, WITHIN, "nothing left its tolerance")
    for quantity in parted:
        if quantity == "learning_rates" or quantity not in spread:
            why = "a schedule is not trained" if quantity == "learning_rates" else "not in both"
            return RoundingCheck(spread, leaves, REAL, f"{quantity} parts ({why})")
        if not leaves[quantity]:
            return RoundingCheck(
                spread,
                leaves,
                REAL,
                (
                    f"{quantity}: one ulp at the start grows to "
                    f"{format_difference(spread[quantity])}, within the tolerance the runs leave "
                    f"({format_difference(observed[quantity])}): not explained by one ulp at the "
                    "start"
                ),
            )
        if observed[quantity] > factor * spread[quantity]:
            return RoundingCheck(
                spread,
                leaves,
                REAL,
                (
                    f"{quantity}: {format_difference(observed[quantity])} is more than {factor:g} "
                    f"times what one ulp grows to ({format_difference(spread[quantity])})"
                ),
            )
    return RoundingCheck(
        spread,
        leaves,
        AMPLIFIED_ROUNDING,
        (
            f"one ulp grows past the tolerance too ({', '.join(parted)}), as far as the observed "
            "difference: rounding amplified by training explains it"
        ),
    )


@dataclass(frozen=True)
class Cause:
    """A likely cause from notebook 04's checklist and why the observation points to it."""

    name: str
    why: str


def _integer_ratio(a: float, b: float) -> int | None:
    """n >= 2 where a / b or b / a is n: a reduction over n replicas or examples."""
    if a == 0 or b == 0 or not (math.isfinite(a) and math.isfinite(b)):
        return None
    ratio = max(abs(a / b), abs(b / a))
    # Float32 sums keep the factor to about 1e-6 of it. A random ratio lands within 2e-6 * n
    # of an integer n with a chance of about 4e-6 * n (at 1e-5 * n a random 85.9993 was taken).
    n = round(ratio)
    return n if 2 <= n <= 1024 and abs(ratio - n) <= 2e-6 * n else None


def _repeats(values: np.ndarray, reference: np.ndarray) -> int | None:
    """The longest block length k >= 2 in which `values` repeat where `reference` does not.

    At least two blocks must differ: a loss constant over the whole run is no per-call log.
    """
    for k in range(min(len(values) // 2, 32), 1, -1):  # the longest block: 4, not 2
        blocks = values[: len(values) // k * k].reshape(-1, k)
        ref = reference[: len(reference) // k * k].reshape(-1, k)
        if (
            np.all(blocks == blocks[:, :1])
            and len(np.unique(blocks[:, 0])) >= 2
            and not np.all(ref == ref[:, :1])
        ):
            return k
    return None


@dataclass(frozen=True)
class _Seen:
    """What the rules read: the comparison, its first parting step and the one-ulp check."""

    comparison: Comparison
    rounding: RoundingCheck | None

    @property
    def first(self) -> int | None:
        return self.comparison.first_step

    def part(self, quantity: str) -> Parting | None:
        return self.comparison.partings.get(quantity)

    def logged(self, quantity: str) -> bool:
        return quantity in self.comparison.differences

    @property
    def after_updates(self) -> bool:
        """Equal at step 0, parted later, with the same rates: what training changed."""
        return self.first is not None and self.first >= 1 and self.part("learning_rates") is None

    @property
    def loss_only_at_step_0(self) -> bool:
        """The loss parts at step 0 where the logged gradient does not."""
        loss, norm = self.part("losses"), self.part("gradient_norms")
        return (
            loss is not None
            and loss.step == 0
            and self.logged("gradient_norms")
            and (norm is None or norm.step > 0)
        )

    @property
    def start_differs(self) -> bool:
        """Step 0's forward pass differs: its loss, or its gradient where no loss is logged."""
        loss, norm = self.part("losses"), self.part("gradient_norms")
        if self.first != 0 or self.loss_only_at_step_0:
            return False
        if loss is not None and loss.step == 0:
            return True
        return not self.logged("losses") and norm is not None and norm.step == 0

    @property
    def weights_only(self) -> bool:
        return self.comparison.weights_outside and self.first is None

    @property
    def statistics_only(self) -> bool:
        worst = self.comparison.worst
        return self.weights_only and _is_statistic(worst.variable if worst else "")


def _is_statistic(name: str) -> bool:
    """A batch norm's moving mean or variance, which training updates but no loss reads."""
    return "moving_variance" in name or "moving_mean" in name


def _amplified_rounding(seen: _Seen) -> str | None:
    if seen.rounding is not None:
        return seen.rounding.reason if seen.rounding.verdict == AMPLIFIED_ROUNDING else None
    loss, first = seen.comparison.differences.get("losses"), seen.first
    if not seen.after_updates or loss is None or first is None or loss.size <= first:
        return None
    nonzero = np.flatnonzero(loss[:first] > 0)
    if nonzero.size and np.all(np.diff(loss[nonzero[0] : first + 1]) >= 0):
        return (
            f"the loss differs within the tolerance from step {int(nonzero[0])} and grows until "
            f"step {first}: rounding amplified by training, or a small constant difference such "
            "as an optimizer epsilon (amplified_rounding tells)"
        )
    return None


def _schedule(seen: _Seen) -> str | None:
    rate = seen.part("learning_rates")
    if rate is None:
        return None
    return (
        f"the rate differs at step {rate.step} ({rate.baseline:g} against {rate.candidate:g}): "
        "warm-up, boundaries, decay steps, or the step the schedule reads (TF1's global_step "
        "against optimizer.iterations)"
    )


def _steps_per_function(seen: _Seen) -> str | None:
    base, cand = seen.comparison.baseline.stepwise, seen.comparison.candidate.stepwise
    for quantity in ("losses", "gradient_norms"):
        if quantity in base and quantity in cand:
            k = _repeats(cand[quantity], base[quantity])
            if k:
                return (
                    f"the candidate's {quantity} repeat in blocks of {k}: one value logged per "
                    "function call of several steps (steps_per_execution, a loop in "
                    "tf.function): log inside the step"
                )
    return None


def _logged_loss(seen: _Seen) -> str | None:
    if not seen.loss_only_at_step_0:
        return None
    loss = seen.part("losses")
    n = _integer_ratio(loss.baseline, loss.candidate) if loss else None
    factor = f" (by a factor of {n})" if n else ""
    return (
        f"the loss differs at step 0{factor} but the gradient does not: the two sides log "
        "different quantities (regularization included or not, a per-replica value)"
    )


def _loss_reduction(seen: _Seen) -> str | None:
    for quantity in ("losses", "gradient_norms"):
        p = seen.part(quantity)
        if p is None or (quantity == "losses" and seen.loss_only_at_step_0):
            continue  # a loss scaled where the gradient is not is only what is logged
        n = _integer_ratio(p.baseline, p.candidate)
        if n is not None:
            return (
                f"at step {p.step} the {quantity} differ by a factor of {n}: a mean per replica "
                f"summed over {n} replicas, or a sum where TF1 averages (compute_average_loss "
                "with the global batch)"
            )
    loss, norm = seen.part("losses"), seen.part("gradient_norms")
    step_0_gradient_only = norm is not None and norm.step == 0 and (loss is None or loss.step > 0)
    if seen.first == 0 and step_0_gradient_only and seen.logged("losses"):
        return (
            "the loss of step 0 agrees but its gradient does not: the loss's scaling for "
            "the gradient (a per-replica mean, scale_regularization_loss)"
        )
    if seen.first == 1 and seen.logged("losses") and not seen.logged("gradient_norms"):
        return (
            "step 0's loss agrees and step 1's does not: a gradient scaled otherwise (a "
            "per-replica mean, scale_regularization_loss) moves the first update as an "
            "optimizer setting would; log gradient_norms to tell them apart"
        )
    return None


def _at_start(why: str):
    """A rule that fires where step 0's forward pass differs, with the reason `why`."""
    return lambda seen: why if seen.start_differs else None


def _optimizer_settings(seen: _Seen) -> str | None:
    if seen.after_updates and seen.first == 1:
        return (
            "step 0 agrees and step 1 does not: the first update differs (optimizer epsilon, "
            "initial accumulator, slots carried over, Nesterov)"
        )
    if seen.weights_only and not seen.statistics_only:
        return (
            "only the final weights differ: the last step's update, which no logged loss shows "
            "(optimizer epsilon, slots, momentum rule)"
        )
    return None


def _clipping(seen: _Seen) -> str | None:
    base = seen.comparison.baseline
    norms, first = base.stepwise.get("gradient_norms"), seen.first
    if not seen.after_updates or norms is None or first is None:
        return None  # without norms nothing says where clipping would act
    if base.clip_norm is not None:  # the baseline knows its clip: where it acted is a fact
        acted = [int(step) for step in np.flatnonzero(norms[:first] > base.clip_norm)]
        if not acted:
            return None
        where = ("step " if len(acted) == 1 else "steps ") + ", ".join(map(str, acted))
        return (
            f"the baseline's clip acted before the parting ({where}: "
            f"global norm above clip_norm {base.clip_norm:g}): clip the gradient of the whole "
            "batch, by the norm of the replicas' summed gradients, not each replica's own"
        )
    if norms[first - 1] > np.max(norms[: first - 1], initial=-np.inf):
        return (
            f"global-norm clipping first acts at a step whose global norm exceeds all before: "
            f"step {first - 1}'s update (its norm {norms[first - 1]:.4g} is the largest yet)"
        )
    return None


def _momentum_rule(seen: _Seen) -> str | None:
    rates, first = seen.comparison.baseline.stepwise.get("learning_rates"), seen.first
    if not seen.after_updates or rates is None or first is None or first < 2:
        return None
    if np.any(rates[1:first] != rates[: first - 1]):
        return (
            "the rate changed before the parting: TF1's momentum sums gradients and Keras SGD "
            "sums steps (lr x gradient), equal while the rate is constant"
        )
    return None


def _data_order(seen: _Seen) -> str | None:
    if seen.after_updates and seen.first is not None and seen.first >= 2:
        return (
            f"the first {seen.first} steps agree: a later batch differs (an epoch boundary: "
            "shuffle, repeat and drop_remainder order)"
        )
    return None


def _statistics(seen: _Seen) -> str | None:
    worst = seen.comparison.worst
    if not seen.comparison.weights_outside or not _is_statistic(worst.variable):
        return None
    why = (
        "the moving statistics, which the training loss never reads (TF1's n/(n-1) variance, "
        "per-replica statistics)"
    )
    if seen.first is None:
        return f"only the final weights differ, worst in {worst.variable}: {why}"
    return (
        f"the worst final weight is {worst.variable}, a moving statistic: {why}; the training "
        f"parts too (step {seen.first}), so compare the statistics on their own as well"
    )


# Notebook 04's checklist, most telling observation first: each rule reads what was seen and
# returns why it points to its cause, or None.
CHECKLIST: dict[str, Callable[[_Seen], str | None]] = {
    "amplified rounding": _amplified_rounding,
    "learning-rate schedule": _schedule,
    "steps per function": _steps_per_function,
    "logged loss": _logged_loss,
    "loss reduction": _loss_reduction,
    "initial weights": _at_start(
        "the loss of step 0 precedes any update: a variable not carried over, or a same-shape "
        "swap among the matches by creation order (Mapping.report())"
    ),
    "per-replica batch": _at_start(
        "step 0 sees other examples: a dataset batched per replica for fit (a step of global "
        "batch / replicas examples), or another data order or preprocessing"
    ),
    "batch-norm statistics or dropout": _at_start(
        "the first forward pass differs: batch norm over each replica's share "
        "(synchronized=True), its epsilon, or dropout's random masks"
    ),
    "matmul precision": _at_start(
        "TPUs multiply float32 matrices in bfloat16 passes by default and GPUs in TF32, which "
        "can differ beyond 1e-5 at step 0 with no bug: compare both sides at full float32 "
        "precision (on the CPU, or tf.config.experimental.enable_tensor_float_32_execution"
        "(False) on a GPU) before looking further"
    ),
    "optimizer settings": _optimizer_settings,
    "global-norm clipping": _clipping,
    "momentum rule": _momentum_rule,
    "data order": _data_order,
    "batch-norm statistics": _statistics,
}


def likely_causes(comparison: Comparison, rounding: RoundingCheck | None = None) -> list[Cause]:
    """Notebook 04's checklist (`CHECKLIST`), ranked by what `comparison` (and the one-ulp
    check, when given) observed.

    Empty when nothing parts. Each rule fires only where its observation points to the
    cause; the reasons are in the `why` of each Cause. A one-ulp check that finds the
    difference real takes amplified rounding off the list.
    """
    seen = _Seen(comparison, rounding)
    causes = []
    for name, rule in CHECKLIST.items():
        why = rule(seen)
        if why is not None:
            causes.append(Cause(name, why))
    return causes
