"""A claim of notebook 07 that its cells do not show, run with this lane's TensorFlow.

Notebook 07 has every worker call `save`, because saving is a collective operation for
variables synchronised on read: a chief that saves alone finishes when the checkpoint holds
only mirrored variables, and does not when it holds a variable synchronised on read. Here two
real `MultiWorkerMirroredStrategy` workers, started by `helpers.cluster` with the notebook's
worker environment, let only the chief save, once each way.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support import LANE, code_cell

from helpers import cluster

# Each run starts two TensorFlow processes (about a minute): the reference lane runs it with
# Keras 2 and the current lane with Keras 3 and the newest TensorFlow; the Colab lane, Keras 3
# as well, runs notebook 07 itself at its defaults, whose workers all save.
pytestmark = [
    pytest.mark.tensorflow,
    pytest.mark.skipif(LANE == "colab", reason="Keras 3's workers run in the current lane"),
]

# A worker of notebook 07's kind: two workers, one replica each; only the chief saves.
CHIEF_SAVES_ALONE = """
import os, sys, time
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    kernel = tf.Variable([1.0, 2.0])  # mirrored, as a layer's
    total = tf.Variable(0.0, synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.SUM)  # as a metric's
tracked = {"kernel": kernel, "total": total} if sys.argv[1] == "with_metric" else {"kernel": kernel}
checkpoint = tf.train.Checkpoint(**tracked)
done = os.path.join(sys.argv[2], "chief_saved")
if strategy.extended.should_checkpoint:
    checkpoint.save(os.path.join(sys.argv[2], "ckpt"))
    open(done, "w").close()
else:  # stays up without saving until the chief has saved, or for 20 s
    deadline = time.monotonic() + 20
    while not os.path.exists(done) and time.monotonic() < deadline:
        time.sleep(0.1)
print("exits")
"""


def notebook_worker_env() -> dict[str, str]:
    """The environment notebook 07 gives its workers: its `WORKER_ENV` cell, run here."""
    namespace: dict = {}
    exec(code_cell("07_multi_worker.ipynb", "WORKER_ENV = {"), namespace)
    return namespace["WORKER_ENV"]


def run_chief_saving_alone(run_dir: Path, tracked: str) -> str | None:
    """None if both workers finished, else the launcher's error."""
    ports = cluster.free_ports(2)
    workers = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    envs = [
        {
            **notebook_worker_env(),
            "TF_CONFIG": json.dumps({"cluster": workers, "task": {"type": "worker", "index": i}}),
        }
        for i in range(2)
    ]
    command = [sys.executable, "-c", CHIEF_SAVES_ALONE, tracked, str(run_dir)]
    try:
        cluster.run(command, envs, run_dir, timeout=240, ports=ports, grace=30)
    except cluster.WorkersFailed as error:
        return str(error)
    return None


def test_saving_is_a_collective_only_for_variables_synchronised_on_read(tmp_path):
    mirrored_only = run_chief_saving_alone(tmp_path / "mirrored", "mirrored_only")
    assert mirrored_only is None, mirrored_only
    assert (tmp_path / "mirrored" / "chief_saved").exists()

    with_metric = run_chief_saving_alone(tmp_path / "on_read", "with_metric")
    assert with_metric is not None, "the chief saved a SyncOnRead variable on its own"
    assert with_metric.splitlines()[0].startswith("the run did not finish: worker 0: ")
    assert "CollectiveReduce" in with_metric  # the chief waited in the all-reduce of `total`
    assert not (tmp_path / "on_read" / "chief_saved").exists()
