"""The step-synchronized comparison: each TF2 step starts from TF1's state, so none amplifies.

A free-running comparison trains both sides for N steps and compares: in a chaotic model one
ulp at the start grows past any tolerance, so a correct port and a real mistake can look
alike (notebook 10's one-ulp check). Here the TF2 side takes one step at a time: before step k
the mapping assigns TF1's whole state after k steps (weights, optimizer slots, moving
averages, the step counter; `Baseline.state(k)`), the reader's `train_step` trains on batch k,
and TF2's state is compared with TF1's after k + 1. A difference cannot compound, so a correct
port stays at the rounding of one step, and a mistake shows at the first step where it acts
(the step, and the variables that part there, grouped by layer and by kind: weight, slot,
average, step counter), where it moves some element by more than the bound below; a smaller
effect, or one in a variable left out, passes.

The bound of one step. Both sides start step k from the same float32 values; what differs is
the order of the operations (sums over the batch and the replicas, fused kernels), each off
by a few float32 ulps of the quantities it combines. So each element may part by a few ulps
of the variable and a small fraction of that step's update: `|tf2 - tf1| <= ULPS x eps x |tf1|
+ UPDATE_RTOL x max|tf1 update of that variable|`, with eps = 2**-23. The constants are chosen
margins, not a proof: on the tests' models a correct port stays under 0.002 of this bound, and
a mistake in the rule, a setting or the rate moves some element's update by far more than
UPDATE_RTOL of the largest; where TF1's update is zero, the variable must match within 8 ulps.
An optimizer that normalizes each element (Adam, RMSProp) turns a gradient element that is
mostly cancellation into an update whose rounding may exceed the bound: pass `skip=` for such
a variable, and say so. TF1's Momentum slot (a sum of gradients) and Keras SGD's (-lr times
that sum) are different quantities, so one state cannot start both: a Keras SGD port's slots
part here by construction (the causes say so; compare it free-running, `compare_runs`), while
an optimizer that keeps TF1's sum (notebook 10's `TF1Momentum`) compares as it is.

Where a step parts, its stages say where: the rate (`rate()`, against TF1's recorded rate),
the forward pass (the loss `train_step` returns, against TF1's loss from the same state and
batch), the gradients (a returned `gradient_norm`, against TF1's norm before any clip; and
returned `gradients`, each variable's against the one the baseline recorded, with the bound of
one step taken over the gradient: `ULPS x eps x |g| + UPDATE_RTOL x max|g|`, plus `ULPS x eps`
of the largest element of all the gradients: `gradient_bound`), then which kinds of variable
part (weights, slots, averages, batch-norm statistics, the step). Given the update half of the
step (`apply_gradients`), TF1's own gradients are applied from TF1's state as well and the
weights, slots and step compared on their own: the optimizer's side apart from the gradients.
`Synchronized.causes()` names the causes that evidence supports, each with the observation it
rests on, and nothing that the observations rule out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.compare import ATOL, RTOL, _integer_ratio
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


@dataclass(frozen=True)
class Stage:
    """One quantity of a step compared on its own: the rate, the loss, the gradient norm."""

    name: str
    tf1: float
    tf2: float
    parted: bool


@dataclass
class Synchronized:
    """What `compare_synchronized` found: per step, the variables outside their bound."""

    steps: int
    parts: dict[int, list[Part]] = field(default_factory=dict)
    worst: dict[int, float] = field(default_factory=dict)  # step -> max difference / bound
    stages: dict[int, list[Stage]] = field(default_factory=dict)  # step -> rate, loss, norm
    compared: dict[int, dict[str, int]] = field(default_factory=dict)  # step -> kind -> count
    # step -> the variables whose gradient (before any clip) parts from TF1's, and how many
    # gradients were compared there (absent: the baseline or train_step gave none).
    gradient_parts: dict[int, list[Part]] = field(default_factory=dict)
    gradients_compared: dict[int, int] = field(default_factory=dict)
    gradients_note: str | None = None  # why train_step's gradients were not compared
    # step -> the variables (weights, slots, the step counter) outside their bound after
    # `apply_gradients` applied TF1's own gradients from TF1's state, and how many were
    # compared there (absent: no apply_gradients, or the baseline holds no gradients).
    update_parts: dict[int, list[Part]] = field(default_factory=dict)
    update_compared: dict[int, int] = field(default_factory=dict)
    update_note: str | None = None  # why the update from TF1's gradients was not compared
    # What the baseline says of its graph, for causes that apply to it only: the steps where
    # its clip acted (None: no clip, or no norm recorded) and its clip_norm, its random ops
    # (dropout's masks), whether it has batch-norm statistics or layer norms, its batch size.
    clip_acted: list[int] | None = None
    clip_norm: float | None = None
    random_ops: int = 0
    batch_norm: bool = False
    layer_norm: bool = False
    batch_size: int | None = None

    def causes(self) -> list[tuple[str, str]]:
        """(cause, the observation it rests on) for the first step that parts, most direct
        first; empty when every step matched."""
        step = self.first_step
        if step is None:
            return []
        stages = {stage.name: stage for stage in self.stages.get(step, [])}
        kinds = {part.kind for part in self.parts[step]}
        parted = [name for name, stage in stages.items() if stage.parted]
        gradients = self.gradient_parts.get(step, [])
        found = []
        if "rate" in parted:
            rate = stages["rate"]
            found.append(("the learning-rate schedule", f"at step {step} the rate is "
                          f"{rate.tf2:.6g}, TF1's {rate.tf1:.6g}"))  # fmt: skip
        if "loss" in parted:
            loss = stages["loss"]
            said = f"from TF1's state and batch, the loss is {loss.tf2:.8g}, TF1's {loss.tf1:.8g}"
            reduction = self._reduction_cause(loss)
            if reduction is not None:
                found.append((reduction, said))
            found.append((self._forward_cause(), said))
        compared = self.gradients_compared.get(step, 0)
        named = "; ".join(f"{layer}: {', '.join(names)}" for layer, names in
                          self.layers(step, gradients=True).items())  # fmt: skip
        if "loss" not in parted and "gradient_norm" in parted:
            norm = stages["gradient_norm"]
            loss_said = "the loss matches, " if "loss" in stages else ""
            where = (f"; the gradients of {len(gradients)} of {compared} variables part: {named}"
                     if gradients else "")  # fmt: skip
            found.append(("the gradients: the loss's scale across replicas, a regularizer, "
                          "a variable left out of training", f"{loss_said}the gradient "
                          f"norm is {norm.tf2:.6g}, TF1's {norm.tf1:.6g}{where}"))  # fmt: skip
        if gradients and not parted and "loss" not in stages:  # the forward pass is unchecked
            found.append((self._forward_cause(), "the loss was not compared (return it from "
                          "train_step): the gradients may part from the forward pass"))  # fmt: skip
        if gradients and not parted:
            checked = ", ".join(stages) or "no stage"
            found.append(("the backward pass of these variables: a gradient stopped, scaled or "
                          "added where TF1's is not (a regularizer, a layer's setting that acts "
                          "on the gradient alone, a variable frozen or left out of training)",
                          f"{checked} match; the gradients of {len(gradients)} of {compared} "
                          f"variables part: {named}"))  # fmt: skip
        update = self._update_cause(step)
        if update is not None and update[2]:  # the optimizer's side parts on TF1's gradients
            found.append(update[:2])
        written = kinds & set(UPDATED_KINDS)  # what the optimizer's update writes
        if not parted and not gradients and update is not None and not update[2] and written:
            # TF1's own gradients through apply_gradients give TF1's next state: the
            # optimizer, its rate and its clip are ruled out; what train_step computes is not
            found.append(update[:2])
            found += self._other_state_causes(kinds, update[1])
            return found
        if not parted and not gradients:
            checked = ", ".join(stages) or "no stage (train_step returned nothing)"
            if step in self.gradients_compared:
                checked += f", the gradients of all {self.gradients_compared[step]} variables"
            observed = f"{checked} match; what parts: {', '.join(sorted(kinds))}"
            weights = sum(p.kind == "weight" for p in self.parts[step])
            total = self.compared.get(step, {}).get("weight", 0)
            slots = self.compared.get(step, {}).get("slot", 0)
            unchecked = [
                *(["the rate (pass rate= to compare it)"] if "rate" not in stages else []),
                *(
                    ["the gradients (return gradient_norm to compare them)"]
                    if "gradient_norm" not in stages and step not in self.gradients_compared
                    else []
                ),
            ]
            # The slots are built from the gradients applied. Slots linear in the gradient
            # (Adam's m, Momentum's sum) that match bound the clipped gradients to 1e-3 of the
            # slot's largest change, so a clip comes first only where the slots part at the
            # steps TF1's clip acted; a slot of g**2 (Adagrad, RMSProp) or Adam's first step,
            # near lr x sign(g), can leave a flipped element in the weights alone, so there
            # the clip stays, last.
            slots_compared = self.compared.get(step, {}).get("slot", 0)
            momentum_only = "slot" in kinds and all(
                p.name.endswith("/Momentum") for p in self.parts[step] if p.kind == "slot"
            )
            clip = None if momentum_only else self._clip_cause(step, stages)
            clip_first = clip is not None and clip[2] and (
                "slot" in kinds or (not slots_compared and "weight" in kinds)
            )  # fmt: skip
            if clip_first:
                found.append(clip[:2])
            summed = [p.name for p in self.parts[step] if p.name.endswith("/Momentum")]
            if summed:
                found.append(("TF1's Momentum slot holds a sum of gradients, Keras SGD's -lr "
                              "times that sum: a Keras SGD port parts here by construction "
                              "(compare it free-running), an optimizer that keeps TF1's sum "
                              f"does not ({summed[0]} parts)", observed))  # fmt: skip
            if "slot" in kinds:
                found.append(("the slots' update: " + ", ".join([*unchecked, "the optimizer's "
                              "betas or momentum, or its momentum rule"]), observed))  # fmt: skip
            elif weights and slots:
                cause = (
                    f"the update from matching slots ({weights} of {total} weights part): "
                    + ", ".join(
                        [
                            *[u for u in unchecked if not u.startswith("the gradients")],
                            "the optimizer's epsilon (it acts most where gradients are small)",
                            "its bias correction or update rule",
                            "weight decay on other variables than TF1's",
                        ]
                    )
                )
                found.append((cause, observed))
            elif weights:
                cause = f"the update ({weights} of {total} weights part): " + ", ".join(
                    [
                        *unchecked,
                        "the optimizer's rule",
                        "weight decay on other variables than TF1's",
                        *([] if clip is not None else ["a clip per replica or by another norm"]),
                    ]
                )
                found.append((cause, observed))
            if clip is not None and not clip_first and kinds & {"weight", "slot"}:
                found.append(clip[:2])
            found += self._other_state_causes(kinds, observed)
        return found

    @staticmethod
    def _other_state_causes(kinds: set[str], observed: str) -> list[tuple[str, str]]:
        """The causes of the state that the optimizer's update does not write."""
        found = []
        if "statistic" in kinds:
            found.append(("batch norm's moving statistics: their momentum, the variance's "
                          "n/(n-1), or statistics per replica", observed))  # fmt: skip
        if "average" in kinds:
            found.append(("the moving average: its decay, or num_updates (TF1's "
                          "min(decay, (1 + n) / (10 + n)))", observed))  # fmt: skip
        if "step" in kinds:
            found.append(("the step counter: the optimizer's iterations do not advance "
                          "one per step", observed))  # fmt: skip
        return found

    def _update_cause(self, step: int) -> tuple[str, str, bool] | None:
        """What applying TF1's own gradients showed at `step`: (cause, observation, whether
        the update parted), or None where it was not compared. Parting there puts the
        optimizer's side first (its rule, settings, rate, clip) whatever train_step computes;
        matching rules that side out, so what parts comes from the gradients train_step
        computes (its loss, forward or backward pass)."""
        if step not in self.update_compared:
            return None
        compared = self.update_compared[step]
        parted = self.update_parts.get(step, [])
        if parted:
            named = ", ".join(p.name for p in parted[:6]) + (", ..." if len(parted) > 6 else "")
            settings = (
                "its epsilon, betas or momentum, weight decay and the variables it skips"
                if self.compared.get(step, {}).get("slot")
                else "weight decay and the variables it skips"  # no slots: no epsilon, no betas
            )
            return (
                f"the update: the optimizer's rule or settings ({settings}), its learning "
                "rate, or its clip",
                f"from TF1's state, TF1's own gradients through apply_gradients part from TF1's "
                f"next state in {len(parted)} of {compared} variables: {named}",
                True,
            )
        return (
            f"the gradients train_step computes: {self._forward_cause()}; the backward pass; "
            "or a clip in train_step that apply_gradients leaves out",
            f"from TF1's state, TF1's own gradients through apply_gradients give TF1's next "
            f"state in all {compared} variables",
            False,
        )

    def _reduction_cause(self, loss: Stage) -> str | None:
        """A whole factor between the losses points at their reduction (compare's
        `_integer_ratio`: to 2e-6 of it, as float32 sums keep it)."""
        whole = _integer_ratio(loss.tf1, loss.tf2)
        if whole is None:
            return None
        said = f"{whole} times" if abs(loss.tf2) > abs(loss.tf1) else f"1/{whole} of"
        batch = f" of {self.batch_size}" if self.batch_size else ""
        return (
            f"the loss's reduction: TF2's loss is {said} TF1's (a sum where TF1 takes the "
            f"mean over the batch{batch}, or a scale by the replicas)"
        )

    def _forward_cause(self) -> str:
        """The forward pass's cause, naming only what this graph has: dropout's masks where
        TF1 drew random numbers (a dropout only TF2 has is a layer's setting), batch norm and
        layer norm where it has them."""
        named = ["a layer's arithmetic or setting"]
        if self.random_ops:
            named.append(
                f"dropout's masks or another random draw ({self.random_ops} random op(s) "
                "in TF1's step)"
            )
        if self.batch_norm:
            named.append("batch norm per replica or its epsilon")
        if self.layer_norm:
            named.append("layer norm's epsilon")
        return "the forward pass: " + ", ".join(named) + ", or the loss or its reduction"

    def _clip_cause(self, step: int, stages: dict[str, Stage]) -> tuple[str, str, bool] | None:
        """A clip, where the gradients before any clip match: (cause, observation, whether it
        is the first suspect: every step that parts is one where TF1's clip acted). Where TF1's
        clip did not act at the step, or TF1 has none, a clip only TF2 applies (a smaller
        clip_norm, a replica's own norm above it, Keras' clipnorm) is still possible."""
        if "gradient_norm" in stages and stages["gradient_norm"].parted:
            return None
        norm = stages.get("gradient_norm")
        before = f"the gradient norm before the clip matches ({norm.tf1:.6g}), " if norm else ""
        if self.clip_acted is None or self.clip_norm is None:
            return (
                "a clip TF2 applies and TF1 does not (Keras' clipnorm or global_clipnorm)",
                before + "TF1's graph has no clip_by_global_norm (or its norm was not found)",
                False,
            )
        if step not in self.clip_acted:
            return (
                "a clip TF2 applies where TF1's did not act: a clip_norm below "
                f"{self.clip_norm:g}, or each replica's own norm above it",
                before + f"TF1's clip did not act at step {step} (its norm stayed below "
                f"{self.clip_norm:g})",
                False,
            )
        parting = sorted(self.parts)
        only_there = set(parting) <= set(self.clip_acted)
        where = (
            f"every step that parts ({', '.join(map(str, parting))}) is one where TF1's clip "
            f"acted ({', '.join(map(str, self.clip_acted))})"
            if only_there
            else f"TF1's clip acted at step {step}"
        )
        return (
            f"the clip: each replica clipping by its own norm, or by another norm than TF1's "
            f"global one (clip_norm {self.clip_norm:g})",
            before + where,
            only_there,
        )

    @property
    def first_step(self) -> int | None:
        return min(self.parts) if self.parts else None

    @property
    def passed(self) -> bool:
        return not self.parts

    def first_stage(self, step: int) -> str:
        """The first stage that parts at `step`, in the step's order: "rate", "loss",
        "gradient_norm", "gradients" (some variable's), else "update (KINDS)" where only
        variables part after the step, "none" where nothing parts."""
        for stage in self.stages.get(step, []):  # rate, loss, gradient_norm: as computed
            if stage.parted:
                return stage.name
        if self.gradient_parts.get(step):
            return "gradients"
        kinds = sorted({part.kind for part in self.parts.get(step, [])})
        if not kinds:
            return "none"
        updated = set(kinds) & set(UPDATED_KINDS)  # not the statistics or averages alone
        if step in self.update_compared and not self.update_parts.get(step) and updated:
            return "gradients (TF1's own gradients update as TF1 did)"
        return f"update ({', '.join(kinds)})"

    def layers(self, step: int, gradients: bool = False) -> dict[str, list[str]]:
        """The variables that part at `step`, by layer (the TF1 name's parent path; a slot
        goes with its variable's layer, as `kernel/Adam`); `gradients`: the variables whose
        gradient parts there instead."""
        grouped: dict[str, list[str]] = {}
        for part in (self.gradient_parts if gradients else self.parts).get(step, []):
            depth = 2 if part.kind == "slot" and part.name.count("/") >= 2 else 1
            pieces = part.name.rsplit("/", depth)
            layer = pieces[0] if len(pieces) > 1 else part.name
            grouped.setdefault(layer, []).append("/".join(pieces[1:]) or part.name)
        return grouped

    def summary(self) -> str:
        if self.passed:
            ratio = max(self.worst.values(), default=0.0)
            also = " and gradients" if self.gradients_compared else ""
            note = f"\ngradients: {self.gradients_note}" if self.gradients_note else ""
            if self.update_compared:
                note += "\nupdate from TF1's gradients: TF1's state after it at every step"
            if self.update_note:
                note += f"\nupdate from TF1's gradients: {self.update_note}"
            return (
                f"synchronized: every one of {self.steps} steps, started from TF1's state, "
                f"matches TF1's next state{also} within the bound of one step (worst at "
                f"{ratio:.2g} of its bound){note}"
            )
        step = self.first_step
        parts = self.parts[step]
        kinds = sorted({p.kind for p in parts})
        lines = [
            f"synchronized: step {step} parts (started from "
            + (
                f"TF1's state after {step} step{'' if step == 1 else 's'}"
                if step
                else "model.ckpt-0"
            )
            + "): "
            + (f"{len(parts)} variable(s), kinds: {', '.join(kinds)}" if parts else "stages only")
            + f"; later steps parting: {len(self.parts) - 1}"
        ]
        rows = [
            [p.name, p.kind, f"{p.difference:.3g}", f"{p.bound:.3g}"]
            for p in sorted(parts, key=lambda p: -p.difference / max(p.bound, 1e-300))[:12]
        ]
        if rows:
            lines.append(format_table(["TF1 variable", "kind", "|diff|", "bound"], rows))
        elif self.gradient_parts.get(step):
            lines.append("no variable parts after this step: the gradients below part")
        else:
            lines.append(
                "no variable parts at this step, only the stages below: a clip by the global "
                "norm that acts on both sides (or, where no slots are compared, Adam's or "
                "RMSProp's division) can take the same step from a loss of another scale"
            )
        for stage in self.stages.get(step, []):
            state = "parts" if stage.parted else "matches"
            lines.append(f"{stage.name}: {state} (TF2 {stage.tf2:.8g}, TF1 {stage.tf1:.8g})")
        if step in self.gradients_compared:
            parted_gradients = self.gradient_parts.get(step, [])
            compared = self.gradients_compared[step]
            if parted_gradients:
                shown = ", ".join(
                    f"{p.name} ({p.difference:.3g} > {p.bound:.3g})" for p in parted_gradients[:6]
                )
                more = ", ..." if len(parted_gradients) > 6 else ""
                lines.append(
                    f"gradients: {len(parted_gradients)} of {compared} variables part: "
                    f"{shown}{more}"
                )
            else:
                lines.append(f"gradients: all {compared} variables match")
        elif self.gradients_note:
            lines.append(f"gradients: {self.gradients_note}")
        if step in self.update_compared:
            update_parted = self.update_parts.get(step, [])
            compared = self.update_compared[step]
            lines.append(
                f"update from TF1's gradients: {len(update_parted)} of {compared} variables part: "
                + ", ".join(p.name for p in update_parted[:6])
                if update_parted
                else f"update from TF1's gradients: all {compared} variables match"
            )
        elif self.update_note:
            lines.append(f"update from TF1's gradients: {self.update_note}")
        lines.append("causes the evidence supports:")
        lines += [f"- {cause} ({why})" for cause, why in self.causes()]
        return "\n".join(lines)


def gradient_bound(gradient: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """The elementwise bound of one step's rounding in TF1's gradient of a variable: as
    `one_step_bound`, with the gradient's own largest element in place of the update's, plus
    `floor`, `ULPS x eps` of the largest element of all the variables' gradients, for a
    gradient that is zero in theory and rounding noise in practice (an attention key's bias,
    a bias before a batch norm)."""
    largest = float(np.max(np.abs(gradient))) if gradient.size else 0.0
    return _rounding_bound(gradient, largest) + floor


def one_step_bound(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The elementwise bound of one step's rounding (the module's docstring motivates it)."""
    update = np.abs(after - before)
    return _rounding_bound(after, float(update.max()) if update.size else 0.0)


def _rounding_bound(value: np.ndarray, largest_change: float) -> np.ndarray:
    """ULPS float32 spacings of each element of `value`, plus UPDATE_RTOL of the largest
    change the step made (or the largest gradient element): both bounds' shape."""
    return ULPS * EPS32 * np.abs(value) + UPDATE_RTOL * largest_change


STATISTICS = ("moving_mean", "moving_variance")


def _graph_facts(baseline: Any, mapping: Any) -> dict[str, Any]:
    """What the baseline holds that decides which causes apply to its graph."""
    import re

    acted = getattr(baseline, "clip_acted", None)
    names = [str(name) for name in getattr(mapping, "weight_names", lambda: [])()]
    return {
        "clip_acted": acted() if callable(acted) else None,
        "clip_norm": getattr(baseline, "clip_norm", None),
        "random_ops": len(getattr(baseline, "random_ops", []) or []),
        "batch_norm": any(name.rsplit("/", 1)[-1] in STATISTICS for name in names),
        "layer_norm": any(re.search(r"layer_?norm", name, re.I) for name in names),
        "batch_size": getattr(baseline, "batch_size", None),
    }


def _stage(name: str, tf1: Any, tf2: Any) -> Stage | None:
    if tf1 is None or tf2 is None:
        return None
    tf1, tf2 = float(tf1), float(tf2)
    key = {"rate": "learning_rates", "loss": "losses", "gradient_norm": "gradient_norms"}[name]
    bound = ATOL[key] + RTOL[key] * abs(tf1)
    return Stage(name, tf1, tf2, not abs(tf2 - tf1) <= bound)


def _returned(value: Any) -> tuple[Any, Any, Any]:
    """train_step's return: nothing, the loss, or a dict with `loss`, `gradient_norm` and
    `gradients`."""
    if value is None:
        return None, None, None
    if isinstance(value, dict):
        return value.get("loss"), value.get("gradient_norm"), value.get("gradients")
    return value, None, None


def _dense(gradient: Any, name: str = "a variable") -> np.ndarray:
    """A gradient as a NumPy array; a `tf.IndexedSlices` summed into its dense form, as the
    baseline records TF1's. Anything else (one value per replica) is refused in one line."""
    if hasattr(gradient, "indices") and hasattr(gradient, "dense_shape"):
        import tensorflow as tf

        gradient = tf.convert_to_tensor(gradient)
    try:
        return np.asarray(gradient, dtype=np.float64)
    except (TypeError, ValueError):
        raise SynchronizedError(
            f"train_step's gradient of {name} is a {type(gradient).__name__}: give one array "
            "per variable, summed over the replicas (all_reduce SUM, then any replica's value)"
        ) from None


def _variable_ids(variable: Any) -> list[int]:
    """The ids under which a paired variable may come back: itself, the tf.Variable a Keras 3
    variable wraps, a distributed variable's components."""
    found = [id(variable)]
    inner = getattr(variable, "_value", None)
    if inner is not None and hasattr(inner, "assign"):
        found.append(id(inner))
    found += [id(part) for part in getattr(variable, "values", ()) or () if hasattr(part, "assign")]
    return found


def _gradients_by_name(gradients: Any, mapping: Any) -> dict[str, np.ndarray]:
    """train_step's `gradients` by TF1 name: a dict by TF1 name (or the paired TF2 variable's
    name), or a list of `(gradient, variable)` pairs with the variables the mapping paired; a
    None gradient counts as none. Pairs that match no paired variable are refused."""
    pairs = getattr(mapping, "pairs", {})
    if isinstance(gradients, dict):
        tf2_names = {str(tf2).removesuffix(":0"): tf1 for tf1, tf2 in
                     getattr(mapping, "target_names", dict)().items()}  # fmt: skip
        by_name = {}
        for key, value in gradients.items():
            name = str(key) if str(key) in pairs else tf2_names.get(str(key).removesuffix(":0"))
            if name is None:
                raise SynchronizedError(
                    f"train_step's gradients: {key!r} is neither a TF1 name the mapping pairs "
                    "nor the name of a TF2 variable it pairs"
                )
            if value is not None:
                by_name[name] = _dense(value, name)
        return by_name
    try:
        given = [(gradient, variable) for gradient, variable in gradients]
    except (TypeError, ValueError):
        raise SynchronizedError(
            "train_step's gradients: give a list of (gradient, variable) pairs, as "
            "apply_gradients takes them, or a dict by TF1 name"
        ) from None
    if not given:
        raise SynchronizedError(
            "train_step's gradients are empty: return a list of (gradient, variable) pairs (a "
            "zip that apply_gradients has already used is empty), or a dict by TF1 name"
        )
    names = {key: name for name, variable in pairs.items() for key in _variable_ids(variable)}
    matched = [(names[id(v)], g) for g, v in given if id(v) in names]
    if not matched:
        raise SynchronizedError(
            "none of train_step's gradients is paired with a variable of the mapping: pair "
            "each with the model's own variable (model.trainable_variables)"
        )
    return {name: _dense(g, name) for name, g in matched if g is not None}


def _compare_gradients(
    tf1: dict[str, np.ndarray],
    tf2: dict[str, np.ndarray],
    names: Sequence[str],
    unchanged: set[str],
) -> tuple[list[Part], int, float]:
    """TF1's gradient of each of `names` (the mapped weights, less those skipped) against
    TF2's: a variable TF2 gave none for counts as zeros (left out of training), unless TF1's
    step left it `unchanged` too (frozen on both sides). Returns the parts, how many were
    compared, and the worst ratio to the bound."""
    names = [name for name in names if name in tf1]
    largest = max((float(np.max(np.abs(tf1[n]))) for n in names if tf1[n].size), default=0.0)
    floor = ULPS * EPS32 * largest
    parts, compared, worst = [], 0, 0.0
    for name in names:
        expected = np.asarray(tf1[name], dtype=np.float64)
        if name not in tf2 and name in unchanged:
            continue
        got = tf2.get(name, np.zeros_like(expected))
        if got.shape != expected.shape:
            raise SynchronizedError(
                f"{name}: gradient of shape {got.shape} in TF2, {expected.shape} in TF1's"
            )
        compared += 1
        gaps = np.abs(got - expected)
        bounds = gradient_bound(expected, floor)
        outside = ~(gaps <= bounds)  # NaN is outside
        if outside.any():
            at = np.unravel_index(int(np.argmax(np.where(outside, gaps, -1.0))), gaps.shape)
            parts.append(Part(name, "gradient", float(gaps[at]), float(bounds[at])))
        elif gaps.size:
            worst = max(worst, float(np.max(gaps / np.maximum(bounds, 1e-300))))
    return parts, compared, worst


# What an optimizer's update writes: the moving statistics and averages are written by the
# forward pass and by TF1's train_op around the update, which apply_gradients does not run.
UPDATED_KINDS = ("weight", "slot", "step")


def _start(mapping: Any, step: int, state: dict[str, Any]) -> None:
    """TF1's state before `step` into the model: model.ckpt-0 itself for the first."""
    if step == 0:
        mapping.assign()
    else:
        mapping.assign_values(state)


def _state_parts(
    mapping: Any,
    state: dict[str, Any],
    after: dict[str, Any],
    skip: Sequence[str],
    kinds: Sequence[str] | None = None,
) -> tuple[list[Part], float, dict[str, int]]:
    """TF2's mapped variables against TF1's state `after` one step from `state`, each within
    the bound of one step (the step counter exactly): the parts, the worst ratio to the bound
    among the rest, and how many of each kind were compared (`kinds`: only those)."""
    import re

    parts, worst, counted = [], 0.0, {}
    for name, value in mapping.tf2_values().items():
        if name not in after or any(re.search(p, name) for p in skip):
            continue
        kind = mapping.kind(name)
        if kind == "weight" and name.rsplit("/", 1)[-1] in STATISTICS:
            kind = "statistic"
        if kinds is not None and kind not in kinds:
            continue
        tf1_before = np.asarray(state[name], dtype=np.float64)
        tf1_after = np.asarray(after[name], dtype=np.float64)
        tf2_after = np.asarray(value, dtype=np.float64)
        if tf2_after.shape != tf1_after.shape:
            raise SynchronizedError(
                f"{name}: shape {tf2_after.shape} in TF2, {tf1_after.shape} in TF1's state"
            )
        counted[kind] = counted.get(kind, 0) + 1
        if kind == "step":
            difference = float(np.max(np.abs(tf2_after - tf1_after)))
            bound = 0.0
        else:
            bounds = one_step_bound(tf1_before, tf1_after)
            gaps = np.abs(tf2_after - tf1_after)
            outside = ~(gaps <= bounds)  # NaN is outside
            if not outside.any():
                ratio = float(np.max(gaps / np.maximum(bounds, 1e-300))) if gaps.size else 0.0
                worst = max(worst, ratio)
                continue
            at = np.unravel_index(int(np.argmax(np.where(outside, gaps, -1.0))), gaps.shape)
            difference, bound = float(gaps[at]), float(bounds[at])
        if difference > bound or np.isnan(difference):
            parts.append(Part(name, kind, difference, bound))
    return parts, worst, counted


def _check_apply(apply_gradients: Any, mapping: Any) -> None:
    """apply_gradients must be callable, and the optimizer's step counter mapped: TF1's state
    resets it after the update, or the step would count twice."""
    if not callable(apply_gradients):
        raise SynchronizedError(
            f"apply_gradients is a {type(apply_gradients).__name__}: give a function of a list "
            "of (gradient, variable) pairs, such as optimizer.apply_gradients"
        )
    names = getattr(mapping, "tf2_values", dict)()
    if not any(mapping.kind(name) == "step" for name in names):
        raise SynchronizedError(
            "apply_gradients needs the optimizer's step counter in the mapping, which resets "
            "it after the update: map_checkpoint(..., optimizer=your_optimizer)"
        )


def _tf1_pairs(
    gradients: dict[str, np.ndarray], mapping: Any, skip: Sequence[str]
) -> list[tuple[Any, Any]]:
    """TF1's recorded gradients paired with the TF2 variables the mapping paired them with, in
    the mapping's order of the weights (float32, as the variables)."""
    import re

    pairs = getattr(mapping, "pairs", {})
    return [
        (np.asarray(gradients[name], dtype=np.float32), pairs[name])
        for name in mapping.weight_names()
        if name in gradients and name in pairs and not any(re.search(p, name) for p in skip)
    ]


def _call_apply(apply_gradients: Callable[..., Any], pairs: list[tuple[Any, Any]]) -> None:
    """The reader's update on TF1's gradients; what it raises, in one line."""
    try:
        apply_gradients(pairs)
    except FriendlyError:  # already one line (the command line's own refusal)
        raise
    except Exception as error:  # the reader's function: any failure is reported, in one line
        first = (str(error).strip().splitlines() or [""])[0][:200]
        raise SynchronizedError(
            f"apply_gradients raised {type(error).__name__}: {first} (it is given a list of "
            "(gradient, variable) pairs with TF1's gradients, as optimizer.apply_gradients "
            "takes them)"
        ) from None


def compare_synchronized(
    baseline: Any,
    mapping: Any,
    train_step: Callable[[Any, Any], Any],
    steps: int | None = None,
    skip: Sequence[str] = (),
    rate: Callable[[], float] | None = None,
    apply_gradients: Callable[[list[tuple[Any, Any]]], Any] | None = None,
) -> Synchronized:
    """Start each TF2 step from TF1's state and compare the step's result with TF1's next.

    `baseline`: a `Baseline` with states (`state_steps`). `mapping`: the `map_checkpoint`
    mapping of the baseline's checkpoint onto the model (and optimizer: its slots and step
    counter are set from TF1's state too). `train_step(features, labels)`: one training step
    of the reader's on one batch (their `train_on_batch`, or a `strategy.run` step), with
    dropout off or TF1's masks; it may return the step's loss, or a dict with `loss`,
    `gradient_norm` (before any clip) and `gradients` (each variable's gradient of the loss,
    before any clip and summed over the replicas: `(gradient, variable)` pairs, or a dict by
    TF1 name), which the stages compare (the gradients where the baseline recorded them).
    `rate()`: the TF2 learning rate of the step about to run (`optimizer.learning_rate` read
    then), compared with TF1's.
    `steps`: how many (all the states by default). `skip`: TF1 names (regular expressions)
    not compared, such as a variable the port computes otherwise.
    `apply_gradients(pairs)`: the second half of the reader's step, given TF1's own gradients
    as `(gradient, variable)` pairs (before any clip, of the loss over the whole batch, as the
    baseline recorded them): their clip, then their optimizer's `apply_gradients`. Before each
    step whose gradients the baseline holds, it runs from TF1's state, and the weights, slots
    and step counter are compared with TF1's next state: parting there puts the optimizer's
    side first; matching rules it out, whatever train_step computes. It needs the optimizer's
    step counter mapped (`map_checkpoint(..., optimizer=...)`), which TF1's state resets.
    Under a strategy, run the update as the step does, on each replica's share.
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
    if apply_gradients is not None:
        _check_apply(apply_gradients, mapping)
    batches = baseline.batches()
    result = Synchronized(steps, **_graph_facts(baseline, mapping))
    state = baseline.state(0)
    why_none = getattr(baseline, "gradients_note", None) or "recorded by an older workbench"
    for step in range(steps):
        after = baseline.state(step + 1)
        tf1_gradients = baseline.gradient(step) if hasattr(baseline, "gradient") else None
        _start(mapping, step, state)
        if apply_gradients is not None and tf1_gradients:
            _call_apply(apply_gradients, _tf1_pairs(tf1_gradients, mapping, skip))
            parts, _, counted = _state_parts(mapping, state, after, skip, UPDATED_KINDS)
            result.update_compared[step] = sum(counted.values())
            if parts:
                result.update_parts[step] = parts
            _start(mapping, step, state)  # the step itself starts from TF1's state again
        elif apply_gradients is not None:
            result.update_note = f"not compared: the baseline holds no gradients ({why_none})"
        rate_now = rate() if rate is not None else None  # None: the rate is not a stage
        loss, norm, gradients = _returned(train_step(*batches[step]))
        recorded = baseline.steps[step]
        stages = [
            _stage("rate", recorded.get("learning_rate"), rate_now),
            _stage("loss", recorded.get("loss"), loss),
            _stage("gradient_norm", recorded.get("gradient_norm"), norm),
        ]
        result.stages[step] = [stage for stage in stages if stage is not None]
        parts, worst, counted = _state_parts(mapping, state, after, skip)
        gradient_parts: list[Part] = []
        if gradients is not None and not tf1_gradients:
            result.gradients_note = f"not compared: the baseline holds none ({why_none})"
        if gradients is not None and tf1_gradients:
            by_name = _gradients_by_name(gradients, mapping)
            weights = [
                name
                for name in getattr(mapping, "weight_names", list)()
                if not any(re.search(p, name) for p in skip)
            ]
            unchanged = {
                name
                for name in weights
                if name in state and name in after and np.array_equal(state[name], after[name])
            }
            gradient_parts, compared, ratio = _compare_gradients(
                tf1_gradients, by_name, weights, unchanged
            )
            result.gradients_compared[step] = compared
            worst = max(worst, ratio)
            if gradient_parts:
                result.gradient_parts[step] = gradient_parts
        result.worst[step], result.compared[step] = worst, counted
        if parts or gradient_parts or any(stage.parted for stage in result.stages[step]):
            result.parts[step] = parts
        state = after
    return result
