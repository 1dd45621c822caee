"""The notebooks' TPU-initialisation cell, run for real on the CPU, each case in a fresh process.

The code is the cell of notebooks/02_keras_fit.ipynb that calls `runtime.choose`, taken from
the notebook itself, so these tests run exactly what a reader copies (the same cell is in
notebooks 00, 03 and 04). A process can split its CPU into virtual devices only once, hence
one interpreter per case.
"""

from __future__ import annotations

import json

import pytest
from support import code_cell, run_python

from helpers.runtime import ONE_REPLICA, compact_devices

pytestmark = pytest.mark.tensorflow  # each case starts TensorFlow in a subprocess


PREAMBLE = """
from helpers import runtime
from helpers.quiet import quiet_logs
quiet_logs()
import tensorflow as tf
accelerator, tpu_name, virtual_replicas = "{accelerator}", "", {replicas}
"""
REPORT = """
import json
print(json.dumps({"replicas": strategy.num_replicas_in_sync, "kind": choice.kind,
                  "strategy": type(strategy).__name__,
                  "cpus": len(tf.config.list_logical_devices("CPU"))}))
"""


def initialisation_cell() -> str:
    """02_keras_fit's TPU-initialisation cell."""
    return code_cell("02_keras_fit.ipynb", "runtime.choose(")


@pytest.mark.parametrize(
    ("replicas", "strategy"),
    [(1, "_DefaultDistributionStrategy"), (2, "MirroredStrategy"), (8, "MirroredStrategy")],
)
def test_the_notebook_cell_builds_the_requested_replicas_on_the_cpu(replicas, strategy):
    code = PREAMBLE.format(accelerator="cpu", replicas=replicas) + initialisation_cell() + REPORT
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    *printed, report_line = result.stdout.strip().splitlines()
    report = json.loads(report_line)
    assert report == {"replicas": replicas, "kind": "CPU", "strategy": strategy, "cpus": replicas}
    assert printed[1:] == ([ONE_REPLICA] if replicas == 1 else []) and printed[0].startswith(
        f"Runtime: CPU | {strategy} with {replicas} replica"
    )
    assert "CPU requested" in printed[0] and "TensorFlow 2." in printed[0]
    devices = f"CPU:0-{replicas - 1}" if replicas > 1 else "CPU:0"
    assert f" on {devices} |" in printed[0]
    stands_in = "virtual CPU devices stand in for TPU cores" in printed[0]
    assert stands_in == (replicas > 1)


def test_quiet_logs_keeps_tensorflow_silent_and_verbose_mode_does_not():
    code = PREAMBLE.format(accelerator="cpu", replicas=2) + initialisation_cell()
    code = code.replace("print(runtime.describe(strategy, choice))", "")
    code += "\ntf.compat.v1.train.AdagradOptimizer(0.1)\n"
    quiet = run_python(code, {"TPU_MIGRATION_VERBOSE": None, "TF_CPP_MIN_LOG_LEVEL": None})
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "" and quiet.stdout == ""
    verbose = run_python(code, {"TPU_MIGRATION_VERBOSE": "1", "TF_CPP_MIN_LOG_LEVEL": None})
    assert verbose.returncode == 0, verbose.stderr
    assert verbose.stderr.strip()  # TensorFlow's own C++ start-up log lines


def test_compact_device_names():
    eight = tuple(f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(8))
    assert compact_devices(eight) == "CPU:0-7"
    assert compact_devices(eight[:1]) == "CPU:0"
    assert compact_devices(("/device:GPU:0", "/device:GPU:2")) == "GPU:0, GPU:2"
    assert compact_devices(("weird",)) == "weird"


def pitfall_cell_of_00() -> str:
    """00_setup's cell that tries to split the CPU again after TensorFlow initialised it."""
    return code_cell("00_setup.ipynb", "cannot be modified after being initialized")


@pytest.mark.parametrize("replicas", [1, 4, 64])
def test_the_resplit_pitfall_of_00_holds_for_every_replica_count(replicas):
    """Its premise (a different split, refused) must not depend on the count the reader chose:
    asking for exactly the split already made would be no change, and would not raise."""
    code = (
        PREAMBLE.format(accelerator="cpu", replicas=replicas)
        + initialisation_cell()
        + "\n"
        + pitfall_cell_of_00()
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "RuntimeError: Virtual devices cannot be modified" in result.stdout
