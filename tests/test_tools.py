"""The maintainer tools: executing and judging notebooks as Colab's "Run all" would (tags
ignored, the first error stops the run and fails it), and re-pointing the repository slug."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from support import ROOT

from tools.compat_table import LANES, read_records, table
from tools.nbexec import PAPERMILL_MARKER_TAG, RAISES_EXCEPTION_TAG, execute, inspect
from tools.set_repository import rewrite


def executed_notebook(path, *, tagged_error: bool, untagged_error: bool, unexecuted: bool):
    """An executed notebook as papermill writes it, with the errors asked for."""
    marker = new_markdown_cell("An Exception was encountered")
    marker.metadata["tags"] = [PAPERMILL_MARKER_TAG]
    pitfall = new_code_cell("raise ValueError('on purpose')", execution_count=2)
    pitfall.metadata["tags"] = [RAISES_EXCEPTION_TAG]
    if tagged_error:
        pitfall.outputs = [
            new_output("error", ename="ValueError", evalue="on purpose", traceback=[])
        ]
    broken = new_code_cell("1/0", execution_count=3)
    if untagged_error:
        broken.outputs = [
            new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])
        ]
    runtime = new_code_cell("print(rt)", execution_count=1)
    runtime.outputs = [new_output("stream", name="stdout", text="Runtime: CPU | x\n")]
    last = new_code_cell("x = 1", execution_count=None if unexecuted else 4)
    nbformat.write(new_notebook(cells=[marker, runtime, pitfall, broken, last]), path)
    return path


def test_a_run_without_errors_passes_and_papermill_markers_are_removed(tmp_path):
    path = executed_notebook(
        tmp_path / "a.ipynb", tagged_error=False, untagged_error=False, unexecuted=False
    )
    outcome = inspect(path, path, 1.0)
    assert outcome.passed and outcome.errors == []
    assert outcome.runtime_line == "Runtime: CPU | x"
    assert PAPERMILL_MARKER_TAG not in path.read_text()
    assert outcome.summary().startswith("PASS a.ipynb")


def test_an_error_in_a_cell_tagged_raises_exception_fails_the_run(tmp_path):
    path = executed_notebook(
        tmp_path / "b.ipynb", tagged_error=True, untagged_error=False, unexecuted=False
    )
    outcome = inspect(path, path, 1.0)
    assert not outcome.passed
    assert [error.ename for error in outcome.errors] == ["ValueError"]
    assert "FAIL b.ipynb" in outcome.summary()
    assert "cell [2]: ValueError: on purpose" in outcome.summary()


def test_the_first_error_is_named_in_the_summary(tmp_path):
    path = executed_notebook(
        tmp_path / "c.ipynb", tagged_error=False, untagged_error=True, unexecuted=True
    )
    outcome = inspect(path, path, 1.0)
    assert not outcome.passed
    assert "cell [3]: ZeroDivisionError: division by zero" in outcome.summary()


def test_unexecuted_cells_fail_the_run(tmp_path):
    path = executed_notebook(
        tmp_path / "d.ipynb", tagged_error=False, untagged_error=False, unexecuted=True
    )
    outcome = inspect(path, path, 1.0)
    assert not outcome.passed and "1 cells did not run" in outcome.summary()


CAUGHT_PITFALL = """\
try:
    int("eight")
except ValueError as error:
    print(f"{type(error).__name__}: {str(error).splitlines()[0]}")
else:
    raise AssertionError("expected ValueError: int() of a word")"""


def test_execution_ignores_the_raises_exception_tag_and_stops_at_the_first_error(tmp_path):
    """What Colab's "Run all" does: a tagged cell that raises stops the notebook."""
    tagged = new_code_cell("raise ValueError('on purpose')")
    tagged.metadata["tags"] = [RAISES_EXCEPTION_TAG]
    source = tmp_path / "tagged.ipynb"
    cells = [new_code_cell("print('before')"), tagged, new_code_cell("print('after')")]
    nbformat.write(new_notebook(cells=cells), source)

    outcome = execute(source, tmp_path / "out" / "tagged.ipynb")

    assert not outcome.passed
    assert [(error.ename, error.evalue) for error in outcome.errors] == [
        ("ValueError", "on purpose")
    ]
    assert outcome.unexecuted_cells == 1, "the cell after the error must not run"
    executed = nbformat.read(outcome.output, as_version=4)
    assert [cell.execution_count for cell in executed.cells] == [1, 2, None]


def test_a_pitfall_caught_in_its_cell_runs_to_the_end(tmp_path):
    source = tmp_path / "caught.ipynb"
    cells = [new_code_cell(CAUGHT_PITFALL), new_code_cell("print('after')")]
    nbformat.write(new_notebook(cells=cells), source)

    outcome = execute(source, tmp_path / "out" / "caught.ipynb")

    assert outcome.passed, outcome.summary()
    executed = nbformat.read(outcome.output, as_version=4)
    assert executed.cells[0].outputs[0].text == (
        "ValueError: invalid literal for int() with base 10: 'eight'\n"
    )


def test_set_repository_rewrites_links_and_setup_cells_only_for_the_old_slug():
    text = (
        "[Colab](https://colab.research.google.com/github/old/repo/blob/main/notebooks/x.ipynb) "
        '"git+https://github.com/old/repo@main" and github.com/old/repository-other'
    )
    assert rewrite(text, "old/repo", "new/place") == (
        "[Colab](https://colab.research.google.com/github/new/place/blob/main/notebooks/x.ipynb) "
        '"git+https://github.com/new/place@main" and github.com/old/repository-other'
    )


def test_compatibility_table_has_a_column_per_lane_and_names_every_runtime_in_it():
    def run(notebook, lane, replicas=8, error=None, passed=True):
        versions = {"reference": "2.15.1", "colab": "2.20.0", "current": "2.21.0"}
        return {
            "notebook": notebook,
            "lane": lane,
            "kind": "CPU",
            "replicas": None if error else replicas,
            "expected_error": error,
            "passed": passed,
            "tensorflow": versions[lane],
            "keras": "2.15.0" if lane == "reference" else "3.15.1",
        }

    records = [
        run("00_setup.ipynb", "reference", 1),
        run("00_setup.ipynb", "reference", 8),
        run("00_setup.ipynb", "colab"),
        run("00_setup.ipynb", "current", 2, passed=False),
        run("01_tpu_estimator.ipynb", "colab", error="EstimatorUnavailableError"),
    ]
    lines = table(records).splitlines()
    assert lines[0] == "| notebook | TF 2.15 | TF 2.20 (Colab) | newest TF |"
    assert list(LANES) == ["reference", "colab", "current"]
    assert lines[2] == (
        "| 00_setup | CPU: runs (1, 8 replicas); GPU, TPU: not verified "
        "| CPU: runs (8 replicas); GPU, TPU: not verified "
        "| CPU: fails (1 of 1 runs); GPU, TPU: not verified |"
    )
    assert lines[3] == (
        "| 01_tpu_estimator | CPU, GPU, TPU: not verified "
        "| CPU: stops with a clear message; GPU, TPU: not verified "
        "| CPU, GPU, TPU: not verified |"
    )
    assert "the Colab lane (TensorFlow 2.20.0, Keras 3.15.1)" in table(records)


def test_a_committed_device_run_fills_its_runtime_and_says_where_it_came_from(tmp_path):
    """tools.device_run's line (notebook 11 on a lent GPU, no TensorFlow) lands in the table."""
    lane = {"notebook": "11_keras3_jax.ipynb", "lane": "current", "kind": "CPU", "replicas": 8}
    lane |= {"expected_error": None, "passed": True, "tensorflow": "2.21.0", "keras": "3.15.1"}
    device = {**lane, "kind": "GPU", "replicas": 1, "tensorflow": None, "jax": "0.11.2"}
    device |= {"runner": "tools.device_run", "machine": "1 × NVIDIA H200", "date": "2026-12-01"}
    (tmp_path / "device_runs.jsonl").write_text(json.dumps(device) + "\n")
    for name in [*LANES, "reference-nbval", "current-nbval"]:
        (tmp_path / f"{name}.jsonl").write_text(
            json.dumps(lane) + "\n" if name == "current" else ""
        )
    rendered = table(read_records(tmp_path, device=tmp_path / "device_runs.jsonl"))
    row = next(line for line in rendered.splitlines() if line.startswith("| 11_keras3_jax |"))
    assert row.endswith("| CPU: runs (8 replicas); GPU: runs (1 replica); TPU: not verified |")
    assert (
        "- GPU in the newest TF column: `11_keras3_jax.ipynb` run by `tools/device_run.py` on "
        "1 × NVIDIA H200 on 2026-12-01, with JAX 0.11.2 and Keras 3.15.1, without TensorFlow, "
        "passed."
    ) in rendered
    assert "the current lane, the newest release (TensorFlow 2.21.0, Keras 3.15.1 at" in rendered


# `make run` executes the notebooks with the reference venv only; newer ipykernels (the other
# lanes) may log "KeyboardInterrupt caught in kernel" while the kernel shuts down.
@pytest.mark.reference_only
def test_make_run_prints_progress_and_results_and_the_kernels_own_stderr(tmp_path):
    """`make run` (tools.run_notebooks): nothing but progress and result lines on stdout; on
    stderr, what the kernel itself writes there, and no warning about unencrypted TCP (the
    kernel is reached over IPC)."""
    source = tmp_path / "quiet.ipynb"
    cell = "import os\nos.write(2, b'written to the kernel stderr\\n')\nprint('Runtime: CPU | x')"
    nbformat.write(new_notebook(cells=[new_code_cell(cell)]), source)
    result = subprocess.run(
        [sys.executable, "-m", "tools.run_notebooks", "--out", str(tmp_path / "out"), str(source)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # ipykernel logs "KeyboardInterrupt caught" when the shutdown's interrupt reaches it while it
    # still processes a message (kernelbase.py, dispatch_shell), which load makes likely,
    # and libzmq's signaler can abort the dying kernel's socket with an assertion line: both
    # noise of the shutdown, after the notebook has passed (the first behind the kernel's log
    # prefix, "[IPKernelApp] ERROR | ", when its logger is configured)
    shutdown_noise = (
        "KeyboardInterrupt caught in kernel.",
        "Assertion failed: pfd.revents & POLLIN",
    )
    stderr_lines = result.stderr.splitlines()
    kept = [line for line in stderr_lines if not any(noise in line for noise in shutdown_noise)]
    assert kept == ["written to the kernel stderr"], result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines[0] == "[1/1] running quiet.ipynb ..."
    assert re.fullmatch(r" +PASS quiet\.ipynb +\d+\.\ds  Runtime: CPU \| x", lines[1])
    assert lines[2:] == [
        f"Executed notebooks are in {tmp_path / 'out'}/",
        "  " + lines[1].strip(),
        "1 passed, 0 failed",
    ]
