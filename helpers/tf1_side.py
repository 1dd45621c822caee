"""A TensorFlow 1 side environment: run the TF1 half where the notebook's Python cannot.

`TPUEstimator` ends with TensorFlow 2.15, whose wheels stop at Python 3.11, and Colab runs a
newer Python: there, neither notebook 01 nor the workbench's `record` can run in the
notebook's own environment. `plan()` describes a second environment beside it: Python 3.11
(uv, which Colab ships, downloads that Python itself), the reference lane's TensorFlow and
`tensorflow-estimator`, and this package at the commit the notebook installed. `prepare()`
makes it once; `run()` runs a command there as a subprocess (`-m workbench record ...`), so
that the TF2 cells read the baseline it writes. The command imports the TF1 code from a
module: `module_from_cells()` writes the notebook cells that define it into one. Off Colab
nothing is made: the reference lane's `.venv` (made by `make run`) is that environment
already.

Colab sets UV_CONSTRAINT and UV_BUILD_CONSTRAINT to its own pins (googlecolab/colabtools#5237),
which would force its TensorFlow into the side environment: both are unset for uv here.
"""

from __future__ import annotations

import inspect
import json
import linecache
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from helpers.environment import Probe
from helpers.errors import FriendlyError

SIDE_PYTHON = "3.11"  # the newest Python TensorFlow 2.15 has wheels for
# The reference lane's pins (requirements.txt; tests/test_tf1_side.py keeps them equal).
SIDE_PACKAGES = ("tensorflow==2.15.1", "tensorflow-estimator==2.15.0", "numpy==1.26.4")
DISTRIBUTION = "tpu-migration-helpers"
COLAB_FOLDER = Path("/content/tf1-side")
UNSET = ("UV_CONSTRAINT", "UV_BUILD_CONSTRAINT")  # Colab's pins, not the side environment's
# What the TF1 cells of a notebook use without importing it themselves (the setup cell's).
CELL_IMPORTS = (
    "import numpy as np",
    "import tensorflow as tf",
    "import tensorflow.compat.v1 as tf1",
)
MODULE_MARK = "# Written by helpers.tf1_side.module_from_cells from these notebook cells:"


class SideEnvironmentError(FriendlyError, RuntimeError):
    """The side environment could not be made, or its command failed; the message says why."""


@dataclass(frozen=True)
class SidePlan:
    """What `prepare()` does: the commands, the Python they make, and why."""

    commands: tuple[tuple[str, ...], ...] = ()
    python: Path | None = None
    notes: tuple[str, ...] = ()
    unset: tuple[str, ...] = field(default=UNSET)


def project_spec() -> str:
    """This package as pip installs it: the git commit or folder the notebook installed."""
    # A source folder can hold an egg-info of its own, found first: take the installed one.
    found = (d.read_text("direct_url.json") for d in metadata.distributions(name=DISTRIBUTION))
    direct = next((text for text in found if text), None)
    if not direct:
        raise SideEnvironmentError(
            f"{DISTRIBUTION} is not installed from a repository or a folder: install it as the "
            "notebook's first cell does, then make the side environment"
        )
    origin = json.loads(direct)
    url, vcs = origin["url"], origin.get("vcs_info")
    if vcs:
        return f"{DISTRIBUTION} @ git+{url}@{vcs['commit_id']}"
    if url.startswith("file://"):
        return url[len("file://") :]
    return f"{DISTRIBUTION} @ {url}"


def plan(probe: Probe | None = None, folder: Path = COLAB_FOLDER, project: str = "") -> SidePlan:
    """The commands that make the side environment on Colab; none elsewhere."""
    probe = probe or Probe()
    if not probe.in_colab():
        return SidePlan(
            notes=(
                "Not on Colab: run the TF1 half with the reference lane's Python "
                "(.venv/bin/python, made by `make run`), which has TPUEstimator.",
            )
        )
    python = folder / "bin" / "python"
    packages = (*SIDE_PACKAGES, project or project_spec())
    return SidePlan(
        commands=(
            ("uv", "venv", "--python", SIDE_PYTHON, str(folder)),
            ("uv", "pip", "install", "--quiet", "--python", str(python), *packages),
        ),
        python=python,
        notes=(
            f"Colab: a Python {SIDE_PYTHON} environment in {folder} with "
            f"{', '.join(SIDE_PACKAGES[:2])} for the TF1 half (made once).",
        ),
    )


def _environment(unset: Sequence[str] = UNSET) -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in unset}


def prepare(probe: Probe | None = None, folder: Path = COLAB_FOLDER) -> Path | None:
    """Make the side environment (once) and return its Python; None off Colab."""
    todo = plan(probe, folder)
    for note in todo.notes:
        print(note)
    if todo.python is None:
        return None
    if todo.python.exists() and _has_estimator(todo.python):
        print(f"{folder} is ready.")
        return todo.python
    if shutil.which("uv") is None:
        raise SideEnvironmentError(
            "uv is not on this runtime's PATH: `pip install uv`, then make the side environment"
        )
    for command in todo.commands:
        done = subprocess.run(command, env=_environment(todo.unset), capture_output=True, text=True)
        if done.returncode:
            raise SideEnvironmentError(
                f"{' '.join(command[:3])} failed (exit {done.returncode}): {_last_line(done)}"
            )
    return todo.python


def _has_estimator(python: Path) -> bool:
    check = [str(python), "-c", "import tensorflow_estimator"]
    return subprocess.run(check, capture_output=True).returncode == 0


def _last_line(done: subprocess.CompletedProcess) -> str:
    lines = (done.stderr or done.stdout or "").strip().splitlines()
    return lines[-1] if lines else "no output"


def run(
    python: Path | str,
    arguments: Sequence[str],
    cwd: Path | str | None = None,
    extra_environment: Mapping[str, str] | None = None,
) -> str:
    """Run `python arguments...` in the side environment; its stdout, or one line on failure.

    Its stderr (the workbench's progress lines) is printed as it is; a nonzero exit raises
    SideEnvironmentError with the exit code and the last line it printed.
    """
    environment = {**_environment(), **(extra_environment or {})}
    done = subprocess.run(
        [str(python), *arguments], cwd=cwd, env=environment, capture_output=True, text=True
    )
    if done.stderr:
        print(done.stderr.rstrip())
    if done.returncode:
        raise SideEnvironmentError(
            f"the side environment's {' '.join(arguments[:3])} stopped (exit "
            f"{done.returncode}): {_last_line(done)}"
        )
    return done.stdout


def module_from_cells(
    path: Path | str, *functions: Callable, imports: Sequence[str] = CELL_IMPORTS
) -> Path:
    """Write the whole notebook cells that define `functions` into the module `path`.

    A subprocess imports its `model_fn` from a module (`record --model-fn module:model_fn`),
    and a notebook's functions live in cells: IPython keeps each cell's source under the
    file name its functions report (`inspect.getsourcefile`), so the cells can be written
    out whole, with the constants and data they define, after `imports`. Each cell once, in
    the order of `functions`. A file this function did not write is never overwritten.
    """
    path = Path(path)
    if path.exists() and not path.read_text().startswith(MODULE_MARK):
        raise SideEnvironmentError(
            f"{path} exists and was not written by module_from_cells: give a new file name"
        )
    cells: list[str] = []
    for function in functions:
        try:
            filename = inspect.getsourcefile(function) or ""
        except TypeError:  # a built-in: no source file
            filename = ""
        lines = linecache.getlines(filename) if filename else []
        if not lines:
            raise SideEnvironmentError(
                f"the source of {function.__name__} is not available ({filename or 'no file'}): "
                "define it in a notebook cell or a module, then write the module again"
            )
        cell = "".join(lines).rstrip() + "\n"
        if cell not in cells:
            cells.append(cell)
    names = ", ".join(function.__name__ for function in functions)
    text = "\n".join([f"{MODULE_MARK} {names}", *imports, "", *cells])
    compile(text, str(path), "exec")  # a syntax error here, not in the subprocess
    path.write_text(text)
    return path
