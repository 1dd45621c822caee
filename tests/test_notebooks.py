"""Run the notebooks with papermill under other parameters (the nbval run uses the defaults)."""

from __future__ import annotations

import re
from collections import defaultdict

import nbformat
import pytest
from notebook_cases import CASES, Case

from tools.nbexec import execute
from tools.project import NOTEBOOKS, notebook_paths

pytestmark = pytest.mark.notebook


def parameter_names(path) -> set[str]:
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    return set(re.findall(r"^(\w+)\s*=", cell.source, flags=re.MULTILINE))


def test_every_notebook_has_good_and_bad_runs_and_replica_counts_1_2_8_where_it_has_them():
    replicas: dict[str, set[int]] = defaultdict(set)
    good: dict[str, int] = defaultdict(int)
    bad: dict[str, int] = defaultdict(int)
    for case in CASES:
        if case.error is None:
            good[case.notebook] += 1
            replicas[case.notebook].add(case.parameters.get("virtual_replicas", 8))
        else:
            bad[case.notebook] += 1
    for path in notebook_paths():
        assert good[path.name] >= 2 and bad[path.name] >= 1, path.name
        if "virtual_replicas" in parameter_names(path):
            assert {1, 2, 8} <= replicas[path.name], path.name


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_papermill_run(case: Case, tmp_path):
    outcome = execute(NOTEBOOKS / case.notebook, tmp_path / case.notebook, case.parameters)
    if case.error is None:
        assert outcome.passed, outcome.summary()
        if "virtual_replicas" in case.parameters:
            replicas = case.parameters["virtual_replicas"]
            assert f"with {replicas} replica" in outcome.runtime_line
        return
    unexpected = outcome.unexpected_errors
    assert len(unexpected) == 1, outcome.summary()
    error = unexpected[0]
    assert error.ename == case.error
    assert case.message in error.evalue


def test_bad_parameter_errors_render_as_one_line_not_a_stack_trace(tmp_path):
    output = tmp_path / "bad.ipynb"
    execute(NOTEBOOKS / "00_setup.ipynb", output, {"virtual_replicas": "eight"})
    nb = nbformat.read(output, as_version=4)
    errors = [
        out for cell in nb.cells for out in cell.get("outputs", []) if out.output_type == "error"
    ]
    bad = [out for out in errors if out.ename == "ParameterError"]
    assert len(bad) == 1
    assert bad[0].traceback == [
        "ParameterError: Invalid notebook parameter(s):\n"
        "  virtual_replicas='eight' (str): expected an integer from 1 to 64\n"
        "Fix the value in the parameters cell, or pass another with papermill, e.g. "
        "`papermill -p virtual_replicas VALUE ...`."
    ]
