"""tools.device_run: the runner that takes notebook 11 to the lent GPU machine (JAX, no
Jupyter, no TensorFlow). Its cell runner is checked on a small notebook here; its one real
job, notebook 11 with TensorFlow made invisible, runs in the lane that has JAX."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import LANE

from tools import device_run
from tools.project import ROOT


def code(source: str, tags: tuple[str, ...] = ()) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": f"c{abs(hash(source)) % 10**8}",
        "metadata": {"tags": list(tags)},
        "outputs": [],
        "source": source,
    }


def small_notebook(*cells: dict) -> dict:
    markdown = {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# title"}
    return {"cells": [markdown, *cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def run(tmp_path, notebook: dict, *arguments: str) -> tuple[int, dict, list[dict]]:
    path = tmp_path / "small.ipynb"
    path.write_text(json.dumps(notebook))
    out = tmp_path / "out"
    status = device_run.main(["--notebook", str(path), "--out", str(out), *arguments])
    executed = json.loads((out / "small.device.ipynb").read_text())
    records = [json.loads(line) for line in (out / "device_runs.jsonl").read_text().splitlines()]
    return status, executed, records


def test_cells_share_one_namespace_and_parameters_land_after_the_parameters_cell(tmp_path):
    notebook = small_notebook(
        code('replicas = 8\nname = "cpu"', ("parameters",)),
        code('import sys\nif "google.colab" in sys.modules:\n    %pip install nothing\n'),
        code('print(f"Runtime: GPU | DataParallel with {replicas} replicas on {name}")'),
        code("replicas * 2"),
    )
    status, executed, (record,) = run(tmp_path, notebook, "-p", "replicas=2", "-p", "name=gpu:0")
    assert status == 0 and record["passed"]
    assert (record["kind"], record["replicas"], record["lane"]) == ("GPU", 2, "current")
    injected = executed["cells"][2]
    assert injected["metadata"]["tags"] == ["injected-parameters"]
    assert "".join(injected["source"]) == "# Parameters\nreplicas = 2\nname = 'gpu:0'\n"
    printed, result = executed["cells"][4]["outputs"], executed["cells"][5]["outputs"]
    assert printed[0]["text"] == ["Runtime: GPU | DataParallel with 2 replicas on gpu:0\n"]
    assert result[0]["output_type"] == "execute_result"
    assert result[0]["data"]["text/plain"] == ["4"]


def test_the_first_failing_cell_stops_the_run_and_what_ran_is_still_written(tmp_path):
    notebook = small_notebook(
        code('print("before")'),
        code('raise ValueError("the batch does not divide")'),
        code('print("never")'),
    )
    status, executed, (record,) = run(tmp_path, notebook)
    assert status == 1 and not record["passed"] and record["replicas"] is None
    first, failing, after = executed["cells"][1:]
    assert first["outputs"][0]["text"] == ["before\n"]
    assert failing["outputs"][0]["ename"] == "ValueError"
    assert failing["outputs"][0]["evalue"] == "the batch does not divide"
    assert after["outputs"] == [] and after["execution_count"] is None


def test_a_failing_cell_keeps_what_it_printed_and_no_recorded_output_survives(tmp_path):
    recorded = code('print("recorded elsewhere")')
    recorded["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["old\n"]}]
    recorded["execution_count"] = 7
    notebook = small_notebook(code('print("parity 1e-3")\nassert False, "parity failed"'), recorded)
    status, executed, (record,) = run(tmp_path, notebook)
    assert status == 1 and record["kind"] in ("CPU", "GPU")
    failing, after = executed["cells"][1:]
    assert [o["output_type"] for o in failing["outputs"]] == ["stream", "error"]
    assert failing["outputs"][0]["text"] == ["parity 1e-3\n"]
    assert after["outputs"] == [] and after["execution_count"] is None


def test_functions_defined_in_cells_have_their_source_and_a_trailing_semicolon_hides(tmp_path):
    notebook = small_notebook(
        code("def double(x):\n    return 2 * x"),
        code("import inspect\nprint(inspect.getsource(double).splitlines()[0])"),
        code("double(2);"),
        code('text = """\n%not a magic\n"""\nprint(text.strip())'),
    )
    status, executed, _ = run(tmp_path, notebook)
    assert status == 0
    assert executed["cells"][2]["outputs"][0]["text"] == ["def double(x):\n"]
    assert executed["cells"][3]["outputs"] == []
    assert executed["cells"][4]["outputs"][0]["text"] == ["%not a magic\n"]


def test_sigterm_stops_the_run_even_inside_except_exception_and_leaves_what_ran(tmp_path):
    notebook = small_notebook(
        code('print("Runtime: CPU | one with 2 replicas")'),
        code(
            "import os, signal, time\ntry:\n    os.kill(os.getpid(), signal.SIGTERM)\n"
            '    time.sleep(5)\nexcept Exception:\n    print("swallowed")'
        ),
        code('print("after")'),
    )
    status, executed, (record,) = run(tmp_path, notebook)
    assert status == 1 and (record["kind"], record["replicas"]) == ("CPU", 2)
    stopped, after = executed["cells"][2:]
    assert [o["output_type"] for o in stopped["outputs"]] == ["error"]
    assert stopped["outputs"][0]["ename"] == "Stopped"
    assert after["outputs"] == [] and after["execution_count"] is None


def test_a_result_is_hidden_only_when_the_last_token_is_a_semicolon():
    assert device_run.ends_in_semicolon("1 + 1;  # hidden")
    assert not device_run.ends_in_semicolon("1 + 1\n# done;")
    assert not device_run.ends_in_semicolon('"a;"')


def test_a_magic_that_is_reached_raises_instead_of_passing_silently(tmp_path):
    status, executed, _ = run(tmp_path, small_notebook(code("%pip install keras")))
    assert status == 1
    assert executed["cells"][1]["outputs"][0]["evalue"] == "IPython magics need Jupyter"


def test_a_hidden_package_is_neither_importable_nor_found():
    script = (
        "import importlib.util, sys\n"
        "from tools import device_run\n"
        "device_run.hide(['wave'])\n"
        "assert importlib.util.find_spec('wave') is None\n"
        "try:\n    import wave\nexcept ImportError as error:\n    print(type(error).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ModuleNotFoundError"


def test_a_parameter_that_is_not_name_equals_value_is_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit):
        device_run.main(["--out", str(tmp_path), "-p", "virtual_replicas"])
    assert "write it as name=value" in capsys.readouterr().err


@pytest.mark.notebook
def test_notebook_11_runs_without_tensorflow_skipping_only_what_needs_it(tmp_path):
    """What the GPU machine runs, on this lane's CPU with TensorFlow hidden: every JAX
    comparison holds, and each TensorFlow-only cell prints its one line (about 15 s)."""
    if LANE != "current":
        pytest.skip("notebook 11 runs in the current lane, the one with JAX and Keras 3")
    command = [sys.executable, "-m", "tools.device_run", "--out", str(tmp_path)]
    command += ["--hide", "tensorflow", "-p", "virtual_replicas=2"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["passed"] and record["tensorflow"] is None
    assert (record["kind"], record["replicas"]) == ("CPU", 2)
    executed = json.loads((tmp_path / "11_keras3_jax.device.ipynb").read_text())
    printed = "".join(
        "".join(output.get("text", ""))
        for cell in executed["cells"]
        for output in cell.get("outputs", [])
    )
    outputs = [output for cell in executed["cells"] for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("name") == "stderr"]
    skipped = [line for line in printed.splitlines() if line.startswith("skipped: ")]
    assert len(skipped) == 5, skipped
    assert "regression.weights.h5: the weights, the accumulators and step 100 read back" in printed
    assert all("needs TensorFlow, which this runtime does not have" in line for line in skipped)
    for compared in ("Model.fit: loss of every step", "custom loop: final dense/kernel"):
        assert compared in printed
    assert "TF backend fit" not in printed and "served predictions" not in printed
