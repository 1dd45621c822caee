"""Building strategies for real, each case in a fresh interpreter."""

from __future__ import annotations

import time

import pytest
from conftest import run_python, run_python_json

from helpers.runtime import compact_devices

SETUP_AND_REPORT = """
import json
from helpers import runtime
from helpers.quiet import quiet_logs
quiet_logs()
rt = runtime.setup("cpu", {replicas})
print(json.dumps({{"kind": rt.kind, "replicas": rt.replicas, "devices": list(rt.devices),
                  "strategy": rt.strategy_name, "line": str(rt)}}))
"""


@pytest.mark.parametrize(
    ("replicas", "strategy"),
    [(1, "_DefaultDistributionStrategy"), (2, "MirroredStrategy"), (8, "MirroredStrategy")],
)
def test_cpu_is_split_into_the_requested_number_of_replicas(replicas, strategy):
    report = run_python_json(SETUP_AND_REPORT.format(replicas=replicas))
    assert report["kind"] == "CPU"
    assert report["replicas"] == replicas
    assert len(report["devices"]) == replicas
    assert report["strategy"] == strategy
    assert report["line"].startswith(f"Runtime: CPU | {strategy} with {replicas} replica")
    assert "CPU requested" in report["line"] and "TensorFlow 2." in report["line"]


def test_a_second_setup_with_another_split_asks_for_a_kernel_restart():
    result = run_python(
        "from helpers import runtime\n"
        "runtime.setup('cpu', 4)\n"
        "runtime.setup('cpu', 4)  # the same split again is fine\n"
        "runtime.setup('cpu', 2)\n"
    )
    assert result.returncode != 0
    assert "RuntimeUnavailableError" in result.stderr
    assert "already initialised TensorFlow with 4 CPU device(s)" in result.stderr
    assert "Restart the kernel" in result.stderr


def test_tpu_found_but_not_initialisable_is_one_clear_error(tmp_path):
    """A TPU VM's device file without a TPU build of TensorFlow behind it."""
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "accel0").write_text("")
    result = run_python(
        "from pathlib import Path\n"
        "from helpers import runtime\n"
        "from helpers.environment import Probe\n"
        f"runtime.setup('auto', 8, probe=Probe(env={{}}, root=Path({str(tmp_path)!r})))\n"
    )
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("helpers.errors.RuntimeUnavailableError: A TPU was found")
    assert "TPUClusterResolver(tpu='local')" in last_line
    assert "tensorflow-tpu" in last_line


def test_a_tpu_address_that_does_not_answer_fails_fast_and_clearly():
    started = time.monotonic()
    result = run_python(
        "from helpers import runtime\nruntime.setup('tpu', 8, 'grpc://127.0.0.1:1')"
    )
    assert time.monotonic() - started < 60
    last_line = result.stderr.strip().splitlines()[-1]
    assert "The TPU at grpc://127.0.0.1:1" in last_line and "does not answer" in last_line


def test_quiet_logs_keeps_tensorflow_silent_and_verbose_mode_does_not():
    code = (
        "from helpers.quiet import quiet_logs\n"
        "quiet_logs()\n"
        "import tensorflow as tf\n"
        "from helpers import runtime\n"
        "runtime.setup('cpu', 2)\n"
        "tf.compat.v1.train.AdagradOptimizer(0.1)\n"
    )
    quiet = run_python(code, env={"TPU_MIGRATION_VERBOSE": None, "TF_CPP_MIN_LOG_LEVEL": None})
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "" and quiet.stdout == ""
    verbose = run_python(code, env={"TPU_MIGRATION_VERBOSE": "1", "TF_CPP_MIN_LOG_LEVEL": None})
    assert verbose.returncode == 0, verbose.stderr
    assert verbose.stderr.strip()  # TensorFlow's own C++ start-up log lines


def test_compact_device_names():
    eight = tuple(f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(8))
    assert compact_devices(eight) == "CPU:0-7"
    assert compact_devices(eight[:1]) == "CPU:0"
    assert compact_devices(("/device:GPU:0", "/device:GPU:2")) == "GPU:0, GPU:2"
    assert compact_devices(("weird",)) == "weird"
