"""What the tests share: the lane under test, fake machines, a subprocess runner, notebook cells
and installed source files.

Tests that build a TensorFlow strategy run in a subprocess: a process can split its CPU into
virtual devices only once, and each case needs a fresh TensorFlow. pytest finds this module
through `pythonpath` in pyproject.toml; test modules import it, never each other.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Which lane this run tests (the Makefile sets it): "reference" (TF 2.15, Keras 2, with
# tf.estimator), "current" (the newest TF, Keras 3) or "colab" (the TF that helpers.colab
# installs on a Colab TPU runtime, Keras 3). The lanes expect different things where upstream
# differs, and that follows the Keras major version each lane's TensorFlow brings.
LANE_KERAS_MAJOR = {"reference": 2, "current": 3, "colab": 3}
LANE = os.environ.get("TPU_MIGRATION_LANE", "reference")
if LANE not in LANE_KERAS_MAJOR:
    raise pytest.UsageError(
        f"TPU_MIGRATION_LANE={LANE!r}: expected one of {', '.join(LANE_KERAS_MAJOR)}"
    )
KERAS_MAJOR = LANE_KERAS_MAJOR[LANE]


class FakeMachine:
    """A folder standing in for `/`, plus environment variables, for `Probe`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env: dict[str, str] = {}

    def add_file(self, relative: str, content: str = "") -> FakeMachine:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        return self

    def add_pci_device(self, slot: str, vendor: str, device: str) -> FakeMachine:
        self.add_file(f"sys/bus/pci/devices/{slot}/vendor", vendor + "\n")
        return self.add_file(f"sys/bus/pci/devices/{slot}/device", device + "\n")

    def probe(self):
        from helpers.environment import Probe

        return Probe(env=dict(self.env), root=self.root)


def run_python(code: str, env: dict[str, str | None] | None = None, timeout: int = 180):
    """Run `code` in a fresh interpreter of this venv; return the CompletedProcess.

    `env` adds variables; a value of None removes the variable. The run gets a TMPDIR of its
    own, removed afterwards, so that a script's `tempfile.mkdtemp()` (a SavedModel, TensorBoard
    logs) leaves nothing in the machine's temporary folder; `env` may name another.
    """
    with tempfile.TemporaryDirectory(prefix="tpu_migration_run_") as scratch:
        full_env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": scratch}
        for name, value in (env or {}).items():
            if value is None:
                full_env.pop(name, None)
            else:
                full_env[name] = value
        return subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            cwd=ROOT,
        )


def run_python_json(
    code: str, env: dict[str, str | None] | None = None, timeout: int = 180
) -> dict:
    """Run `code`, which must print one JSON object as its last stdout line."""
    result = run_python(code, env, timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def code_cell(notebook: str, marker: str) -> str:
    """The source of the one code cell of `notebooks/<notebook>` that contains `marker`.

    Tests that run a notebook's own cell (the copyable code a reader takes) find it this way,
    so the test and the notebook cannot drift apart.
    """
    cells = json.loads((ROOT / "notebooks" / notebook).read_text())["cells"]
    code = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    matches = [source for source in code if marker in source]
    assert len(matches) == 1, f"{notebook}: {len(matches)} code cells contain {marker!r}, not 1"
    return matches[0]


def installed_source(package: str, *parts: str) -> str:
    """One installed source file of `package`, whitespace collapsed, read without importing it.

    The notebooks quote TensorFlow, Keras and the estimator; reading the file (no TensorFlow
    start) pins a quote in milliseconds, and fails where a release changes it. The file is
    named by its parts ("keras", "src", "sgd.py") or by one path ("keras/src/sgd.py").
    """
    package, *parts = "/".join((package, *parts)).split("/")
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, f"{package} is not installed"
    return " ".join(Path(spec.submodule_search_locations[0], *parts).read_text().split())


def definition(source: str, name: str, following: str, where: str = "the source") -> str:
    """The text of `def name(` up to `following`, the definition after it in the file: a quote
    is pinned to the function the notebook names, not found anywhere in the file. A missing
    definition or end fails naming `where` (the file) and what it lacks."""
    start = source.find(f"def {name}(")
    assert start >= 0, f"{where}: no def {name}("
    end = source.find(following, start)
    assert end >= 0, f"{where}: no {following!r} after def {name}("
    return source[start:end]


def assert_quotes(path: str, name: str, following: str, quotes: list[str]) -> str:
    """Each quote is in the definition `name` (up to `following`, as `definition` cuts it) of
    the installed file `path` ("package/folder/file.py"); returns that definition's text, for
    the checks a quote alone cannot make (an order, a count).

    A failing pin names the file, the definition and the quotes it lacks.
    """
    function = definition(installed_source(path), name, following, where=path)
    missing = [quote for quote in quotes if quote not in function]
    assert not missing, f"{path}: def {name}( lacks {missing}"
    return function


def assert_tpu_estimator_quotes(name: str, following: str, quotes: list[str]) -> None:
    """Each quote is in the function `name` of the installed tpu_estimator.py."""
    assert_quotes(
        "tensorflow_estimator/python/estimator/tpu/tpu_estimator.py", name, following, quotes
    )
