"""tools.accelerator_check: which notebooks a machine's packages can run, how it finds an
accelerator, that a machine without one gets one line, and (in the current lane, whose
packages its records name) a real run of notebook 00 on the CPU with --allow-cpu, and one
stopped by its time limit that still leaves its record."""

from __future__ import annotations

import json

import pytest
from support import LANE

from helpers.environment import Probe
from tools import accelerator_check
from tools.project import notebook_paths


def test_tensorflow_runs_every_tf2_notebook_and_jax_alone_runs_11():
    with_tf = accelerator_check.notebooks_to_run(lambda module: module == "tensorflow")
    names = [path.name[:2] for path in with_tf]
    assert names == [
        "00",
        "02",
        "03",
        "04",
        "05",
        "08",
        "09",
        "10",
        "11",
        "12",
        "13",
        "14",
        "15",
        "16",
    ]
    assert len(notebook_paths()) == 17  # 01 (TF1), 06 and 07 (no accelerator parameter) left out
    jax_only = accelerator_check.notebooks_to_run(lambda module: module == "jax")
    assert [path.name for path in jax_only] == ["11_keras3_jax.ipynb"]
    assert accelerator_check.notebooks_to_run(lambda module: False) == []


def test_an_accelerator_is_found_from_device_files(tmp_path):
    assert accelerator_check.accelerator(Probe(env={}, root=tmp_path), root=tmp_path) is None
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidia0").write_text("")
    found = accelerator_check.accelerator(Probe(env={}, root=tmp_path), root=tmp_path)
    assert found == "GPU (1 NVIDIA device(s))"
    (tmp_path / "dev" / "accel0").write_text("")
    assert accelerator_check.accelerator(Probe(env={}, root=tmp_path), root=tmp_path).startswith(
        "TPU"
    )


def test_no_accelerator_means_nothing_to_record(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(accelerator_check, "accelerator", lambda: None)
    code = accelerator_check.main(["--out", str(tmp_path)])
    line = capsys.readouterr().out.strip()
    assert code == accelerator_check.EXIT_NOTHING_TO_RECORD and "\n" not in line
    assert line.startswith("no GPU or TPU on this machine") and "--allow-cpu" in line
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(LANE != "current", reason="the records name the current lane's packages")
def test_notebook_00_runs_on_the_cpu_and_is_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(accelerator_check, "accelerator", lambda: None)
    code = accelerator_check.main(["--out", str(tmp_path), "--notebook", "00", "--allow-cpu"])
    (record,) = [
        json.loads(line) for line in (tmp_path / "device_runs.jsonl").read_text().splitlines()
    ]
    assert code == 0 and record["passed"] and record["notebook"] == "00_setup.ipynb"
    assert record["kind"] == "CPU" and record["lane"] == "current"
    assert (tmp_path / "00_setup.device.ipynb").exists()
    # 2 s: after device_run's SIGTERM handler is set (its first lines), before the notebook's
    # first cell has imported TensorFlow and Keras (about 6 s here, 3 s with a warm cache); at
    # 3 s, notebook 00 once ran to its end on a fast machine, and was recorded as passed
    stopped = tmp_path / "stopped"
    code = accelerator_check.main(
        ["--out", str(stopped), "--notebook", "00", "--allow-cpu", "--timeout", "2"]
    )
    (record,) = [
        json.loads(line) for line in (stopped / "device_runs.jsonl").read_text().splitlines()
    ]
    assert code == 1 and not record["passed"]
