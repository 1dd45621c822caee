"""The stored TensorFlow 1 run (fixtures/tf1_reference) is notebook 01's run.

Notebook 04 reads the stored run in every TensorFlow version. This test runs notebook 01
(TensorFlow 2.15) as tools.make_tf1_fixture does and asserts that what it saves in its
`model_dir` agrees with the stored run: every loss, weight and prediction, every tensor of
the checkpoint, the SavedModel's predictions and the resumed steps. The tolerance is 1e-6:
the same TensorFlow on another machine need not reproduce the last bits, while a changed
`model_fn`, optimizer setting or data order moves the numbers by far more.

On the machine that made it, though, the fresh run is what TensorFlow 2 must reproduce to the
last bit on one replica: the same test then runs notebook 04 on one replica against it
(`tf1_run_of_this_machine`), whose comparison cell asserts bit-identity there.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import fixtures, regression
from tools.make_tf1_fixture import run_notebook_01
from tools.nbexec import execute
from tools.project import NOTEBOOKS
from workbench import read_checkpoint

pytestmark = [pytest.mark.notebook, pytest.mark.reference_only]
TOLERANCE = 1e-6


def served(saved_model: str) -> np.ndarray:
    import tensorflow as tf

    _, (eval_x, _) = regression.train_and_eval_data(seed=0)
    signature = tf.saved_model.load(saved_model, tags=["serve"]).signatures["serving_default"]
    return signature(x=tf.constant(eval_x))["prediction"].numpy()


def test_notebook_01_writes_the_stored_run(tmp_path, capsys):
    pytest.importorskip("tensorflow_estimator")
    stored = fixtures.load_tf1_run(fixtures.fixture_dir("tf1_reference"))
    fresh = fixtures.load_tf1_run(run_notebook_01(tmp_path / "model_dir"))

    for key in ("steps", "continue_steps", "global_batch", "learning_rate"):
        assert fresh[key] == stored[key], key
    pairs = {
        "losses": (fresh["losses"], stored["losses"]),
        "predictions": (fresh["predictions"], stored["predictions"]),
        "continued losses": (fresh["continued_losses"], stored["continued_losses"]),
        "SavedModel predictions": (served(fresh["saved_model"]), served(stored["saved_model"])),
    }
    for key in ("weights", "continued_weights"):
        for name in stored[key]:
            pairs[f"{key} {name}"] = (fresh[key][name], stored[key][name])
    fresh_tensors = read_checkpoint(fresh["checkpoint"])
    stored_tensors = read_checkpoint(stored["checkpoint"])
    assert sorted(fresh_tensors) == sorted(stored_tensors)
    for name in stored_tensors:
        pairs[f"checkpoint {name}"] = (fresh_tensors[name], stored_tensors[name])

    with capsys.disabled():
        print(f"\nnotebook 01 run again vs the stored run ({stored['tensorflow']}):")
        for what, (actual, expected) in pairs.items():
            difference = np.abs(np.asarray(actual, np.float64) - np.asarray(expected, np.float64))
            print(f"  {what:<36} largest |diff| {difference.max():.3g}")
    for what, (actual, expected) in pairs.items():
        np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE, err_msg=what)

    parameters = {"virtual_replicas": 1, "tf1_run_of_this_machine": str(tmp_path / "model_dir")}
    notebook_04 = tmp_path / "04_against_this_machine.ipynb"
    outcome = execute(NOTEBOOKS / "04_verify_migration.ipynb", notebook_04, parameters)
    assert outcome.passed, outcome.summary()
