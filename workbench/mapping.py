"""Carry a TensorFlow 1 checkpoint into a Keras model, every variable accounted for.

`tf.train.Checkpoint(model=...).restore(tf1_checkpoint)` finds nothing under Keras 3 and keeps
the initial weights without a word (notebook 04); `init_from_checkpoint` needs TF1 graphs. What
works is what notebooks 04, 09 and 10 do by hand: read the checkpoint with
`tf.train.load_checkpoint`, decide which TF1 name goes to which Keras variable, check every
shape, assign. `map_checkpoint` makes those decisions the way the notebooks did, in this order,
and says for each one how it was made:

1. **rule**: the reader's `(pattern, replacement)` pairs, `re.sub` on the TF1 name; the result
   names a Keras variable (its path, or a suffix of it). A replacement of `None` leaves the TF1
   variable out on purpose (for instance `(r".*/ExponentialMovingAverage$", None)`).
2. **name**: the TF1 name equals the Keras variable's name, or is its last segments
   (`dense/kernel` and `sequential/dense/kernel`), with the same shape. Keras numbers layers
   (`dense`, `dense_1`) across every model built in the process; where its numbers of a kind
   of layer are not TF1's, those names say nothing and are not used (a note says so).
3. **creation order**: TF1 numbers layers in the order the `model_fn` created them (`conv2d`,
   `conv2d_1`, ...), and Keras keeps its weights in the order the model tracks its layers.
   Several same-kind, same-shape variables (`conv2d_1/kernel`, `conv2d_2/kernel`) are paired in
   those two orders, as notebook 10 does. A model that builds its layers in another order than
   the `model_fn` swaps them: `workbench.check_swaps` runs the first step's loss of each
   exchange of same-shape layers and keeps the one that reproduces TF1's.
4. **shape**: the only remaining variable of its kind and shape on each side, then the only one
   of its shape (`embedding_weights` and `embeddings`).

Two or more candidates that nothing above decides are **ambiguous**; a variable with none is
**unmatched**. Only the shape pass pairs different kinds of variable, and only the pairs in
`SAME_KIND`: a `dense/bias` and a `layer_normalization/beta` of one shape stay ambiguous until
a rule decides. An optimizer slot, a TF1 name whose last segment is one of `TF1_SLOTS`
(`dense/kernel/Adagrad`), follows its variable to the Keras optimizer's slot of the same kind,
in Keras 2 and Keras 3; any other name (`dense/kernel/ExponentialMovingAverage`) is matched
like a model variable, by a rule or a dict `model` that names it. TF1's bookkeeping
(`global_step`, Adam's `beta1_power`) is **skipped** with the reason, `global_step` going to
`optimizer.iterations` when an optimizer is given. `Mapping.assign()` refuses, in one line,
while anything is unmatched or ambiguous that `allow_unmatched` does not list, or where a
dtype differs: nothing is assigned silently, nothing silently left at its initial value.
"""

from __future__ import annotations

import collections.abc as abc
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import FriendlyError, first_line
from workbench.text import format_table


class MappingError(FriendlyError, ValueError):
    """The checkpoint does not map onto the model as given; the message says what to change."""


# A row's status in Mapping.report() and Mapping.rows().
MATCHED, UNMATCHED, AMBIGUOUS, SKIPPED = "matched", "unmatched", "ambiguous", "skipped"

# TF1 variables that carry no weight of the model, and why nothing takes them.
BOOKKEEPING = {
    r"(.*/)?global_step": "the step counter: Keras counts steps in optimizer.iterations "
    "(pass optimizer= to carry it there)",
    r"(.*/)?beta[12]_power(_\d+)?": "Adam's bias correction: Keras computes it from "
    "optimizer.iterations",
    r"(.*/)?(current_loss_scale|good_steps)": "mixed precision's loss scale: Keras' "
    "LossScaleOptimizer keeps its own",
}

# TF1 slot name (the last segment) -> the Keras optimizer's list of that slot, by attribute.
# The same attributes exist in Keras 2's optimizers (2.11 on) and Keras 3's. TF1's RMSProp
# makes `rms`, then `mg` when centered, then `momentum`, numbered in that order: RMSProp_1 is
# the mean gradient when a RMSProp_2 exists, the momentum otherwise (see _slot_list).
SLOT_LISTS = {
    "Adagrad": "_accumulators",  # both: the sum of squared gradients
    "Momentum": "momentums",  # TF1 sums gradients, Keras SGD keeps -lr x that sum: see NOTES
    "Adam": "_momentums",  # m
    "Adam_1": "_velocities",  # v
    "RMSProp": "_velocities",  # the mean square
    "RMSProp_1": "_momentums",  # the momentum, or the mean gradient when centered
    "RMSProp_2": "_momentums",  # the momentum of a centered RMSProp
}
# Centered RMSProp's mean gradient: TF1's RMSProp_1 when a RMSProp_2 exists (see _slot_list).
CENTERED_LIST = "_average_gradients"
# Slot names of hand-written TF1 optimizers (BERT's weight-decay Adam, LAMB): Adam's lists.
SLOT_ALIASES = {"adam_m": "_momentums", "adam_v": "_velocities", "m": "_momentums"}
SLOT_ALIASES["v"] = "_velocities"
# ExponentialMovingAverage's shadow `<variable>/ExponentialMovingAverage`: with a Keras
# optimizer built with use_ema=True (Keras 2.11 on and Keras 3), its list of averages.
AVERAGE = "ExponentialMovingAverage"
AVERAGE_LIST = "_model_variables_moving_average"
# Names that differ between the generations for the same weight: TF1's and Keras 2's
# DepthwiseConv2D weight is `depthwise_kernel`, Keras 3's `kernel`.
RENAMES = ((re.compile(r"(^|/)depthwise_kernel$"), r"\1kernel"),)
# Slot names TF1's optimizers give that no Keras optimizer keeps alike: slots all the same.
TF1_SLOTS = frozenset(SLOT_LISTS) | {"Ftrl", "Ftrl_1", "Adadelta", "Adadelta_1"}
SLOT_NOTES = {
    "Momentum": "'Momentum' slots: TF1 keeps the sum of gradients, Keras SGD -lr x that sum "
    "(its momentum update is m = momentum*m - lr*g): a zero slot (model.ckpt-0) is carried "
    "as it is, a trained one as -learning_rate x sum, exact while the rate was constant",
}
# Kinds (last segments) that name the same weight on the two sides: the shape pass pairs
# different kinds only from this table, so that a bias never takes a beta by its shape.
SAME_KIND = {
    ("embedding_weights", "embeddings"),
    ("weights", "kernel"),
    ("depthwise_kernel", "kernel"),
    ("biases", "bias"),
    ("gamma", "gamma"),
    ("beta", "beta"),
    ("moving_mean", "moving_mean"),
    ("moving_variance", "moving_variance"),
}
ITERATIONS = ("iteration", "iterations")  # the last segment of the step counter's name
OPTIMIZER_OWN = "the optimizer's own setting, set by its arguments"
UNKNOWN_SLOT = "?"  # Target.slot of an optimizer variable in no list that SLOT_LISTS names

_NUMBERED = re.compile(r"^(.*?)_(\d+)$")


def _split_number(segment: str) -> tuple[str, int]:
    """`conv2d_3` -> ("conv2d", 3); `conv2d` -> ("conv2d", 0): TF1's and Keras' numbering."""
    found = _NUMBERED.match(segment)
    return (found.group(1), int(found.group(2))) if found else (segment, 0)


def _kind(name: str) -> str:
    """The last segment without a number: `kernel`, `gamma`, `moving_variance`."""
    return _split_number(name.rsplit("/", 1)[-1])[0]


def _layer(name: str) -> str:
    """The segment before the last, the layer in Keras' and TF1's names ("" if none)."""
    parts = name.split("/")
    return parts[-2] if len(parts) > 1 else ""


def _template(name: str) -> tuple[str, tuple[int, ...]]:
    """The name with every segment's number taken out, and those numbers in order."""
    pieces = [_split_number(segment) for segment in name.split("/")]
    return "/".join(base for base, _ in pieces), tuple(number for _, number in pieces)


def _named(tf1: str, tf2: str) -> bool:
    return tf2 == tf1 or tf2.endswith("/" + tf1)


def _same_kind(tf1: str, tf2: str) -> bool:
    """Whether the shape pass may pair these names: the same kind, or a pair of SAME_KIND."""
    kinds = (_kind(tf1), _kind(tf2))
    return kinds[0] == kinds[1] or kinds in SAME_KIND


def _slot_list(
    name: str, shapes: abc.Mapping[str, tuple[int, ...]], named: abc.Mapping[str, str] | None = None
) -> str | None:
    """The Keras optimizer's list that takes the TF1 slot `name`, or None if none is known:
    the reader's `slot_lists` first, then TF1's optimizers, then the hand-written ones."""
    parent, slot = name.rsplit("/", 1)
    if named and slot in named:
        return named[slot]
    if slot == "RMSProp_1" and parent + "/RMSProp_2" in shapes:
        return CENTERED_LIST  # centered: rms, mg, momentum
    if slot == AVERAGE:
        return AVERAGE_LIST
    return SLOT_LISTS.get(slot) or SLOT_ALIASES.get(slot)


def _is_slot(name: str, shapes: abc.Mapping[str, tuple[int, ...]], averages: bool) -> bool:
    """A TF1 optimizer slot: a name TF1's optimizers give, or any `<variable>/<name>` of its
    variable's shape (BERT's `adam_m`, LAMB's, LARS'); an average only where the Keras
    optimizer keeps averages (use_ema=True), else it maps as a variable of its own."""
    if "/" not in name:
        return False
    parent, last = name.rsplit("/", 1)
    if last == AVERAGE:
        return averages and parent in shapes
    if last in TF1_SLOTS:
        return True
    return parent in shapes and tuple(shapes[parent]) == tuple(shapes[name])


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


@dataclass
class Target:
    """One TF2 variable or optimizer slot that a checkpoint value may go to."""

    name: str
    shape: tuple[int, ...]
    variable: Any = None
    owner: int | None = None  # for a slot: the index of its model variable among the targets
    slot: str = ""  # for a slot: the optimizer's list holding it (`_momentums`), or UNKNOWN_SLOT
    own: str = ""  # for the optimizer's own variables (iterations, learning rate): why skipped

    @property
    def weight(self) -> bool:
        """A model variable: neither an optimizer slot nor the optimizer's own variable."""
        return self.owner is None and not self.slot and not self.own


@dataclass(frozen=True)
class Row:
    """One line of the report: a TF1 variable, a TF2 variable, or the pair of them."""

    status: str
    tf1: str
    tf2: str
    shape: tuple[int, ...]
    how: str


@dataclass
class _State:
    """The working state of one matching; `Mapping` is what the reader gets."""

    shapes: dict[str, tuple[int, ...]]
    targets: list[Target]
    pairs: dict[str, int] = field(default_factory=dict)  # TF1 name -> target index
    how: dict[str, str] = field(default_factory=dict)  # TF1 name -> how it matched / why not
    status: dict[str, str] = field(default_factory=dict)  # TF1 name -> status
    candidates: dict[str, list[int]] = field(default_factory=dict)  # ambiguous TF1 -> targets
    target_status: dict[int, str] = field(default_factory=dict)
    target_how: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    scale: dict[str, float] = field(default_factory=dict)  # TF1 name -> factor on assign
    # what the slot pass read, kept so that an alternative assignment can place slots again
    has_optimizer: bool = False
    nonzero: abc.Container[str] = ()
    learning_rate: float | None = None
    slots: set[str] = field(default_factory=set)  # the TF1 names that are optimizer slots
    slot_lists: dict[str, str] = field(default_factory=dict)  # the reader's slot name -> list

    def claimed(self) -> set[int]:
        return set(self.pairs.values())

    def pair(self, tf1: str, index: int, how: str) -> None:
        self.pairs[tf1], self.how[tf1], self.status[tf1] = index, how, MATCHED

    def open_tf1(self, slots: set[str]) -> list[str]:
        return [n for n in self.shapes if n not in self.status and n not in slots]

    def open_targets(self) -> list[int]:
        taken = self.claimed() | set(self.target_status)
        return [i for i, t in enumerate(self.targets) if i not in taken and t.weight]


def match(
    shapes: abc.Mapping[str, Sequence[int]],
    targets: Sequence[Target],
    rules: Sequence[tuple[str, str | None]] = (),
    has_optimizer: bool = False,
    nonzero: abc.Container[str] = (),
    learning_rate: float | None = None,
    slot_lists: abc.Mapping[str, str] | None = None,
    new: Sequence[str] = (),
) -> _State:
    """Decide every TF1 name's TF2 target; no TensorFlow here, so it is tested on its own.

    `nonzero`: the TF1 `Momentum` slots whose values are not all zero; each needs
    `learning_rate` to be carried over (Keras keeps -lr x TF1's sum), else it is unmatched.
    `slot_lists`: TF1 slot name -> the Keras optimizer's list that takes it, for slots of an
    optimizer the workbench does not know (`{"adam_m": "_momentums"}`). `new`: regular
    expressions of TF2 names that no TF1 variable is expected for (a new task head): they keep
    their initial values, reported as new.
    """
    state = _State({n: tuple(int(d) for d in s) for n, s in shapes.items()}, list(targets))
    state.has_optimizer, state.nonzero, state.learning_rate = has_optimizer, nonzero, learning_rate
    state.slot_lists = dict(slot_lists or {})
    compiled = _compile(rules)
    averages = any(t.slot == AVERAGE_LIST for t in state.targets)
    slots = {name for name in state.shapes if _is_slot(name, state.shapes, averages)}
    state.slots = slots
    _by_rules(state, compiled, slots)  # first: a rule may place global_step too
    _bookkeeping(state)
    _by_name(state, slots)
    _by_pools(state, slots)
    _slots(state, slots, has_optimizer, nonzero, learning_rate)
    _new(state, _patterns(new, "new"), bool(slots))
    for name in state.shapes:
        if name not in state.status:
            state.status[name] = UNMATCHED
            state.how[name] = "no TF2 variable by rule, name or shape"
    claimed = state.claimed()
    for index, target in enumerate(state.targets):
        if index in claimed or index in state.target_status:
            continue
        if target.own:
            state.target_status[index], state.target_how[index] = SKIPPED, target.own
        elif target.slot == UNKNOWN_SLOT:
            state.target_status[index] = UNMATCHED
            state.target_how[index] = (
                "an optimizer variable in no slot list the workbench knows: no TF1 slot goes to it"
            )
        else:
            state.target_status[index] = UNMATCHED
            state.target_how[index] = "no TF1 variable " + (
                "slot" if target.owner is not None else "by rule, name or shape"
            )
    return state


def _patterns(patterns: Sequence[str], what: str) -> list[re.Pattern]:
    if isinstance(patterns, str):
        patterns = [patterns]
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except (re.error, TypeError) as error:
            raise MappingError(
                f"{what}: {pattern!r} is not a regular expression ({error})"
            ) from None
    return compiled


def _new(state: _State, new: list[re.Pattern], has_slots: bool) -> None:
    """TF2 variables left at their initial values on purpose: those `new` names, and, when
    the checkpoint holds no optimizer slot at all (a published checkpoint), the slots."""
    claimed = state.claimed()
    for index, target in enumerate(state.targets):
        if index in claimed or index in state.target_status or target.own:
            continue
        if any(pattern.search(target.name) for pattern in new):
            state.target_status[index] = SKIPPED
            state.target_how[index] = "new (new=): keeps its initial value"
        elif target.owner is not None and not has_slots and state.has_optimizer:
            state.target_status[index] = SKIPPED
            state.target_how[index] = (
                "new: the checkpoint holds no optimizer slots (a published checkpoint), so the "
                "optimizer's start at their initial values"
            )


def _kind_of_slot(name: str) -> str:
    """The last segment as it is (`Adam_1` stays `Adam_1`: TF1 numbers slots, not layers)."""
    return name.rsplit("/", 1)[-1]


def _compile(rules: Sequence[tuple[str, str | None]]) -> list[tuple[re.Pattern, str | None]]:
    compiled = []
    for number, rule in enumerate(rules, 1):
        if not (isinstance(rule, tuple | list) and len(rule) == 2):
            raise MappingError(
                f"rule {number} is {rule!r}: give each rule as (pattern, replacement), e.g. "
                "(r'^linear/', 'dense/'), or (pattern, None) to leave those variables out"
            )
        pattern, replacement = rule
        if replacement is not None and not isinstance(replacement, str):
            raise MappingError(
                f"rule {number}: the replacement {replacement!r} is not a string or None"
            )
        try:
            compiled.append((re.compile(pattern), replacement))
        except (re.error, TypeError) as error:
            raise MappingError(
                f"rule {number}: {pattern!r} is not a regular expression ({error})"
            ) from None
    return compiled


def _bookkeeping(state: _State) -> None:
    iterations = next(
        (i for i, t in enumerate(state.targets) if t.own and t.name.split("/")[-1] in ITERATIONS),
        None,
    )
    for name in state.shapes:
        if name in state.status:  # a rule placed or left it out
            continue
        for pattern, reason in BOOKKEEPING.items():
            if re.fullmatch(pattern, name):
                if name.endswith("global_step") and iterations is not None:
                    state.pair(name, iterations, "step counter -> optimizer.iterations")
                else:
                    state.status[name], state.how[name] = SKIPPED, reason
                break


def _find(state: _State, wanted: str, shape: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """Targets named `wanted` (or ending in it): those of `shape`, and those of another."""
    claimed = state.claimed()
    open_ = [i for i in range(len(state.targets)) if i not in claimed]
    exact = [i for i in open_ if state.targets[i].name == wanted]
    suffix = [i for i in open_ if _named(wanted, state.targets[i].name)]
    model = [i for i in suffix if state.targets[i].weight]
    named = exact or model or suffix  # Keras 2 names slots m/dense/kernel: the variable first
    return [i for i in named if state.targets[i].shape == shape], [
        i for i in named if state.targets[i].shape != shape
    ]


def _by_rules(
    state: _State, compiled: list[tuple[re.Pattern, str | None]], slots: set[str]
) -> None:
    """The reader's rules; a slot follows its variable, so only `None` rules apply to it."""
    used = [False] * len(compiled)
    for name in list(state.shapes):
        if name in state.status:
            continue
        for number, (pattern, replacement) in enumerate(compiled):
            if not pattern.search(name):
                continue
            used[number] = True
            if name in slots and replacement is not None:
                continue
            rule = f"rule {number + 1} ({pattern.pattern!r}"
            if replacement is None:
                state.status[name], state.how[name] = SKIPPED, f"{rule} -> None): left out"
                break
            wanted = re.sub(r":\d+$", "", pattern.sub(replacement, name))  # Keras 2's v.name
            fits, misfits = _find(state, wanted, state.shapes[name])
            for renamer, renamed in RENAMES if not fits else ():
                if renamer.search(wanted):  # the rule's TF1-style name, in Keras 3's words
                    wanted = renamer.sub(renamed, wanted)
                    fits, misfits = _find(state, wanted, state.shapes[name])
            taken = [
                tf1
                for tf1, i in state.pairs.items()
                if _named(wanted, state.targets[i].name)
                and state.targets[i].shape == state.shapes[name]
            ]
            if not fits and taken:
                state.status[name] = UNMATCHED
                state.how[name] = f"{rule}) gives {wanted!r}, already taken by {taken[0]}"
            elif len(fits) == 1:
                state.pair(name, fits[0], f"{rule} -> {wanted!r})")
            elif len(fits) > 1:
                state.status[name], state.candidates[name] = AMBIGUOUS, fits
                state.how[name] = (
                    f"{rule}) gives {wanted!r}, which {len(fits)} TF2 variables end in"
                )
            else:
                other = (
                    f"; {state.targets[misfits[0]].name} has shape "
                    f"{_shape_text(state.targets[misfits[0]].shape)}"
                    if misfits
                    else ""
                )
                state.status[name] = UNMATCHED
                state.how[name] = f"{rule}) gives {wanted!r}: no TF2 variable of this shape{other}"
            break
    for number, (pattern, _) in enumerate(compiled):
        if used[number]:
            continue
        earlier = [
            first + 1
            for first in range(number)
            if any(pattern.search(n) and compiled[first][0].search(n) for n in state.shapes)
        ]
        state.notes.append(
            f"rule {number + 1} ({pattern.pattern!r}) "
            + (
                f"matched only TF1 names an earlier rule had placed (rule {earlier[0]}): "
                "the first rule that matches a name decides it"
                if earlier
                else "matched no TF1 name"
            )
        )


def _unreliable_layers(state: _State, slots: set[str]) -> set[str]:
    """Layer kinds whose numbering starts elsewhere on the two sides: Keras numbers layers
    across every model of the process, so its `dense_1` may be TF1's `dense`."""
    numbers: list[dict[str, set[int]]] = [{}, {}]
    tf1_layers = [_layer(n) for n in state.shapes if n not in slots]
    tf2_layers = [_layer(t.name) for t in state.targets if t.owner is None and not t.own]
    for side, layers in enumerate((tf1_layers, tf2_layers)):
        for layer in layers:
            if layer:
                base, number = _split_number(layer)
                numbers[side].setdefault(base, set()).add(number)
    shared = set(numbers[0]) & set(numbers[1])
    return {base for base in shared if min(numbers[0][base]) != min(numbers[1][base])}


def _by_name(state: _State, slots: set[str]) -> None:
    unreliable = _unreliable_layers(state, slots)
    for base in sorted(unreliable):
        state.notes.append(
            f"the {base!r} layers are numbered differently on the two sides (Keras numbers "
            "layers across every model of the process): their names were not used; build the "
            "model after keras.backend.clear_session(), or name its layers"
        )
    for name in state.open_tf1(slots):
        layer = _layer(name)
        if layer and _split_number(layer)[0] in unreliable:
            continue
        fits, _ = _find(state, name, state.shapes[name])
        fits, how = [i for i in fits if state.targets[i].weight], "name"
        for pattern, replacement in RENAMES if not fits else ():
            renamed = pattern.sub(replacement, name)
            if renamed != name:
                found, _ = _find(state, renamed, state.shapes[name])
                fits = [i for i in found if state.targets[i].weight]
                how = f"name, {_kind(name)} as {_kind(renamed)} (Keras 3's name)"
        if len(fits) == 1:
            state.pair(name, fits[0], how)


def _by_pools(state: _State, slots: set[str]) -> None:
    """Creation order within (kind, shape), then the only one of a kind, then of a shape."""
    for key in ("kind", "shape"):
        pools: dict[tuple, tuple[list[str], list[int]]] = {}
        for name in state.open_tf1(slots):
            shape = state.shapes[name]
            pools.setdefault((_kind(name), shape) if key == "kind" else shape, ([], []))[0].append(
                name
            )
        for index in state.open_targets():
            target = state.targets[index]
            group = (_kind(target.name), target.shape) if key == "kind" else target.shape
            if group in pools:
                pools[group][1].append(index)
        for names, indices in pools.values():
            if not indices:
                continue
            templates = {_template(n)[0] for n in names}
            pairs = [(n, state.targets[i].name) for n in names for i in indices]
            if key == "shape" and not all(_same_kind(tf1, tf2) for tf1, tf2 in pairs):
                kinds = {(_kind(tf1), _kind(tf2)) for tf1, tf2 in pairs}
                _ambiguous(
                    state,
                    names,
                    indices,
                    "of its shape only, another kind ("
                    + ", ".join(sorted({f"{a} and {b}" for a, b in kinds}))
                    + "): add a rule",
                )
            elif len(names) == 1 and len(indices) == 1:
                tf1_kind, tf2_kind = _kind(names[0]), _kind(state.targets[indices[0]].name)
                how = f"the only {tf1_kind} of its shape" if key == "kind" else "the only one"
                if key == "shape":
                    how += f" of its shape ({tf1_kind} and {tf2_kind})"
                state.pair(names[0], indices[0], how)
            elif len(names) == len(indices) and len(templates) == 1:
                ordered = sorted(names, key=lambda n: _template(n)[1])
                numbers = [_template(n)[1] for n in ordered]
                if len(set(numbers)) == len(numbers):
                    for name, index in zip(ordered, indices, strict=True):
                        state.pair(name, index, "creation order")
                    continue
                _ambiguous(state, names, indices)
            elif key == "shape" or len(indices) > 1 or len(names) > 1:
                _ambiguous(state, names, indices)


def _ambiguous(state: _State, names: list[str], indices: list[int], why: str = "") -> None:
    for name in names:
        state.status[name], state.candidates[name] = AMBIGUOUS, list(indices)
        state.how[name] = (
            f"{len(indices)} TF2 candidate(s) {why}"
            if why
            else (f"{len(indices)} same-shape TF2 candidates")
        )
    for index in indices:
        state.target_status[index] = AMBIGUOUS
        state.target_how[index] = (
            f"{len(names)} TF1 candidate(s) {why}"
            if why
            else (f"{len(names)} same-shape TF1 candidates")
        )


def _slots(
    state: _State,
    slots: set[str],
    has_optimizer: bool,
    nonzero: abc.Container[str],
    learning_rate: float | None,
) -> None:
    named = state.slot_lists
    known = sorted(n for n in slots if _slot_list(n, state.shapes, named))
    for name in known + sorted(set(slots) - set(known)):  # the unknown kinds from what is left
        if name in state.status:
            continue
        parent, slot = name.rsplit("/", 1)
        wanted = _slot_list(name, state.shapes, named)
        if wanted is None and state.status.get(parent) == MATCHED and has_optimizer:
            wanted = _only_list_left(state, name, slots)
        state.status[name] = UNMATCHED
        if state.status.get(parent) != MATCHED:
            state.how[name] = f"slot {slot!r} of {parent}, which is not matched: map it first"
        elif not has_optimizer:
            state.how[name] = f"slot {slot!r} of {parent}: pass the built optimizer= to carry it"
        elif wanted is None:
            lists = sorted({t.slot for t in state.targets if t.owner == state.pairs[parent]})
            state.how[name] = (
                f"slot {slot!r} of {parent}: the workbench does not know which of the optimizer's "
                f"lists ({', '.join(lists) or 'none'}) takes it: name it once for every variable "
                f"with slot_lists={{{slot!r}: LIST}} (--slot {slot}=LIST)"
            )
        elif slot == "Momentum" and name in nonzero and learning_rate is None:
            state.how[name] = (
                f"slot {slot!r} of {parent}: TF1 sums gradients where Keras SGD keeps -lr x that "
                "sum; pass learning_rate= (the rate TF1 trained at) to carry it over"
            )
        else:
            owner = state.pairs[parent]
            found = [
                i for i, t in enumerate(state.targets) if t.owner == owner and t.slot == wanted
            ]
            if found:
                if slot in SLOT_NOTES and SLOT_NOTES[slot] not in state.notes:
                    state.notes.append(SLOT_NOTES[slot])
                how = f"slot {slot!r} of {parent} -> {wanted}"
                if slot == "Momentum" and learning_rate is not None:
                    state.scale[name] = -float(learning_rate)
                    how += f", times -{float(learning_rate):g}"
                state.pair(name, found[0], how)
            elif slot.startswith("RMSProp") and wanted == "_momentums":
                state.how[name] = (
                    f"slot {slot!r} of {parent}: TF1's RMSProp keeps a momentum slot even at "
                    "momentum 0, Keras' RMSprop only with momentum > 0: build it with TF1's "
                    f"momentum, or, if that was 0, leave the slot out (rule '/{slot}$' -> None)"
                )
            else:
                state.how[name] = (
                    f"slot {slot!r} of {parent}: the optimizer keeps no such slot (another "
                    "optimizer than TF1's, or not built with this variable)"
                )


def _only_list_left(state: _State, name: str, slots: set[str]) -> str | None:
    """The list of the one slot of the variable's that no TF1 slot took, where the variable
    has exactly one TF1 slot of an unknown kind: an optimizer's single unknown slot."""
    parent = name.rsplit("/", 1)[0]
    owner, claimed = state.pairs[parent], state.claimed()
    free = [
        t.slot
        for i, t in enumerate(state.targets)
        if t.owner == owner and i not in claimed and t.slot not in (AVERAGE_LIST, UNKNOWN_SLOT)
    ]
    unknown = [
        n
        for n in slots
        if n.rsplit("/", 1)[0] == parent
        and _slot_list(n, state.shapes, state.slot_lists) is None
        and n not in state.status
    ]
    return free[0] if len(free) == 1 and unknown == [name] else None


# ----------------------------------------------------------------------------- TensorFlow side


def _tf2_name(variable: Any) -> str:
    name = getattr(variable, "path", None) or variable.name
    return name[:-2] if name.endswith(":0") else name


def _variables(model: Any) -> list[tuple[str, Any]]:
    if isinstance(model, abc.Mapping):
        return [(str(name), variable) for name, variable in model.items()]
    if hasattr(type(model), "weights"):
        try:
            weights = model.weights
        except ValueError:  # Keras 2: a Sequential model not built yet
            weights = []
        # Keras 2 lists the state of a model's metrics (a Mean's total and count) among its
        # weights; no TF1 variable is a metric's, and evaluation starts it at zero.
        metrics = [v for m in getattr(model, "metrics", None) or [] for v in m.variables]
        counted = {id(v) for v in metrics}
        return [(_tf2_name(v), v) for v in weights if id(v) not in counted]
    if isinstance(model, Iterable):
        return [(_tf2_name(v), v) for v in model]
    raise MappingError(
        f"model is a {type(model).__name__}: give a Keras model (or layer), a list of "
        "variables, or a dict of name -> variable"
    )


def _slot_index(optimizer: Any, variable: Any) -> int | None:
    try:
        if hasattr(optimizer, "_get_variable_index"):  # Keras 3
            return int(optimizer._get_variable_index(variable))
        return int(optimizer._index_dict[optimizer._var_key(variable)])  # Keras 2
    except (KeyError, AttributeError, ValueError):
        return None


def tf2_targets(model: Any, optimizer: Any = None, lists: Sequence[str] = ()) -> list[Target]:
    """The model's variables in creation order, then the optimizer's slots and own variables
    (`lists`: more of the optimizer's slot lists by attribute, as `slot_lists` names them)."""
    targets = [
        Target(name, tuple(int(d) for d in variable.shape), variable)
        for name, variable in _variables(model)
    ]
    if not targets:
        raise MappingError(
            "the model has no variables yet: build it first (call it on one batch, "
            "model(features[:1])), then map the checkpoint"
        )
    if optimizer is None:
        return targets
    if hasattr(optimizer, "get_slot_names"):  # Keras 2's OptimizerV2, tf.keras...legacy
        raise MappingError(
            f"the optimizer ({type(optimizer).__name__}) is a legacy Keras 2 optimizer, which "
            "the workbench does not support: use tf.keras.optimizers (not .legacy)"
        )
    if not (getattr(optimizer, "built", False) or getattr(optimizer, "_built", False)):
        raise MappingError(
            f"the optimizer ({type(optimizer).__name__}) is not built, so it has no slots yet: "
            "call optimizer.build(model.trainable_variables) first"
        )
    placed: set[int] = set()
    for owner, target in enumerate(list(targets)):
        index = _slot_index(optimizer, target.variable)
        if index is None:
            continue
        known = (*SLOT_LISTS.values(), CENTERED_LIST, AVERAGE_LIST, *lists)
        for attribute in dict.fromkeys(known):
            found = getattr(optimizer, attribute, None) or []
            if index < len(found) and found[index] is not None and id(found[index]) not in placed:
                variable = found[index]
                placed.add(id(variable))
                name = _tf2_name(variable)
                targets.append(Target(name, target.shape, variable, owner, attribute))
    for variable in optimizer.variables:
        if id(variable) not in placed:
            name = _tf2_name(variable)
            shape = tuple(int(d) for d in variable.shape)
            if shape:  # not a setting: a slot of a kind SLOT_LISTS does not name
                targets.append(Target(name, shape, variable, slot=UNKNOWN_SLOT))
                continue
            own = "the step counter" if name.split("/")[-1] in ITERATIONS else OPTIMIZER_OWN
            targets.append(Target(name, shape, variable, own=own))
    return targets


def _read_checkpoint(checkpoint_path: str | Path) -> tuple[str, Any, dict[str, tuple[int, ...]]]:
    import tensorflow as tf

    path = str(checkpoint_path)
    if Path(path).is_dir():  # its `checkpoint` file names the latest; a copied folder has none
        prefixes = sorted(str(p)[: -len(".index")] for p in Path(path).glob("*.index"))
        latest = tf.train.latest_checkpoint(path)
        if not latest and len(prefixes) > 1:
            listed = ", ".join(Path(p).name for p in prefixes)
            raise MappingError(
                f"{checkpoint_path} holds several checkpoints ({listed}) and no `checkpoint` "
                "file naming the latest: give the prefix of the one to map"
            )
        path = latest or (prefixes[0] if prefixes else path)
    try:
        reader = tf.train.load_checkpoint(path)
        shapes = {  # sorted by name, as tf.train.list_variables lists them
            n: tuple(int(d) for d in s)
            for n, s in sorted(reader.get_variable_to_shape_map().items())
        }
    except (tf.errors.OpError, ValueError) as error:
        raise MappingError(
            f"no TensorFlow checkpoint at {checkpoint_path}: give its prefix "
            f"(.../model.ckpt-100) or its folder ({first_line(error)})"
        ) from None
    return path, reader, shapes


def map_checkpoint(
    checkpoint_path: str | Path,
    model: Any,
    rules: Sequence[tuple[str, str | None]] = (),
    optimizer: Any = None,
    learning_rate: float | None = None,
    slot_lists: abc.Mapping[str, str] | None = None,
    new: Sequence[str] = (),
) -> Mapping:
    """Match every variable of a TF1 checkpoint to the model's variables and optimizer slots.

    `model`: a built Keras model or layer (its `weights`, in creation order), a list of
    variables, or a dict of name -> variable (to name variables Keras does not track, such as
    notebook 10's averages). `rules`: `(pattern, replacement)` pairs applied with `re.sub` to
    TF1 names, the first that matches; a replacement of None leaves the variable out.
    `optimizer`: the built Keras optimizer whose slots take TF1's (`dense/kernel/Adagrad`).
    `learning_rate`: the rate TF1's MomentumOptimizer trained at, needed only for nonzero
    `Momentum` slots (TF1 keeps the sum of gradients, Keras SGD -lr x that sum).
    `slot_lists`: the Keras optimizer's list, by attribute, for a slot name the workbench does
    not know (`{"lamb_m": "_momentums"}`, or Adamax's `_m`, Ftrl's `_linears`; TF1's
    optimizers, BERT's `adam_m`/`adam_v` and a variable's only slot need none). `new`:
    regular expressions of TF2 names that keep their initial values (a new task head over a
    published checkpoint).
    Nothing is assigned: read `report()`, then call `assign()`.
    """
    import numpy as np

    path, reader, shapes = _read_checkpoint(checkpoint_path)
    targets = tf2_targets(model, optimizer, list((slot_lists or {}).values()))
    nonzero = {
        name for name in shapes if name.endswith("/Momentum") and np.any(reader.get_tensor(name))
    }
    state = match(
        shapes,
        targets,
        rules,
        has_optimizer=optimizer is not None,
        nonzero=nonzero,
        learning_rate=learning_rate,
        slot_lists=slot_lists,
        new=new,
    )
    return Mapping(path, reader, state)


@dataclass(frozen=True)
class Alternative:
    """Another assignment of the same checkpoint: what `check_swaps` tries."""

    description: str  # `conv2d_1 <-> conv2d_2`, or the ambiguous names' assignment
    mapping: Mapping
    equal: bool  # the exchanged layers hold equal values in the checkpoint: nothing to tell


class Mapping:
    """The decisions of `map_checkpoint`: `report()` shows them, `assign()` carries them out."""

    def __init__(self, checkpoint: str, reader: Any, state: _State) -> None:
        self.checkpoint = checkpoint
        self._reader = reader
        self._state = state

    def rows(self) -> list[Row]:
        """Every TF1 variable in checkpoint order, then every TF2 variable no TF1 one took."""
        state, rows = self._state, []
        for name, shape in state.shapes.items():
            status = state.status[name]
            tf2 = ""
            if name in state.pairs:
                tf2 = state.targets[state.pairs[name]].name
            elif name in state.candidates:
                tf2 = " | ".join(state.targets[i].name for i in state.candidates[name])
            rows.append(Row(status, name, tf2, shape, state.how[name]))
        claimed = state.claimed()
        for index, target in enumerate(state.targets):
            if index not in claimed:
                status, how = state.target_status[index], state.target_how[index]
                rows.append(Row(status, "", target.name, target.shape, how))
        return rows

    @property
    def pairs(self) -> dict[str, Any]:
        """TF1 name -> the TF2 variable it is assigned to."""
        return {n: self._state.targets[i].variable for n, i in self._state.pairs.items()}

    def problems(self) -> list[Row]:
        """The rows `assign()` refuses over: every unmatched or ambiguous TF1 or TF2 variable."""
        return [row for row in self.rows() if row.status in (UNMATCHED, AMBIGUOUS)]

    def report(self) -> str:
        """A summary line, the notes, and a table of every TF1 and TF2 variable."""
        rows = self.rows()
        counts = {s: sum(r.status == s for r in rows) for s in (MATCHED, UNMATCHED, AMBIGUOUS)}
        skipped = sum(r.status == SKIPPED for r in rows)
        tf1 = sum(bool(r.tf1) for r in rows)
        tf2 = len(self._state.targets)
        lines = [
            f"{Path(self.checkpoint).name}: {tf1} TF1 and {tf2} TF2 variables (slots included): "
            f"{counts[MATCHED]} pairs matched, {counts[UNMATCHED]} unmatched, "
            f"{counts[AMBIGUOUS]} ambiguous, {skipped} skipped"
        ]
        lines += [f"note: {note}" for note in self._state.notes]
        table = [[r.status, r.tf1 or "-", _shape_text(r.shape), r.tf2 or "-", r.how] for r in rows]
        lines.append(format_table(["status", "TF1", "shape", "TF2", "how"], table))
        return "\n".join(lines)

    def _allowed(self, row: Row, allow: Sequence[str]) -> bool:
        names = [n for n in (row.tf1, row.tf2) if n]
        return any(re.fullmatch(p, n) or p == n for p in allow for n in names)

    def assign(self, allow_unmatched: Sequence[str] = ()) -> list[str]:
        """Assign every matched pair, or raise MappingError before assigning anything.

        Refuses while a variable is unmatched or ambiguous and `allow_unmatched` (names or
        regular expressions, matched against the whole TF1 or TF2 name) does not list it.
        Returns the TF1 names assigned.
        """
        if isinstance(allow_unmatched, str):
            allow_unmatched = [allow_unmatched]
        left = [row for row in self.problems() if not self._allowed(row, allow_unmatched)]
        if left:
            described = "; ".join(
                f"{r.status} {'TF1 ' + r.tf1 if r.tf1 else 'TF2 ' + r.tf2} "
                f"{_shape_text(r.shape)} ({r.how})"
                for r in left[:3]
            ) + (f"; and {len(left) - 3} more (report() lists them)" if len(left) > 3 else "")
            raise MappingError(
                f"{len(left)} variable(s) not mapped, nothing assigned: {described}. Fix: add a "
                "rule (pattern, TF2 name) for each, or list it in allow_unmatched to leave it "
                "at its initial value"
            )
        values = {name: self._reader.get_tensor(name) for name in self.pairs}
        self._assign(values)
        return list(self.pairs)

    def assign_values(self, values: abc.Mapping[str, Any]) -> list[str]:
        """Assign TF1 values by TF1 name (a baseline's state after some step) to the paired
        TF2 variables, as `assign()` assigns the checkpoint's; names not paired are ignored.
        Returns the TF1 names assigned."""
        import numpy as np

        paired = {name: np.asarray(values[name]) for name in self.pairs if name in values}
        self._assign(paired)
        return list(paired)

    def _assign(self, values: abc.Mapping[str, Any]) -> None:
        pairs = {name: self.pairs[name] for name in values}
        for name, variable in pairs.items():
            stored, wanted = values[name].dtype, _numpy_dtype(variable)
            if stored != wanted:
                raise MappingError(
                    f"TF1 {name} is {stored}, its TF2 variable "
                    f"{self._state.targets[self._state.pairs[name]].name} {wanted}; nothing "
                    "assigned. Fix: build the Keras variable with the checkpoint's dtype, or "
                    "leave this one out with a rule (pattern, None) and assign it cast yourself"
                )
        for name, variable in pairs.items():
            value = values[name]
            if name in self._state.scale:
                value = (value * value.dtype.type(self._state.scale[name])).astype(value.dtype)
            variable.assign(value)

    def kind(self, name: str) -> str:
        """What the TF1 variable `name` is paired with: "weight", "slot", "average" or
        "step" (the step counter), for reports that group what parts."""
        target = self._state.targets[self._state.pairs[name]]
        if target.own:
            return "step"
        if target.slot == AVERAGE_LIST or name.endswith("/" + AVERAGE):
            return "average"
        return "slot" if target.owner is not None or target.slot else "weight"

    def _with_pairs(self, changes: abc.Mapping[str, int], why: str) -> Mapping:
        """A copy with each TF1 name in `changes` paired to that target index instead, its
        slots following it, `why` in its `how`."""
        old = self._state
        state = _State(
            old.shapes,
            old.targets,
            dict(old.pairs),
            dict(old.how),
            dict(old.status),
            {n: c for n, c in old.candidates.items() if n not in changes},
            dict(old.target_status),
            dict(old.target_how),
            list(old.notes),
            dict(old.scale),
            old.has_optimizer,
            old.nonzero,
            old.learning_rate,
            old.slots,
            old.slot_lists,
        )
        for name, index in changes.items():
            state.pair(name, index, why)
        slots = {  # a slot a rule left out (pattern, None) stays out
            n
            for n in state.shapes
            if "/" in n
            and n.rsplit("/", 1)[0] in changes
            and n in old.slots
            and state.status.get(n) != SKIPPED
        }
        for name in slots:
            for table in (state.pairs, state.how, state.status, state.scale):
                table.pop(name, None)
        _slots(state, slots, state.has_optimizer, state.nonzero, state.learning_rate)
        return Mapping(self.checkpoint, self._reader, state)

    def alternatives(self, limit: int = 24) -> list[Alternative]:
        """Other assignments a wrong layer order would give, for `workbench.check_swaps`.

        Without ambiguous variables: each exchange of two matched layers of one kind, or of
        one parent (attention's `query` and `key`), whose variables have the same kinds and
        shapes (`conv2d_1` and `conv2d_2`), their slots and
        other matched sub-variables (`kernel/ExponentialMovingAverage`) following them; a pair
        whose values are equal in the checkpoint is marked `equal` (no loss can tell them
        apart there, and the model is the same either way). Only exchanges of two layers are
        tried, not rotations of three. With ambiguous variables: every way to resolve them,
        the mapping as made having none to offer. MappingError where more than `limit` would
        need a loss (equal exchanges do not count): add rules that decide some of them.
        """
        state = self._state
        if state.candidates:
            return self._resolutions(limit)
        slots = {n for n in state.shapes if "/" in n and _kind_of_slot(n) in TF1_SLOTS}
        subs = {n for n in state.pairs if n.rsplit("/", 1)[0] in state.shapes} - slots
        layers: dict[str, dict[str, str]] = {}  # TF1 layer path -> kind -> TF1 name
        for name, index in state.pairs.items():
            if state.targets[index].weight and name not in slots | subs and "/" in name:
                layers.setdefault(name.rsplit("/", 1)[0], {})[name.rsplit("/", 1)[1]] = name
        groups: dict[tuple, list[str]] = {}
        for layer, members in layers.items():
            signature = tuple(sorted((kind, state.shapes[n]) for kind, n in members.items()))
            groups.setdefault(("numbered", _template(layer)[0], signature), []).append(layer)
            # siblings of one parent with the same variables: attention's query and key
            parent = layer.rsplit("/", 1)[0] if "/" in layer else ""
            groups.setdefault(("sibling", parent, signature), []).append(layer)
        found, tried = [], set()
        for group in groups.values():
            ordered = sorted(group, key=lambda n: (_template(n)[0], _template(n)[1], n))
            for position, a in enumerate(ordered):
                for b in ordered[position + 1 :]:
                    if (a, b) not in tried:
                        tried.add((a, b))
                        found.append(self._exchange(a, b, layers, subs))
        needed = sum(not alternative.equal for alternative in found)
        if needed > limit:
            raise MappingError(
                f"{needed} exchanges of same-shape layers to try, more than limit={limit}: "
                "pass a larger limit, or name those layers by rules"
            )
        return found

    def _exchange(
        self, a: str, b: str, layers: dict[str, dict[str, str]], subs: set[str]
    ) -> Alternative:
        """Layers `a` and `b` exchanged, with their sub-variables; `equal` if no value moves."""
        state, changes, equal = self._state, {}, True
        for kind, name in layers[a].items():
            other = layers[b][kind]
            moved = [(name, other)] + [
                (sub, other + sub[len(name) :])
                for sub in subs
                if sub.startswith(name + "/") and other + sub[len(name) :] in state.pairs
            ]
            for first, second in moved:
                changes[first], changes[second] = state.pairs[second], state.pairs[first]
                equal = equal and bool((self.value(first) == self.value(second)).all())
        why = f"check_swaps: {a} <-> {b}"
        return Alternative(f"{a} <-> {b}", self._with_pairs(changes, why), equal)

    def _resolutions(self, limit: int) -> list[Alternative]:
        """Every assignment of the ambiguous TF1 variables to their candidates, one to one."""
        import itertools

        state = self._state
        groups: dict[tuple[int, ...], list[str]] = {}
        for name, candidates in state.candidates.items():
            groups.setdefault(tuple(candidates), []).append(name)
        options = []
        for candidates, names in groups.items():
            if len(names) != len(candidates):
                raise MappingError(
                    f"{', '.join(names)}: {len(names)} TF1 and {len(candidates)} TF2 candidates, "
                    "so no one-to-one assignment to try: add rules for them"
                )
            options.append(
                [
                    dict(zip(names, order, strict=True))
                    for order in itertools.permutations(candidates)
                ]
            )
        total = 1
        for choices in options:
            total *= len(choices)
        if total > limit:
            raise MappingError(
                f"{total} ways to resolve the ambiguous variables, more than limit={limit}: "
                "add rules that decide some of them, or pass a larger limit"
            )
        found = []
        for combination in itertools.product(*options):
            changes = {name: index for choice in combination for name, index in choice.items()}
            described = ", ".join(
                f"{name} -> {state.targets[index].name}" for name, index in changes.items()
            )
            mapping = self._with_pairs(changes, "check_swaps: the assignment tried")
            found.append(Alternative(described, mapping, False))
        return found

    def value(self, name: str) -> Any:
        """The checkpoint's value of the TF1 variable `name`."""
        return self._reader.get_tensor(name)

    def target_names(self) -> dict[str, str]:
        """TF1 name -> the name of the TF2 variable it is paired with."""
        return {n: self._state.targets[i].name for n, i in self._state.pairs.items()}

    def candidates(self) -> dict[str, list[str]]:
        """Each ambiguous TF1 name -> the names of its TF2 candidates."""
        state = self._state
        return {n: [state.targets[i].name for i in c] for n, c in state.candidates.items()}

    def weight_names(self) -> list[str]:
        """The TF1 names matched to model variables (no optimizer slot or step counter): the
        names to read from the baseline's final checkpoint with `read_checkpoint(path, names=)`.
        """
        state = self._state
        return [name for name, index in state.pairs.items() if state.targets[index].weight]

    def tf2_values(self, weights_only: bool = False) -> dict[str, Any]:
        """The matched TF2 variables' values now, by TF1 name: the candidate's final weights
        for `workbench.compare`, in the baseline's names. `weights_only`: the model variables
        alone (`weight_names()`), as the baseline's `read_checkpoint(path, names=...)` gives."""
        names = self.weight_names() if weights_only else list(self.pairs)
        return {name: _to_numpy(self.pairs[name]) for name in names}


def read_checkpoint(
    checkpoint_path: str | Path, names: Iterable[str] | None = None
) -> dict[str, Any]:
    """A checkpoint's values as NumPy arrays by name (all, or `names`): the baseline's final
    weights for `workbench.compare`."""
    _, reader, shapes = _read_checkpoint(checkpoint_path)
    wanted = list(shapes) if names is None else list(names)
    missing = [n for n in wanted if n not in shapes]
    if missing:
        raise MappingError(
            f"{checkpoint_path} has no variable {', '.join(missing)}: its names are "
            f"{', '.join(list(shapes)[:8])}{', ...' if len(shapes) > 8 else ''}"
        )
    return {name: reader.get_tensor(name) for name in wanted}


def _numpy_dtype(variable: Any) -> Any:
    import numpy as np

    dtype = variable.dtype
    return np.dtype(getattr(dtype, "as_numpy_dtype", dtype))


def _to_numpy(variable: Any) -> Any:
    import numpy as np

    return np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)
