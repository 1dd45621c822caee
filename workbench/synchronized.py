"""The step-synchronized comparison: each TF2 step starts from TF1's state, so none amplifies.

A free-running comparison trains both sides for N steps and compares: in a chaotic model one
ulp at the start grows past any tolerance, so a correct port and a real mistake can look
alike (notebook 10's one-ulp check). Here the TF2 side takes one step at a time: before step k
the mapping assigns TF1's whole state after k steps (weights, optimizer slots, moving
averages, the step counter; `Baseline.state(k)`), the reader's `train_step` trains on batch k,
and TF2's state is compared with TF1's after k + 1. A difference cannot compound, so a correct
port stays at the rounding of one step, and a mistake shows at the first step where it acts
(the step, and the variables that part there, grouped by layer and by kind: weight, slot,
average, step counter).

The bound of one step. Both sides start step k from the same float32 values; what differs is
the order of the operations (sums over the batch and the replicas, fused kernels), each off
by a few float32 ulps of the quantities it combines. So each element may part by a few ulps
of the variable and a small fraction of that step's update: `|tf2 - tf1| <= ULPS x eps x |tf1|
+ UPDATE_RTOL x max|tf1 update of that variable|`, with eps = 2**-23. A mistake in the rule,
a setting or the rate moves an update by far more than UPDATE_RTOL of itself; a variable
whose update is zero on both sides must match to the ulp.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.errors import FriendlyError
from workbench.text import format_table

ULPS = 8.0
EPS32 = 2.0**-23
UPDATE_RTOL = 1e-3


class SynchronizedError(FriendlyError, ValueError):
    """The synchronized comparison cannot run as asked; the message says what to change."""


@dataclass(frozen=True)
class Part:
    """One variable that parts at a step: its TF1 name, kind, worst |diff| and bound there."""

    name: str
    kind: str
    difference: float
    bound: float


@dataclass
class Synchronized:
    """What `compare_synchronized` found: per step, the variables outside their bound."""

    steps: int
    parts: dict[int, list[Part]] = field(default_factory=dict)
    worst: dict[int, float] = field(default_factory=dict)  # step -> max difference / bound

    @property
    def first_step(self) -> int | None:
        return min(self.parts) if self.parts else None

    @property
    def passed(self) -> bool:
        return not self.parts

    def layers(self, step: int) -> dict[str, list[str]]:
        """The variables that part at `step`, by layer (the TF1 name's parent path)."""
        grouped: dict[str, list[str]] = {}
        for part in self.parts.get(step, []):
            layer = part.name.rsplit("/", 1)[0] if "/" in part.name else part.name
            grouped.setdefault(layer, []).append(part.name.rsplit("/", 1)[-1])
        return grouped

    def summary(self) -> str:
        if self.passed:
            ratio = max(self.worst.values(), default=0.0)
            return (
                f"synchronized: every one of {self.steps} steps, started from TF1's state, "
                f"matches TF1's next state within the bound of one step (worst at "
                f"{ratio:.2g} of its bound)"
            )
        step = self.first_step
        parts = self.parts[step]
        kinds = sorted({p.kind for p in parts})
        lines = [
            f"synchronized: step {step} parts (started from TF1's state after {step} "
            f"step{'' if step == 1 else 's'}): "
            f"{len(parts)} variable(s), kinds: {', '.join(kinds)}; later steps parting: "
            f"{len(self.parts) - 1}"
        ]
        rows = [
            [p.name, p.kind, f"{p.difference:.3g}", f"{p.bound:.3g}"]
            for p in sorted(parts, key=lambda p: -p.difference / max(p.bound, 1e-300))[:12]
        ]
        lines.append(format_table(["TF1 variable", "kind", "|diff|", "bound"], rows))
        return "\n".join(lines)


def one_step_bound(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The elementwise bound of one step's rounding (the module's docstring derives it)."""
    update = np.abs(after - before)
    largest = float(update.max()) if update.size else 0.0
    return ULPS * EPS32 * np.abs(after) + UPDATE_RTOL * largest


def compare_synchronized(
    baseline: Any,
    mapping: Any,
    train_step: Callable[[Any, Any], Any],
    steps: int | None = None,
    skip: Sequence[str] = (),
) -> Synchronized:
    """Start each TF2 step from TF1's state and compare the step's result with TF1's next.

    `baseline`: a `Baseline` with states (`state_steps`). `mapping`: the `map_checkpoint`
    mapping of the baseline's checkpoint onto the model (and optimizer: its slots and step
    counter are set from TF1's state too). `train_step(features, labels)`: one training step
    of the reader's on one batch (their `train_on_batch`, or a `strategy.run` step), with
    dropout off or TF1's masks. `steps`: how many (all the states by default). `skip`: TF1
    names (regular expressions) not compared, such as a variable the port computes otherwise.
    """
    import re

    available = int(getattr(baseline, "state_steps", 0) or 0)
    if available < 1:
        raise SynchronizedError(
            "this baseline holds no TF1 state after its steps (recorded by an older "
            "workbench): record it again"
        )
    steps = available if steps is None else steps
    if not 1 <= steps <= available:
        raise SynchronizedError(
            f"steps={steps}: the baseline holds TF1's state after steps 1 to {available}"
        )
    batches = baseline.batches()
    result = Synchronized(steps)
    state = baseline.state(0)
    for step in range(steps):
        if step == 0:
            mapping.assign()
        else:
            mapping.assign_values(state)
        train_step(*batches[step])
        after = baseline.state(step + 1)
        got = mapping.tf2_values()
        parts, worst = [], 0.0
        for name, value in got.items():
            if name not in after or any(re.search(p, name) for p in skip):
                continue
            tf1_before = np.asarray(state[name], dtype=np.float64)
            tf1_after = np.asarray(after[name], dtype=np.float64)
            tf2_after = np.asarray(value, dtype=np.float64)
            if tf2_after.shape != tf1_after.shape:
                raise SynchronizedError(
                    f"{name}: shape {tf2_after.shape} in TF2, {tf1_after.shape} in TF1's state"
                )
            kind = mapping.kind(name)
            if kind == "step":
                difference = float(np.max(np.abs(tf2_after - tf1_after)))
                bound = 0.0
            else:
                bounds = one_step_bound(tf1_before, tf1_after)
                gaps = np.abs(tf2_after - tf1_after)
                outside = ~(gaps <= bounds)  # NaN is outside
                difference = float(np.max(gaps)) if gaps.size else 0.0
                bound = float(np.max(bounds)) if bounds.size else 0.0
                if not outside.any():
                    ratio = float(np.max(gaps / np.maximum(bounds, 1e-300))) if gaps.size else 0.0
                    worst = max(worst, ratio)
                    continue
                at = np.unravel_index(int(np.argmax(np.where(outside, gaps, -1.0))), gaps.shape)
                difference, bound = float(gaps[at]), float(bounds[at])
            if difference > bound or np.isnan(difference):
                parts.append(Part(name, kind, difference, bound))
        result.worst[step] = worst
        if parts:
            result.parts[step] = parts
        state = after
    return result
