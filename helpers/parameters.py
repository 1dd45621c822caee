"""Check papermill parameters before any of them reaches TensorFlow.

A bad value passed with `papermill -p` would otherwise surface many cells later as a long
TensorFlow trace (or worse, run and give wrong numbers). Each notebook calls `validate`
right after its `parameters` cell; the error names every bad parameter, the value given and
what is allowed.

    validate(
        steps=(steps, integer(min=1)),
        accelerator=(accelerator, one_of("auto", "tpu", "gpu", "cpu")),
    )
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.errors import ParameterError


@dataclass(frozen=True)
class Rule:
    """What a parameter may be: a test and the words that describe it."""

    allowed: str  # "an integer from 1 to 64": completes "expected ..."
    accepts: Callable[[Any], bool]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _range_words(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" >= {low}"
    if high is not None:
        return f" <= {high}"
    return ""


def integer(min: int | None = None, max: int | None = None) -> Rule:
    return Rule(
        f"an integer{_range_words(min, max)}",
        lambda v: _is_int(v) and (min is None or v >= min) and (max is None or v <= max),
    )


def number(min: float | None = None, max: float | None = None) -> Rule:
    return Rule(
        f"a number{_range_words(min, max)}",
        lambda v: (
            (_is_int(v) or isinstance(v, float))
            and (min is None or v >= min)
            and (max is None or v <= max)
        ),
    )


def one_of(*choices: Any) -> Rule:
    return Rule(f"one of {', '.join(map(repr, choices))}", lambda v: v in choices)


def text(allow_empty: bool = True) -> Rule:
    return Rule(
        "a string" if allow_empty else "a non-empty string",
        lambda v: isinstance(v, str) and (allow_empty or bool(v.strip())),
    )


def validate(**checks: tuple[Any, Rule]) -> None:
    """Raise one ParameterError listing every parameter whose value breaks its rule."""
    bad = {name: value for name, (value, rule) in checks.items() if not rule.accepts(value)}
    if bad:
        problems = [
            f"  {name}={value!r} ({type(value).__name__}): expected {checks[name][1].allowed}"
            for name, value in bad.items()
        ]
        raise ParameterError(
            "Invalid notebook parameter(s):\n"
            + "\n".join(problems)
            + "\nFix the value in the parameters cell, or pass another with papermill, e.g. "
            f"`papermill -p {next(iter(bad))} VALUE ...`."
        )


def per_replica_batch(global_batch: int, replicas: int, name: str = "global_batch") -> int:
    """Split a global batch evenly across replicas, or say which parameter to change.

    On a TPU every core must receive a batch of the same static shape, so the global batch
    must be a multiple of the number of replicas (cores).
    """
    if replicas < 1 or global_batch % replicas:
        lower = max(replicas, global_batch - global_batch % replicas)
        raise ParameterError(
            f"{name}={global_batch} does not divide across {replicas} replicas: each replica "
            f"(TPU core) needs the same number of examples. Use a multiple of {replicas}, "
            f"such as {lower} or {lower + replicas}."
        )
    return global_batch // replicas


def new_or_empty_folder(path: str, name: str, prefix: str) -> Path:
    """The folder a notebook may write into: `path` if it is new or empty, else a refusal.

    A notebook never deletes or overwrites what it did not create, so a folder that already
    holds files (say, another run's checkpoints) is refused instead of cleared; an empty
    `path` gives a new temporary folder.
    """
    if not path:
        return temporary_folder(prefix)
    folder = Path(path).expanduser()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        what = "is a file" if not folder.is_dir() else "already holds files"
        raise ParameterError(
            f"{name}={path!r} {what}: this notebook writes new checkpoints and never deletes "
            f"or overwrites what it did not create. Give a new or empty folder, or "
            f'{name}="" for a new temporary one.'
        )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def temporary_folder(prefix: str) -> Path:
    """A new folder under the system's temporary directory, removed when the kernel exits.

    A notebook removes what it created and nothing else: the folder is deleted at the
    interpreter's exit (a kernel shutdown or restart, the end of a papermill run), so a reader
    can still look into it while the notebook is open, and repeated runs leave no litter.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
