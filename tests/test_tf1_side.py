"""helpers.tf1_side: the TF1 side environment. The plan on a faked Colab runtime and off it;
then the path itself, with the reference lane's Python 3.11 standing in for the environment
that uv makes on Colab (only that download step is Colab's): the workbench's `record` runs
there as a subprocess and this lane reads the baseline it wrote."""

from __future__ import annotations

import importlib.util
import linecache
import re
import sys

import pytest
from support import ROOT

from helpers import tf1_side
from helpers.environment import Probe

REFERENCE_PYTHON = ROOT / ".venv" / "bin" / "python"
COLAB = Probe(env={"COLAB_RELEASE_TAG": "release-colab"})


def test_the_side_packages_are_the_reference_lanes_pins():
    locked = (ROOT / "requirements.txt").read_text()
    for pin in tf1_side.SIDE_PACKAGES:
        assert re.search(rf"^{re.escape(pin)}\b", locked, re.M), pin


def test_on_colab_uv_makes_a_python_3_11_environment_with_the_installed_project(tmp_path):
    side = tf1_side.plan(COLAB, folder=tmp_path / "side", project="/src/project")
    make, install = side.commands
    assert make == ("uv", "venv", "--python", "3.11", str(tmp_path / "side"))
    assert install[:6] == ("uv", "pip", "install", "--quiet", "--python", str(side.python))
    assert install[6:] == (*tf1_side.SIDE_PACKAGES, "/src/project")
    assert side.python == tmp_path / "side" / "bin" / "python"
    assert set(side.unset) == {"UV_CONSTRAINT", "UV_BUILD_CONSTRAINT"}


def test_off_colab_nothing_is_made():
    side = tf1_side.plan(Probe(env={}))
    assert side.commands == () and side.python is None
    assert ".venv/bin/python" in side.notes[0]
    assert tf1_side.prepare(Probe(env={})) is None


def test_the_project_is_installed_as_this_lane_installed_it():
    assert tf1_side.project_spec() in (str(ROOT), f"file://{ROOT}") or "@" in (
        tf1_side.project_spec()
    )


def as_cell(source: str, number: int) -> dict:
    """Run `source` as IPython runs a cell: its text kept in linecache under the cell's name."""
    name = f"/tmp/ipykernel_0/cell_{number}.py"
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    namespace: dict = {}
    exec(compile(source, name, "exec"), namespace)
    return namespace


def test_module_from_cells_writes_each_cell_once_and_only_its_own_files(tmp_path):
    data = as_cell("K = 3\n\n\ndef input_fn(params):\n    return [K] * params\n", 1)
    model = as_cell("def model_fn(x):\n    return x * K\n", 2)
    functions = (data["input_fn"], model["model_fn"], data["input_fn"])
    path = tf1_side.module_from_cells(tmp_path / "your_tf1_code.py", *functions, imports=())
    namespace: dict = {}
    exec(path.read_text(), namespace)
    assert namespace["model_fn"](namespace["input_fn"](2)) == [3, 3, 3, 3, 3, 3]
    assert path.read_text().count("K = 3") == 1  # each cell once
    tf1_side.module_from_cells(path, model["model_fn"], imports=())  # its own file: rewritten
    assert "K = 3" not in path.read_text()
    theirs = tmp_path / "theirs.py"
    theirs.write_text("keep = True\n")
    with pytest.raises(tf1_side.SideEnvironmentError, match="was not written by"):
        tf1_side.module_from_cells(theirs, model["model_fn"])
    assert theirs.read_text() == "keep = True\n"
    with pytest.raises(tf1_side.SideEnvironmentError, match="source of len is not available"):
        tf1_side.module_from_cells(tmp_path / "other.py", len)


@pytest.mark.skipif(not REFERENCE_PYTHON.exists(), reason="the reference lane's .venv is not made")
def test_record_runs_in_the_side_environment_and_this_lane_reads_the_baseline(
    tmp_path, monkeypatch
):
    """Notebook 16's Colab cell: the TF1 cells written into a module, `record` run there."""
    from workbench import load_baseline

    toy = (ROOT / "tests" / "workbench_toy.py").read_text()
    cell = as_cell(toy.replace("from __future__ import annotations\n", ""), 3)
    module = tf1_side.module_from_cells(tmp_path / "your_tf1_code.py", cell["model_fn"])
    monkeypatch.setenv("UV_CONSTRAINT", "/colab/constraints.txt")  # unset for the subprocess
    out = tmp_path / "baseline"
    arguments = ["-m", "workbench", "--path", str(module.parent), "record"]
    arguments += ["--model-fn", "your_tf1_code:model_fn", "--input-fn", "your_tf1_code:input_fn"]
    arguments += ["--batch-size", "8", "--steps", "2", "--out", str(out)]
    tf1_side.run(REFERENCE_PYTHON, arguments, cwd=tmp_path)
    seen = ["-c", "import os; print(os.environ.get('UV_CONSTRAINT'))"]
    assert tf1_side.run(REFERENCE_PYTHON, seen).strip() == "None"  # Colab's pin, unset
    baseline = load_baseline(out)
    assert len(baseline.steps) == 2 and baseline.tensorflow == "2.15.1"
    assert sys.version_info[:2] >= (3, 11)  # this lane reads what Python 3.11 wrote


@pytest.mark.skipif(not REFERENCE_PYTHON.exists(), reason="the reference lane's .venv is not made")
def test_a_failing_side_command_is_one_line(tmp_path):
    with pytest.raises(tf1_side.SideEnvironmentError) as raised:
        tf1_side.run(REFERENCE_PYTHON, ["-m", "no_such_module"], cwd=tmp_path)
    message = str(raised.value)
    assert "\n" not in message and "exit 1" in message and "No module named" in message


@pytest.mark.skipif(not REFERENCE_PYTHON.exists(), reason="the reference lane's .venv is not made")
def test_notebook_16s_colab_cell_records_in_the_side_environment(tmp_path):
    """The cell itself, in a kernel of a lane without TPUEstimator (as on Colab): a fake
    `google.colab` module, and the reference lane's Python in place of `prepare()`'s."""
    if importlib.util.find_spec("tensorflow_estimator"):
        pytest.skip("this lane has TPUEstimator: the notebook records in its own process")
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    notebook = nbformat.read(ROOT / "notebooks" / "16_migrate_your_own_model.ipynb", 4)
    cells = notebook.cells
    end = next(i for i, c in enumerate(cells) if "Colab only: record the baseline" in c.source)
    start = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    as_on_colab = nbformat.v4.new_code_cell(
        "import types\nfrom pathlib import Path\nfrom helpers import tf1_side\n"
        "sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
        f"tf1_side.prepare = lambda: Path({str(REFERENCE_PYTHON)!r})\n"
        f"virtual_replicas, model_dir = 2, {str(tmp_path / 'model')!r}"
    )
    same_as_stored = nbformat.v4.new_code_cell(
        "stored = read_stored_baseline()\n"
        "np.testing.assert_allclose([s['loss'] for s in baseline.steps], "
        "[s['loss'] for s in stored.steps], atol=1e-6)"
    )
    notebook.cells = [*cells[: start + 1], as_on_colab, *cells[start + 1 : end + 1], same_as_stored]
    NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = "".join(o.get("text", "") for o in notebook.cells[-2].outputs)
    assert "recorded in the side environment:" in printed and "8 steps of 16 examples" in printed
