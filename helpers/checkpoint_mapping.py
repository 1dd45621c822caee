"""Carry a TF1 (Estimator) checkpoint into TF2 variables by an explicit name mapping.

An Estimator checkpoint is name-based: `dense/kernel`, `dense/kernel/Adagrad`,
`global_step`. A TF2 model has no such names to match (Keras 3 names a variable `kernel`,
with a path like `regression/dense/kernel`), so the safe migration reads the checkpoint with
`tf.train.load_checkpoint` and assigns each tensor to the variable named for it:

    mapping = {"dense/kernel": layer.kernel, "dense/bias": layer.bias}
    report = check_mapping(checkpoint_path, mapping, required=model.weights)
    for name, variable in mapping.items():
        variable.assign(reader.get_tensor(name))

`check_mapping` refuses a mapping that would silently go wrong: checkpoint names that do not
exist (with the closest existing names), shapes or dtypes that differ, one variable mapped
twice, and `required` variables that nothing is mapped to. Its report lists what was carried
over and, as important, what was not (the step counter, optimizer slots).
`assign_from_checkpoint` checks and assigns in one call.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from helpers.compare import format_table
from helpers.errors import FriendlyError


class CheckpointMappingError(FriendlyError, ValueError):
    """The mapping does not fit the checkpoint or the model; the message lists every problem."""


def variable_name(variable: Any) -> str:
    """A readable name: the Keras 3 path, else the TF name without ':0'."""
    name = getattr(variable, "path", None) or getattr(variable, "name", None) or repr(variable)
    return str(name).removesuffix(":0")


def _shape(shape: Any) -> tuple[int, ...]:
    return tuple(int(dim) for dim in shape)


def _dtype(dtype: Any) -> str:
    """'float32' from a tf.DType, a NumPy dtype or the string Keras 3 uses."""
    return str(dtype) if isinstance(dtype, str) else str(getattr(dtype, "name", dtype))


def _reader(checkpoint: Any) -> Any:
    if hasattr(checkpoint, "get_variable_to_shape_map"):
        return checkpoint
    import tensorflow as tf

    return tf.train.load_checkpoint(str(checkpoint))


@dataclass(frozen=True)
class MappingReport:
    """What a checked mapping carries over, and what it leaves in the checkpoint."""

    carried: tuple[tuple[str, tuple[int, ...], str], ...]  # checkpoint name, shape, variable
    left_behind: tuple[tuple[str, tuple[int, ...], str], ...]  # checkpoint name, shape, dtype

    def __str__(self) -> str:
        total = len(self.carried) + len(self.left_behind)
        lines = [
            f"Carried over: {len(self.carried)} of {total} checkpoint variables",
            format_table(
                ["checkpoint name", "shape", "TF2 variable"],
                [[name, str(shape), target] for name, shape, target in self.carried],
            ),
        ]
        if self.left_behind:
            left = ", ".join(f"{name} {shape} {dtype}" for name, shape, dtype in self.left_behind)
            lines.append(f"Not carried over: {left}")
        else:
            lines.append("Not carried over: nothing")
        return "\n".join(lines)


def check_mapping(
    checkpoint: Any,
    mapping: Mapping[str, Any],
    required: Iterable[Any] = (),
) -> MappingReport:
    """Check `mapping` ({checkpoint name: variable}) against a checkpoint and the model.

    `checkpoint` is a checkpoint path (prefix) or a reader from `tf.train.load_checkpoint`.
    `required` are variables that must each receive a value, typically `model.weights`.
    Raises CheckpointMappingError listing every problem; returns a MappingReport otherwise.
    """
    reader = _reader(checkpoint)
    shapes = {name: _shape(shape) for name, shape in reader.get_variable_to_shape_map().items()}
    dtypes = {name: _dtype(dtype) for name, dtype in reader.get_variable_to_dtype_map().items()}

    problems: list[list[str]] = []
    targets: dict[int, str] = {}
    for name, variable in mapping.items():
        target = variable_name(variable)
        if id(variable) in targets:
            problems.append([name, target, f"also the target of {targets[id(variable)]}"])
        targets[id(variable)] = name
        if name not in shapes:
            close = difflib.get_close_matches(name, list(shapes), n=2, cutoff=0.5)
            hint = f"; closest: {', '.join(close)}" if close else ""
            problems.append([name, target, f"not in the checkpoint{hint}"])
            continue
        if _shape(variable.shape) != shapes[name]:
            problems.append(
                [
                    name,
                    target,
                    f"shape {shapes[name]} in the checkpoint, "
                    f"{_shape(variable.shape)} in the model",
                ]
            )
        if _dtype(variable.dtype) != dtypes[name]:
            problems.append(
                [
                    name,
                    target,
                    f"dtype {dtypes[name]} in the checkpoint, "
                    f"{_dtype(variable.dtype)} in the model",
                ]
            )
    for variable in required:
        if id(variable) not in targets:
            problems.append(["(none)", variable_name(variable), "model variable left unmapped"])

    if problems:
        raise CheckpointMappingError(
            f"The mapping does not fit the checkpoint and the model ({len(problems)} "
            "problem(s)); nothing was assigned:\n"
            + format_table(["checkpoint name", "TF2 variable", "problem"], problems)
            + "\nCheckpoint variables: "
            + ", ".join(f"{name} {shape}" for name, shape in sorted(shapes.items()))
        )
    carried = tuple(
        (name, shapes[name], variable_name(variable)) for name, variable in mapping.items()
    )
    left_behind = tuple(
        (name, shapes[name], dtypes[name]) for name in sorted(shapes) if name not in mapping
    )
    return MappingReport(carried, left_behind)


def assign_from_checkpoint(
    checkpoint: Any,
    mapping: Mapping[str, Any],
    required: Iterable[Any] = (),
) -> MappingReport:
    """`check_mapping`, then assign every mapped tensor to its variable."""
    reader = _reader(checkpoint)
    report = check_mapping(reader, mapping, required)
    for name, variable in mapping.items():
        variable.assign(reader.get_tensor(name))
    return report


def adagrad_accumulator(optimizer: Any, variable: Any) -> Any:
    """The Keras Adagrad accumulator (slot) of `variable`, the TF2 home of `<name>/Adagrad`.

    Neither Keras 2.15's optimizer nor Keras 3's has a public way to look a slot up; both
    keep the accumulators in `_accumulators`, in the order of the variables the optimizer was
    built with. The legacy Keras 2 optimizers have `get_slot`.
    """
    if hasattr(optimizer, "get_slot"):
        return optimizer.get_slot(variable, "accumulator")
    accumulators = getattr(optimizer, "_accumulators", None)
    if not accumulators:
        raise CheckpointMappingError(
            f"{type(optimizer).__name__} has no accumulators yet: call "
            "optimizer.build(model.trainable_variables) before mapping its slots."
        )
    try:
        if hasattr(optimizer, "_get_variable_index"):  # Keras 3
            index = optimizer._get_variable_index(variable)
        else:  # Keras 2.15
            index = optimizer._index_dict[optimizer._var_key(variable)]
    except (KeyError, AttributeError):
        raise CheckpointMappingError(
            f"The optimizer was not built with {variable_name(variable)}: build it with the "
            "model's trainable variables."
        ) from None
    return accumulators[index]
