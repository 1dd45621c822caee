"""Notebook 01's `model_dir`: a folder that already holds files is refused and left as it was.

The notebook writes checkpoints, summaries and exports into `model_dir`. Pointing it at an
existing Estimator directory must not cost the reader their checkpoints: the notebook never
deletes or overwrites what it did not create.
"""

from __future__ import annotations

import pytest

from tools.nbexec import execute
from tools.project import NOTEBOOKS

pytestmark = [pytest.mark.notebook, pytest.mark.reference_only]
NOTEBOOK = NOTEBOOKS / "01_tpu_estimator.ipynb"


def test_a_model_dir_with_files_is_refused_and_its_files_survive(tmp_path):
    model_dir = tmp_path / "someone_elses_run"
    model_dir.mkdir()
    checkpoint = model_dir / "model.ckpt-100.index"
    checkpoint.write_bytes(b"their checkpoint")

    outcome = execute(NOTEBOOK, tmp_path / "out.ipynb", {"model_dir": str(model_dir)})

    errors = outcome.errors
    assert [error.ename for error in errors] == ["ParameterError"], outcome.summary()
    assert "already holds files" in errors[0].evalue and str(model_dir) in errors[0].evalue
    assert sorted(p.name for p in model_dir.iterdir()) == [checkpoint.name]
    assert checkpoint.read_bytes() == b"their checkpoint"


def test_a_new_model_dir_is_created_and_filled_by_the_run(tmp_path):
    model_dir = tmp_path / "new" / "model_dir"
    parameters = {"model_dir": str(model_dir), "train_steps": 10, "iterations_per_loop": 5}

    outcome = execute(NOTEBOOK, tmp_path / "out.ipynb", parameters)

    assert outcome.passed, outcome.summary()
    assert (model_dir / "estimator" / "checkpoint").is_file()
    assert list((model_dir / "estimator" / "host_call").iterdir())
