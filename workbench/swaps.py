"""Catch swapped same-shape layers: the first loss of the mapping and of each exchange of two.

Names and shapes cannot tell two 3x3x8x8 convolutions apart. A model that builds them in
another order than the `model_fn` gets them swapped by creation order, and the rules a reader
writes can swap them too; `assign()` accepts either. What tells is the network's output: at
`model.ckpt-0`, before any update, the loss of the baseline's first batch must be TF1's first
loss (notebook 10's "A swap of two same-shape layers"). `check_swaps` assigns the mapping and
each alternative (`Mapping.alternatives()`: every exchange of two same-shape layers of one
kind, or every resolution of the ambiguous variables), asks the reader's `first_loss` for
that loss, and keeps the one assignment that reproduces it. Exchanges of two layers are tried,
not rotations of three: three layers built in a rotated order give NO_MATCH.

Where the loss cannot tell (BERT's initial weights, drawn at 0.02, give every order of two
attention kernels the same first loss), the first update can: with `first_step` (one
training step of the reader's, from the weights just assigned) and the baseline's
`after_first_step()`, an assignment fits only when each variable's update also matches TF1's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Mapping as MappingType
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.compare import ATOL, RTOL
from workbench.mapping import AMBIGUOUS, Mapping
from workbench.text import format_difference

# SwapCheck.verdict
CONFIRMED, SWAPPED, RESOLVED, NO_MATCH, UNDECIDED_ORDER = (
    "confirmed",
    "swapped",
    "resolved",
    "no assignment reproduces the first loss",
    "undecided",
)
AS_MAPPED = "as mapped"
# A first update fits TF1's when no variable's differs by more than this fraction of the
# largest TF1 update of that variable: rounding moves an update by ulps, an exchanged kernel
# by its whole size.
UPDATE_RTOL = 1e-3


@dataclass(frozen=True)
class Trial:
    """One assignment tried: its first loss, or why no loss was needed."""

    assignment: str  # AS_MAPPED, `conv2d_1 <-> conv2d_2`, or an ambiguous names' assignment
    loss: float | None
    difference: float | None  # |loss - the baseline's first loss|
    note: str = ""
    update_gap: float | None = None  # the worst variable's update gap, relative (first_step)


@dataclass(frozen=True)
class SwapCheck:
    """What `check_swaps` tried and kept; `mapping`'s matched pairs are assigned when it
    returns."""

    trials: list[Trial]
    bound: float
    verdict: str
    reason: str
    mapping: Mapping

    def summary(self) -> str:
        lines = [f"verdict: {self.verdict} ({self.reason})"]
        for trial in self.trials:
            if trial.difference is None:
                lines.append(f"{trial.assignment}: not run, {trial.note}")
                continue
            within = trial.difference <= self.bound
            gap = (
                format_difference(trial.difference, self.bound)
                if within
                else format_difference(trial.difference, at_least=self.bound)
            )
            line = f"{trial.assignment}: first loss {trial.loss:.8g}, |diff| {gap}"
            if trial.update_gap is not None:
                fits = trial.update_gap <= UPDATE_RTOL
                line += ", first update off by " + (
                    format_difference(trial.update_gap, UPDATE_RTOL)
                    if fits
                    else format_difference(trial.update_gap, at_least=UPDATE_RTOL)
                )
            lines.append(line)
        return "\n".join(lines)


def check_swaps(
    mapping: Mapping,
    first_loss: Callable[[], float],
    baseline_loss: float,
    allow_unmatched: Sequence[str] = (),
    limit: int = 24,
    first_step: Callable[[], Any] | None = None,
    after_first_step: MappingType[str, Any] | None = None,
) -> SwapCheck:
    """Try the mapping and each alternative on the first batch; keep the one that fits.

    `first_loss`: no arguments, returns the model's loss of the baseline's first batch at the
    weights just assigned, without an update (training=True where TF1's step ran so: batch
    statistics, TF1's dropout masks). With `TF1Dropout`, each call must draw step 0's mask:
    the op keeps its random state between calls, so build a new tf.function in
    each call rather than reusing one. `baseline_loss`: TF1's loss of that step (the
    baseline's `losses[0]`). The bound is compare_runs' for losses: ATOL + RTOL x |loss|.
    Each trial is assigned first, and the kept assignment is assigned last, so state that
    `first_loss` moves (batch norm's moving statistics) is the checkpoint's again. Where the
    mapping had ambiguous variables and no way or several ways to assign them fit, the
    returned `mapping` is that ambiguous one: its matched pairs are assigned again, and the
    ambiguous variables keep the values of the last way tried.
    Verdicts: CONFIRMED (only the mapping as made fits), SWAPPED (only another one fits; it is
    the returned `mapping`), RESOLVED (the mapping had ambiguous variables and one way to
    assign them fits; it is the returned `mapping`), NO_MATCH (none fits: something other
    than the order differs, see likely_causes; its reason names the TF2 variables that
    `allow_unmatched` left to the reader, whose values the check cannot vouch for) and
    UNDECIDED_ORDER (several fit: the first loss cannot tell them apart).
    `first_step` with `after_first_step` (the baseline's `after_first_step()`): after the
    loss, one training step of the reader's from the assigned weights (its optimizer and
    rate as TF1's first step, dropout off or TF1's masks); an assignment fits only if every
    matched model variable's update is also within UPDATE_RTOL of TF1's, relative to TF1's
    largest update of that variable.
    """
    if (first_step is None) != (after_first_step is None):
        raise ValueError("check_swaps: give first_step and after_first_step together")
    bound = ATOL["losses"] + RTOL["losses"] * abs(float(baseline_loss))
    alternatives = mapping.alternatives(limit)
    ambiguous = bool(mapping.candidates())
    runs = ([] if ambiguous else [(AS_MAPPED, mapping, False)]) + [
        (a.description, a.mapping, a.equal) for a in alternatives
    ]
    trials, fitting = [], []
    for name, candidate, equal in runs:
        if equal:
            trials.append(
                Trial(name, None, None, "equal values in the checkpoint: the same model either way")
            )
            continue
        candidate.assign(allow_unmatched)
        loss = float(first_loss())
        difference = abs(loss - float(baseline_loss))
        gap = None
        if first_step is not None and after_first_step is not None:
            candidate.assign(allow_unmatched)  # first_loss may have moved batch statistics
            first_step()
            gap = _update_gap(candidate, after_first_step)
        trials.append(Trial(name, loss, difference, update_gap=gap))
        if difference <= bound and (gap is None or gap <= UPDATE_RTOL):
            fitting.append((name, candidate))
    kept = fitting[0][1] if len(fitting) == 1 else mapping
    verdict, reason = _verdict(fitting, ambiguous, trials)
    if first_step is not None:  # fitting meant the first update too
        reason = reason.replace("the first loss", "the first loss and update")
    outside = [r.tf2 for r in mapping.problems() if r.tf2 and r.status != AMBIGUOUS]
    if verdict == NO_MATCH and outside:  # allowed unmatched: the reader assigned them, or not
        reason += (
            f"; or the TF2 variables the mapping left to you ({', '.join(outside)}): check the "
            "values you gave them"
        )
    left = [r.tf1 or r.tf2 for r in kept.problems()]  # the ambiguous ones, if any are left
    kept.assign([*allow_unmatched, *left])
    return SwapCheck(trials, bound, verdict, reason, kept)


def _update_gap(candidate: Mapping, after: MappingType[str, Any]) -> float:
    """The largest difference between a variable's TF2 and TF1 first updates, relative to
    TF1's largest update of that variable, over the matched model variables."""
    worst = 0.0
    for name, value in candidate.tf2_values(weights_only=True).items():
        if name not in after:
            continue
        start = np.asarray(candidate.value(name), dtype=np.float64)
        tf1_update = np.asarray(after[name], dtype=np.float64) - start
        tf2_update = np.asarray(value, dtype=np.float64) - start
        scale = float(np.max(np.abs(tf1_update))) if tf1_update.size else 0.0
        gap = float(np.max(np.abs(tf2_update - tf1_update))) if tf1_update.size else 0.0
        worst = max(worst, gap / scale if scale > 0 else (0.0 if gap == 0 else np.inf))
    return worst


def _verdict(fitting: list, ambiguous: bool, trials: list[Trial]) -> tuple[str, str]:
    if len(fitting) == 1 and fitting[0][0] == AS_MAPPED:
        return CONFIRMED, (
            "the mapping as made reproduces the first loss, and no exchange that changes the "
            "model does"
        )
    if len(fitting) == 1 and ambiguous:
        return RESOLVED, (
            f"of the ways to assign the ambiguous variables, only {fitting[0][0]} reproduces "
            "the first loss; it is assigned, use the check's mapping"
        )
    if len(fitting) == 1:
        return SWAPPED, (
            f"only {fitting[0][0]} reproduces the first loss: the model builds these layers in "
            "another order than the model_fn (or a rule names them the wrong way round); the "
            "check's mapping is assigned, use it"
        )
    if not fitting:
        closest = min((t for t in trials if t.difference is not None), key=lambda t: t.difference)
        left = "the ambiguous variables keep the last way tried; " if ambiguous else ""
        return NO_MATCH, (
            f"{left}the closest, {closest.assignment}, is {closest.difference:.3g} off: no "
            "exchange of two same-shape layers explains the first loss (likely_causes at step "
            "0: per-replica batch, batch norm or dropout, matmul precision; or layers built in "
            "a rotated order, which rules fix)"
        )
    names = ", ".join(name for name, _ in fitting)
    kept = "the mapping as made is assigned"
    if ambiguous:
        kept = "the ambiguous variables keep the last way tried"
    return UNDECIDED_ORDER, (
        f"{names} all reproduce the first loss, which cannot tell them apart; {kept}: add "
        "rules, or compare a later step"
    )
