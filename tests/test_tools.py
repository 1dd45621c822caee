"""The maintainer tools: judging executed notebooks, and re-pointing the repository slug."""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tools.nbexec import PAPERMILL_MARKER_TAG, inspect
from tools.set_repository import rewrite


def executed_notebook(path, *, tagged_error: bool, untagged_error: bool, unexecuted: bool):
    marker = new_markdown_cell("An Exception was encountered")
    marker.metadata["tags"] = [PAPERMILL_MARKER_TAG]
    pitfall = new_code_cell("raise ValueError('on purpose')", execution_count=2)
    pitfall.metadata["tags"] = ["raises-exception"]
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


def test_errors_in_tagged_cells_pass_and_papermill_markers_are_removed(tmp_path):
    path = executed_notebook(
        tmp_path / "a.ipynb", tagged_error=True, untagged_error=False, unexecuted=False
    )
    outcome = inspect(path, path, 1.0)
    assert outcome.passed
    assert [error.ename for error in outcome.errors] == ["ValueError"]
    assert outcome.runtime_line == "Runtime: CPU | x"
    assert PAPERMILL_MARKER_TAG not in path.read_text()
    assert outcome.summary().startswith("PASS a.ipynb")


def test_an_untagged_error_fails_and_is_named_in_the_summary(tmp_path):
    path = executed_notebook(
        tmp_path / "b.ipynb", tagged_error=True, untagged_error=True, unexecuted=True
    )
    outcome = inspect(path, path, 1.0)
    assert not outcome.passed
    assert "cell [3]: ZeroDivisionError: division by zero" in outcome.summary()


def test_unexecuted_cells_fail_the_run(tmp_path):
    path = executed_notebook(
        tmp_path / "c.ipynb", tagged_error=True, untagged_error=False, unexecuted=True
    )
    outcome = inspect(path, path, 1.0)
    assert not outcome.passed and "1 cells did not run" in outcome.summary()


def test_set_repository_rewrites_links_and_setup_cells_only_for_the_old_slug():
    text = (
        "[Colab](https://colab.research.google.com/github/old/repo/blob/main/notebooks/x.ipynb) "
        '"git+https://github.com/old/repo@main" and github.com/old/repository-other'
    )
    assert rewrite(text, "old/repo", "new/place") == (
        "[Colab](https://colab.research.google.com/github/new/place/blob/main/notebooks/x.ipynb) "
        '"git+https://github.com/new/place@main" and github.com/old/repository-other'
    )
