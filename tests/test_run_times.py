"""The run-time table (tools.run_times) and the one-notebook check (tools.check_notebook).

Neither times anything here: the table is a record of a `make run`, and what is checked is
that it is written from such a record and lists today's notebooks; the one-notebook check is
checked for the commands it would run, not run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tools import check_notebook, run_times
from tools.project import ROOT, notebook_paths


@dataclass
class Outcome:  # the fields of tools.nbexec.Outcome that the record reads
    source: Path
    seconds: float
    passed: bool


def a_record(tmp_path, seconds=(12.3, 48.0, 7.5)) -> dict:
    outcomes = [
        Outcome(path, s, passed=index != 1)
        for index, (path, s) in enumerate(zip(notebook_paths(), seconds, strict=False))
    ]
    host = {"cpu": "Some CPU", "flags": ["avx2"], "cores": 2, "load": 0.5}
    run_times.write_record(tmp_path / "run_times.json", outcomes, host, wall=80.0)
    return json.loads((tmp_path / "run_times.json").read_text())


def test_the_table_names_the_machine_each_notebook_its_result_and_the_run_figures(tmp_path):
    rendered = run_times.table(a_record(tmp_path))
    first, *_ = notebook_paths()
    assert rendered.startswith(
        "Measured by `make run RUN_JOBS=1` (one notebook at a time) on Some CPU (avx2), 2 cores,"
    )
    assert f"| {first.stem} | 12 | passed |" in rendered
    assert "| **failed** |" in rendered  # a failed run is shown, not left out
    assert (
        "3 notebooks in 1.1 minutes of notebook time (1.3 minutes for that `make run`)" in rendered
    )
    assert "median 12 s, longest 48 s." in rendered


def test_contributing_holds_a_generated_table_of_every_notebook():
    """A new notebook needs a `make run` and `make run-times` before it lands."""
    assert run_times.check((ROOT / "CONTRIBUTING.md").read_text()) is None


def test_a_table_missing_a_notebook_or_the_machine_is_refused(tmp_path):
    record = a_record(tmp_path, seconds=[10.0] * len(notebook_paths()))
    text = f"before\n{run_times.START}\n{run_times.table(record)}\n{run_times.END}\nafter\n"
    assert run_times.check(text) is None
    dropped = text.replace(f"| {notebook_paths()[-1].stem} | 10 | passed |\n", "")
    assert "lists other notebooks" in run_times.check(dropped)
    unnamed = text.replace("Measured by `make run RUN_JOBS=1` (one notebook at a time) on ", "On ")
    assert "names no machine" in run_times.check(unnamed)
    assert "no run-time table markers" in run_times.check("no table here")


def test_this_machine_is_described_without_a_typed_value():
    host = run_times.machine()
    assert host["cpu"] and host["cores"] >= 1
    assert set(host["flags"]) <= set(run_times.NOTED_FLAGS)


def test_one_notebook_check_runs_its_nbval_papermill_cases_and_claim_tests():
    parts = check_notebook.parts(check_notebook.find_notebook("10"))
    shown = [part.shown() for part in parts]
    assert "notebooks/10_conv_batch_norm.ipynb --nbval" in shown[0]
    assert shown[0].startswith("TF_ENABLE_ONEDNN_OPTS=0 TPU_MIGRATION_LANE=reference ")
    assert [part.lane for part in parts[1:3]] == ["reference", "current"]
    for part in parts[1:3]:
        assert "tests/test_claims_10.py" in part.arguments
        assert "test_papermill_run and 10_conv_batch_norm" in part.arguments
    assert "conventions" in parts[-1].title
    colab = check_notebook.parts(check_notebook.find_notebook("10"), colab=True)
    assert [part.lane for part in colab[1:4]] == ["reference", "current", "colab"]


def test_a_notebook_recorded_in_the_current_lane_gets_its_nbval_there():
    (nbval, *_) = check_notebook.parts(check_notebook.find_notebook("11_keras3_jax"))
    assert nbval.lane == "current" and ("XLA_FLAGS", "--xla_cpu_max_isa=AVX2") in nbval.env


@pytest.mark.parametrize("name", ["99", "", "1", "notebooks/xx.ipynb"])
def test_a_name_that_is_not_one_notebook_is_refused_in_one_line(name, capsys):
    assert check_notebook.main([name, "--dry-run"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"NB={name!r} names ") and "\n" not in error


def test_a_run_of_two_notebooks_at_a_time_does_not_write_the_table(tmp_path, monkeypatch, capsys):
    """Two at a time share the machine, so each notebook's own time is longer: the table's
    per-notebook figures come from a run of one at a time."""
    outcomes = [Outcome(path, 10.0, passed=True) for path in notebook_paths()]
    host = {"cpu": "Some CPU", "flags": [], "cores": 2, "load": 0.5}
    record = tmp_path / "run_times.json"
    run_times.write_record(record, outcomes, host, wall=80.0, jobs=2)
    table_file = tmp_path / "CONTRIBUTING.md"
    table_file.write_text(f"{run_times.START}\n{run_times.END}\n")
    monkeypatch.setattr(run_times, "TABLE_FILE", table_file)
    assert run_times.main(["--record", str(record)]) == 1
    assert "make run RUN_JOBS=1" in capsys.readouterr().err
    assert table_file.read_text() == f"{run_times.START}\n{run_times.END}\n"
    run_times.write_record(record, outcomes, host, wall=80.0, jobs=1)
    assert run_times.main(["--record", str(record)]) == 0
    assert "| 10 | passed |" in table_file.read_text()


def test_make_run_starts_the_longest_notebooks_of_the_last_run_first(tmp_path):
    from tools.run_notebooks import longest_first

    a, b, c = (Path(f"{name}.ipynb") for name in "abc")
    record = tmp_path / "run_times.json"
    record.write_text(
        json.dumps(
            {
                "notebooks": [
                    {"notebook": "a.ipynb", "seconds": 5.0},
                    {"notebook": "b.ipynb", "seconds": 50.0},
                ]
            }
        )
    )
    assert longest_first([a, b, c], record) == [c, b, a]  # c is new: its time is unknown
    assert longest_first([a, b, c], tmp_path / "missing.json") == [a, b, c]
    record.write_text("{not json")
    assert longest_first([a, b, c], record) == [a, b, c]
