"""helpers.cluster: the launcher of notebook 07's worker processes.

The fast tests start small Python processes in place of TensorFlow workers: each run's
error must name every worker's end in its first line, show the end of each unfinished
worker's log, and leave no process behind.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support import run_python

from helpers import cluster


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def failure_of(run_dir: Path, command: list[str], envs: list[dict[str, str]], **launch) -> str:
    with pytest.raises(cluster.WorkersFailed) as raised:
        cluster.run(command, envs, run_dir, **{"timeout": 60, **launch})
    assert isinstance(raised.value, RuntimeError)
    # in a notebook, the error renders as its message alone (helpers.errors.FriendlyError)
    assert raised.value._render_traceback_() == [f"WorkersFailed: {raised.value}"]
    return str(raised.value)


def test_free_ports_are_distinct_and_free():
    ports = cluster.free_ports(3)
    assert len(set(ports)) == 3
    assert all(cluster.port_is_free(port) for port in ports)


def test_each_worker_gets_its_environment_and_not_an_inherited_tf_config(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "inherited from the notebook")
    report = "import json, os, sys; print(json.dumps([os.environ.get('TF_CONFIG'), sys.argv[1]]))"
    command = [*python(report), "an argument"]
    cluster.run(command, [{"TF_CONFIG": "zero"}, {}], tmp_path, timeout=60)
    seen = [json.loads(cluster.log_path(tmp_path, index).read_text()) for index in (0, 1)]
    assert seen == [["zero", "an argument"], [None, "an argument"]]


def test_a_worker_that_raises_is_named_with_its_exception_and_its_log_is_shown(tmp_path):
    code = """
        import os
        if os.environ["INDEX"] == "0":
            print("step 1")
            raise ValueError("bad input")
    """
    failure = failure_of(tmp_path, python(code), [{"INDEX": "0"}, {"INDEX": "1"}])
    lines = failure.splitlines()
    assert (
        lines[0] == "the run did not finish: worker 0: exit code 1, ValueError; worker 1: finished"
    )
    assert "worker 0's log ends:" in failure and "ValueError: bad input" in failure
    assert "worker 1's log" not in failure  # a finished worker's log is not repeated
    assert lines[-1] == f"logs in {tmp_path}"


def test_a_worker_killed_by_a_signal_is_named_by_the_signal(tmp_path):
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    failure = failure_of(tmp_path, python(code), [{}])
    assert failure.splitlines()[0] == "the run did not finish: worker 0: killed by SIGKILL"


def test_the_others_are_stopped_when_the_grace_period_after_a_failure_ends(tmp_path):
    code = """
        import os, sys, time
        if os.environ["INDEX"] == "0":
            sys.exit(3)
        time.sleep(120)  # waits for worker 0 for ever, as a worker in a collective would
    """
    started = time.monotonic()
    envs = [{"INDEX": "0"}, {"INDEX": "1"}]
    failure = failure_of(tmp_path, python(code), envs, grace=0.5, timeout=120)
    assert time.monotonic() - started < 30  # the grace period ended it, not the timeout
    first = failure.splitlines()[0]
    assert first == (
        "the run did not finish: worker 0: exit code 3, see its log; "
        "worker 1: still running, stopped by the launcher"
    )


def test_a_run_past_its_timeout_says_so_and_no_worker_outlives_it(tmp_path, monkeypatch):
    started_workers: list[subprocess.Popen] = []

    def start_and_keep(*arguments, **keywords) -> list[subprocess.Popen]:
        workers = real_start(*arguments, **keywords)
        started_workers.extend(workers)
        return workers

    real_start = cluster.start
    monkeypatch.setattr(cluster, "start", start_and_keep)
    code = """
        import os, time
        if os.environ["INDEX"] == "1":
            time.sleep(120)
    """
    envs = [{"INDEX": "0"}, {"INDEX": "1"}]
    started = time.monotonic()
    failure = failure_of(
        tmp_path / "named", python(code), envs, timeout=5, timeout_name="worker_timeout"
    )
    assert time.monotonic() - started < 60
    assert failure.splitlines()[0] == (
        "the run did not finish within its timeout of 5 s: worker 0: finished; "
        "worker 1: still running, stopped by the launcher; "
        "give it more time (`worker_timeout`) or see the logs below"
    )
    # worker 0 exited by itself; worker 1 was killed and reaped by the launcher
    assert [worker.returncode for worker in started_workers] == [0, -signal.SIGKILL]
    # without `timeout_name`, the error names the launcher's own parameter
    sleeper = python("import time; time.sleep(120)")
    failure = failure_of(tmp_path / "unnamed", sleeper, [{}], timeout=0.5)
    assert failure.splitlines()[0] == (
        "the run did not finish within its timeout of 0.5 s: "
        "worker 0: still running, stopped by the launcher; "
        "give it more time (`timeout`) or see the logs below"
    )
    assert started_workers[2].returncode == -signal.SIGKILL


def test_a_taken_port_is_refused_before_anything_starts(tmp_path):
    run_dir = tmp_path / "run"
    with socket.socket() as other_program:
        other_program.bind(("127.0.0.1", 0))
        other_program.listen()
        taken = [other_program.getsockname()[1], *cluster.free_ports(1)]
        assert not cluster.port_is_free(taken[0])  # another program listens on it
        failure = failure_of(run_dir, python("pass"), [{}, {}], ports=taken)
    assert failure.splitlines() == [
        "worker 0's port is in use: give the workers free ports, e.g. cluster.free_ports(2)",
        f"127.0.0.1:{taken[0]} is taken",
    ]
    assert not run_dir.exists()


def test_an_interrupted_wait_stops_every_worker(tmp_path, monkeypatch):
    workers = cluster.start(python("import time; time.sleep(120)"), [{}, {}], tmp_path)

    def interrupt(_seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cluster.time, "sleep", interrupt)
    with pytest.raises(KeyboardInterrupt):
        cluster.wait(workers, timeout=60, grace=60)
    assert [worker.returncode for worker in workers] == [-signal.SIGKILL] * 2


# The first signal number that `signal.Signals` has no name for.
UNNAMED_SIGNAL = next(number for number in range(1, 128) if number not in set(signal.Signals))


@pytest.mark.parametrize(
    ("returncode", "log", "stopped", "expected"),
    [
        (0, "", False, "finished"),
        (0, "", True, "still running, stopped by the launcher"),
        (-9, "", False, "killed by SIGKILL"),
        (-UNNAMED_SIGNAL, "", False, f"killed by signal {UNNAMED_SIGNAL}"),
        (
            1,
            "Traceback ...\ntensorflow.python.framework.errors_impl.UnavailableError: gone\n",
            False,
            "exit code 1, UnavailableError",
        ),
        (1, "KeyError: 'a'\n...\nRuntimeError: later\n", False, "exit code 1, RuntimeError"),
        (2, "usage: ...\n", False, "exit code 2, see its log"),
    ],
)
def test_outcome_names_how_a_worker_ended(returncode, log, stopped, expected):
    assert cluster.outcome(returncode, log, stopped) == expected


def test_nothing_here_imports_tensorflow():
    result = run_python("import sys, helpers.cluster; print('tensorflow' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
