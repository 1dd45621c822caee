"""The workbench installs on its own, as a reader installs it beside their TF1 code.

`make wheel` builds the wheel; a new venv outside the repository gets it and TensorFlow (the
lane's pinned versions, linked from uv's cache) and nothing else, and the notebooks' `helpers`
package is then deleted from that venv, so that whatever still works needs none of it. There
the console script `tpu-workbench` records the toy model of tests/workbench_toy.py (TensorFlow
2.15 with tensorflow-estimator: the reference lane), maps its checkpoint and compares a TF2 run
with it; in the current lane (the newest TensorFlow, no TPUEstimator) it maps and compares
against the stored baseline (fixtures/workbench_toy).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import LANE, ROOT

from tools import lock

pytestmark = pytest.mark.tensorflow

UV = ROOT / ".venv-tools" / "bin" / "uv"
TOOLKIT = {"reference": ["tensorflow", "tensorflow-estimator"], "current": ["tensorflow"]}
PORT = """
import json, sys
import numpy as np
import workbench_toy
from workbench import load_baseline

steps, weights = workbench_toy.train_tf2(load_baseline(sys.argv[1]), float(sys.argv[2]))
with open("run.json", "w") as file:
    json.dump(steps, file)
np.savez("weights.npz", **weights)
"""


def run(venv: Path, where: Path, *argv: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"  # as an activated venv
    return subprocess.run(
        list(argv), cwd=where, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the venv, a folder outside the repository holding the reader's code)."""
    if LANE not in TOOLKIT:
        pytest.skip(f"the {LANE} lane runs no wheel test")
    if not UV.exists():
        pytest.skip("the wheel test links TensorFlow from uv's cache: make's default installer")
    top = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "wheel", f"BUILD={top / 'build'}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (top / "build" / "dist").glob("*.whl")
    venv = top / "venv"
    subprocess.run(
        [str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)],
        check=True, timeout=120,
    )  # fmt: skip
    lock_file = lock.paths(LANE)[1]
    subprocess.run(
        [str(UV), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
         "-c", str(lock_file), str(wheel), *TOOLKIT[LANE]],
        check=True, timeout=600,
    )  # fmt: skip
    (site,) = (venv / "lib").glob("python3*/site-packages")
    shutil.rmtree(site / "helpers")  # what works below needs none of the notebooks' helpers
    reader = top / "reader"
    reader.mkdir()
    shutil.copy(ROOT / "tests" / "workbench_toy.py", reader)
    (reader / "port.py").write_text(PORT)
    return venv, reader


def test_the_console_script_lists_every_exit_code(installed):
    venv, reader = installed
    shown = run(venv, reader, "tpu-workbench", "--help")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: tpu-workbench ")
    for code in ("0 done", "1 input refused", "2 usage", "3 variables", "4 the synchronized", "5 "):
        assert code in " ".join(shown.stdout.split()), code
    probe = (
        "import sys, workbench, workbench.__main__; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'helpers', 'tensorflow'}))"
    )
    imported = run(venv, reader, "python", "-c", probe)
    assert imported.returncode == 0 and imported.stdout.strip() == "[]", imported


def test_record_map_and_compare_in_the_readers_own_environment(installed):
    venv, reader = installed
    if LANE == "reference":
        recorded = run(venv, reader, "tpu-workbench", "record", "--model-fn",
                       "workbench_toy:model_fn", "--input-fn", "workbench_toy:input_fn",
                       "--batch-size", "8", "--steps", "4", "--out", "baseline")  # fmt: skip
        assert recorded.returncode == 0, recorded.stderr
        assert "4 steps of 8 examples" in recorded.stdout
        stored = json.loads((ROOT / "fixtures" / "workbench_toy" / "baseline.json").read_text())
        kept = json.loads((reader / "baseline" / "baseline.json").read_text())
        assert [s["loss"] for s in kept["steps"]] == pytest.approx(
            [s["loss"] for s in stored["steps"]], abs=1e-6
        )
    else:
        shutil.copytree(ROOT / "fixtures" / "workbench_toy", reader / "baseline")
    mapped = run(venv, reader, "tpu-workbench", "map", "--baseline", "baseline", "--model",
                 "workbench_toy:build_model")  # fmt: skip
    assert mapped.returncode == 0, mapped.stderr
    assert "4 pairs matched, 0 unmatched, 0 ambiguous" in mapped.stdout
    for rate, expected in (("0.1", 0), ("0.12", 4)):
        ported = run(venv, reader, "python", "port.py", "baseline", rate)
        assert ported.returncode == 0, ported.stderr
        compared = run(venv, reader, "tpu-workbench", "compare", "--baseline", "baseline",
                       "--run", "run.json", "--weights", "weights.npz")  # fmt: skip
        assert compared.returncode == expected, compared.stdout + compared.stderr
