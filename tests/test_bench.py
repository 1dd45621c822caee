"""The benchmark command: its statistics on synthetic timings, and the shape of a --quick run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tools import bench


def test_steps_per_second_is_the_median_over_repeats():
    # 100 steps in 1 s, 2 s and 0.5 s: 100, 50 and 200 steps/s; one slow repeat moves it little
    assert bench.steps_per_second(100, [1.0, 2.0, 0.5]) == 100.0
    assert bench.steps_per_second(100, [1.0, 1.0, 10.0]) == 100.0
    assert bench.steps_per_second(10, [1.0, 0.5]) == 15.0  # even count: mean of the middle two


@pytest.mark.parametrize("seconds", [[], [1.0, 0.0], [-1.0]])
def test_steps_per_second_refuses_empty_or_non_positive_durations(seconds):
    with pytest.raises(ValueError, match="positive durations"):
        bench.steps_per_second(10, seconds)


def test_ratios_divide_by_the_baseline():
    assert bench.ratios({"estimator": 200.0, "fit": 1000.0, "loop": 50.0}, "estimator") == {
        "estimator": 1.0,
        "fit": 5.0,
        "loop": 0.25,
    }


def test_markdown_table_rounds_floats_and_keeps_the_column_order():
    table = bench.markdown_table([{"path": "fit", "steps/s": 1234.5678, "calls": 10}])
    assert table.splitlines() == [
        "| path | steps/s | calls |",
        "|---|---|---|",
        "| fit | 1.23e+03 | 10 |",
    ]


def synthetic_row(workload, path, per_call, rate, batch):
    return {
        "workload": workload,
        "path": path,
        "steps_per_call": per_call,
        "replicas": 1,
        "steps_per_s": rate,
        "examples_per_s": rate * batch,
    }


def test_combine_gives_ratios_to_the_estimator_and_to_the_fastest_loop():
    rows = [
        synthetic_row("tiny", "TPUEstimator iterations_per_loop=1", 1, 100.0, 8),
        synthetic_row("tiny", "Model.fit", 100, 800.0, 8),
        synthetic_row("tiny", "custom loop", 1, 50.0, 8),
        synthetic_row("tiny", "custom loop", 100, 1000.0, 8),
        synthetic_row("mlp", "custom loop", 10, 10.0, 256),
    ]
    flops = {"float32": 10.0 * 256 * bench.MLP_FLOPS_PER_EXAMPLE * 2}  # the MLP at half of it
    report = bench.combine([{"runtime": "CPU", "rows": rows, "matmul_flops": flops}])
    by_path = {(r["workload"], r["path"], r["steps_per_call"]): r for r in report["rows"]}
    fit = by_path[("tiny", "Model.fit", 100)]
    assert fit["vs_estimator"] == pytest.approx(8.0)
    assert fit["vs_best_loop"] == pytest.approx(0.8)
    assert by_path[("tiny", "custom loop", 1)]["vs_best_loop"] == pytest.approx(0.05)
    mlp = by_path[("mlp", "custom loop", 10)]
    assert mlp["vs_estimator"] is None and mlp["flops_fraction"] == pytest.approx(0.5)


def test_without_an_estimator_the_report_says_why():
    rows = [synthetic_row("tiny", "custom loop", 1, 50.0, 8)]
    report = bench.combine([{"runtime": "CPU", "rows": rows, "matmul_flops": None}])
    assert report["rows"][0]["vs_estimator"] is None
    assert any("no tf.estimator" in note for note in report["notes"])


@pytest.mark.reference_only  # about 20 s; the current lane's run is `make bench-current`
@pytest.mark.tensorflow
def test_quick_run_writes_a_markdown_table_and_json(tmp_path):
    command = [sys.executable, "-m", "tools.bench", "--quick", "--out", str(tmp_path)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    report = json.loads((tmp_path / "bench.json").read_text())
    assert report["runtimes"] and report["matmul_flops"]["float32"] > 0
    paths = {row["path"] for row in report["rows"]}
    assert {"Model.fit", "custom loop"} <= paths
    for row in report["rows"]:
        assert row["steps_per_s"] > 0 and row["vs_best_loop"] > 0
        assert row["examples_per_s"] == pytest.approx(
            row["steps_per_s"] * (8 if row["workload"] == "tiny" else 256)
        )
    markdown = (tmp_path / "bench.md").read_text()
    assert markdown.startswith("Runtime: CPU, 1 replica(s), TensorFlow ")
    assert "| workload | replicas | path | steps/call | steps/s |" in markdown


def test_the_jax_worker_keeps_other_xla_flags_and_waits_for_late_collectives(monkeypatch):
    from tools import bench_jax

    monkeypatch.setenv(
        "XLA_FLAGS", "--xla_cpu_max_isa=AVX2 --xla_force_host_platform_device_count=8"
    )
    flags = bench_jax.environment(2)["XLA_FLAGS"].split()
    assert flags[:2] == ["--xla_cpu_max_isa=AVX2", "--xla_force_host_platform_device_count=2"]
    assert set(bench_jax.PATIENT_COLLECTIVES) <= set(flags) and len(flags) == 4
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_collective_call_terminate_timeout_seconds=60")
    flags = bench_jax.environment(2)["XLA_FLAGS"].split()
    assert "--xla_cpu_collective_call_terminate_timeout_seconds=60" in flags and len(flags) == 3


@pytest.mark.tensorflow
def test_a_quick_keras_3_on_jax_worker_measures_both_paths_on_two_devices():
    """`make bench-current`'s JAX rows (tools.bench_jax), in the lane that has JAX: about 15 s."""
    from tools import bench_jax

    if not bench_jax.available():
        pytest.skip("no JAX and Keras 3 in this lane: its JAX rows run in the current lane")
    command = [sys.executable, "-m", "tools.bench", "--jax-worker", "2", "--quick"]
    # About 15 s alone; make test's two halves on a busy 2-core machine took it past 300 s
    done = subprocess.run(
        command, env=bench_jax.environment(2), capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["runtime"].startswith("CPU, 2 JAX device(s), JAX ")
    measured = {(row["workload"], row["path"], row["steps_per_call"]) for row in result["rows"]}
    for workload, calls in bench.settings(quick=True)["calls"].items():
        for path in (bench_jax.FIT, bench_jax.LOOP):
            assert {(workload, path, n) for n in calls} <= measured
    assert all(row["steps_per_s"] > 0 and row["replicas"] == 2 for row in result["rows"])
    report = bench.combine([result, {"runtime": "CPU", "rows": [], "matmul_flops": None}])
    assert any("Keras 3 on JAX rows" in note for note in report["notes"])


MATMUL_FLOPS_OF_A_STEP = """
import json
from helpers.quiet import quiet_logs
quiet_logs()
import tensorflow as tf
from tools import bench

model, optimizer, loss_fn = bench.build(tf, "mlp")
batch = 4
x = tf.zeros([batch, bench.MLP_UNITS[0]])
y = tf.zeros([batch], tf.int32)
step = tf.function(bench.make_step_fn(tf, model, optimizer, loss_fn))  # the benchmark's step
graph = step.get_concrete_function(x, y).graph


def traced_matmul_flops(graph):
    total = 0
    for op in graph.get_operations():
        if op.type == "MatMul":
            a, b = (tensor.shape for tensor in op.inputs)
            m, k = (a[1], a[0]) if op.get_attr("transpose_a") else (a[0], a[1])
            n = b[0] if op.get_attr("transpose_b") else b[1]
            total += 2 * m * k * n
    return total  # a MatMul inside a nested function would be missed, and the test would fail


print(json.dumps({"per_example": traced_matmul_flops(graph) / batch}))
"""


@pytest.mark.tensorflow
def test_the_mlp_flop_count_is_that_of_the_traced_training_step():
    """MLP_FLOPS_PER_EXAMPLE equals the MatMul FLOPs TensorFlow traces for one step, per example
    (no input gradient for the first layer: the tape skips inputs nobody watches)."""
    from support import run_python_json

    report = run_python_json(MATMUL_FLOPS_OF_A_STEP)
    assert report["per_example"] == bench.MLP_FLOPS_PER_EXAMPLE, report
