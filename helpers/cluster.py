"""Start worker processes on this machine, wait for them, and say how each one ended.

Notebook 07 runs `MultiWorkerMirroredStrategy` with one process per worker over the loopback
network. What it teaches stays in its cells: the strategy, `TF_CONFIG` and the worker's code.
This module is the launcher around them, which a reader on real machines replaces with their
cluster manager: free ports, starting the processes with their environments and log files,
waiting with a time limit, stopping whatever is left, and one error that names each worker's
end. No worker outlives the launcher, even when the cell is interrupted. Nothing here imports
TensorFlow.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from helpers.errors import FriendlyError

GRACE_SECONDS = 60.0  # how long the others may take to notice that a worker failed
STOPPED = "still running, stopped by the launcher"  # a worker's end when the launcher ended it
LOG_LINES_SHOWN = 5  # the end of each unfinished worker's log, in the error
# The last "SomeError: message" line of a Python traceback names why a worker exited.
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): ", re.MULTILINE)


class WorkersFailed(FriendlyError, RuntimeError):
    """A multi-worker run that did not start or did not finish: which worker, and why."""


def free_ports(count: int) -> list[int]:
    """`count` distinct ports on 127.0.0.1 that were free a moment ago (the system's choice)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))  # port 0: the system picks a free one
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def port_is_free(port: int) -> bool:
    """Whether a server could bind `port` on 127.0.0.1 now."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def log_path(run_dir: Path, index: int) -> Path:
    """Where worker `index` writes its output (stdout and stderr together)."""
    return run_dir / f"worker_{index}.log"


def start(
    command: Sequence[str],
    envs: Sequence[Mapping[str, str]],
    run_dir: Path,
    ports: Sequence[int] = (),
    check_ports: bool = True,
) -> list[subprocess.Popen]:
    """One process per entry of `envs`, each running `command` with that environment added.

    A `TF_CONFIG` inherited from this process is dropped, so that a worker given none is a
    single local worker. Every port in `ports` is checked first: a taken one is refused before
    anything starts or any folder is made (a worker that cannot bind its port dies at once,
    and the others wait for it until the grace period ends); `check_ports=False` skips that,
    to show what it prevents.
    """
    for index, port in enumerate(ports):
        if check_ports and not port_is_free(port):
            raise WorkersFailed(
                f"worker {index}'s port is in use: give the workers free ports, "
                f"e.g. cluster.free_ports({len(ports)})\n127.0.0.1:{port} is taken"
            )
    run_dir.mkdir(parents=True, exist_ok=True)  # a resumed run reuses its folder
    inherited = {name: value for name, value in os.environ.items() if name != "TF_CONFIG"}
    workers = []
    try:
        for index, env in enumerate(envs):
            with open(log_path(run_dir, index), "w") as log:
                workers.append(
                    subprocess.Popen(
                        list(command), env={**inherited, **env}, stdout=log, stderr=log
                    )
                )
    except BaseException:
        _stop(workers)
        raise
    return workers


def wait(workers: Sequence[subprocess.Popen], timeout: float, grace: float) -> list[bool]:
    """Wait until all have ended; which ones had to be stopped (still running at the end).

    Once one fails, the others get `grace` seconds to notice and stop by themselves; those
    still running then, or when `timeout` runs out, are killed, and so are all of them if the
    wait is interrupted.
    """
    deadline, failed = time.monotonic() + timeout, False
    try:
        while any(worker.poll() is None for worker in workers) and time.monotonic() < deadline:
            if not failed and any(worker.poll() not in (None, 0) for worker in workers):
                failed, deadline = True, min(deadline, time.monotonic() + grace)
            time.sleep(0.1)
    finally:  # also on KeyboardInterrupt: no worker outlives the launcher
        stopped = [worker.poll() is None for worker in workers]
        _stop(workers)
    return stopped


def _stop(workers: Sequence[subprocess.Popen]) -> None:
    for worker in workers:
        worker.kill()  # nothing happens to a worker that has ended
        worker.wait()


def outcome(returncode: int, log: str, stopped: bool) -> str:
    """How one worker ended, in a few words: finished, a signal, its exception, or stopped."""
    if stopped:
        return STOPPED
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:  # a signal number without a name, such as a real-time signal
            return f"killed by signal {-returncode}"
    if returncode:
        errors = _EXCEPTION_LINE.findall(log)
        return f"exit code {returncode}, {errors[-1] if errors else 'see its log'}"
    return "finished"


def run(
    command: Sequence[str],
    envs: Sequence[Mapping[str, str]],
    run_dir: Path,
    timeout: float,
    ports: Sequence[int] = (),
    grace: float = GRACE_SECONDS,
    check_ports: bool = True,
    timeout_name: str = "timeout",
) -> None:
    """Start the workers, wait for them, and raise `WorkersFailed` unless all finished.

    The error's first line names each worker's end; the end of every unfinished worker's log
    follows, and the logs stay in `run_dir`. A run in which no worker failed but some were
    still running at `timeout` says so, and names the setting that gives it more time:
    `timeout_name`, the caller's name for `timeout`.
    """
    workers = start(command, envs, run_dir, ports, check_ports)
    stopped = wait(workers, timeout, grace)
    logs = [log_path(run_dir, index).read_text(errors="replace") for index in range(len(envs))]
    codes = [worker.returncode for worker in workers]
    if not any(codes):  # every worker exited with code 0: none failed, none was stopped
        return
    ends = [outcome(*end) for end in zip(codes, logs, stopped, strict=True)]
    summary = "; ".join(f"worker {index}: {end}" for index, end in enumerate(ends))
    tails = [
        f"worker {index}'s log ends:\n" + "\n".join(log.splitlines()[-LOG_LINES_SHOWN:])
        for index, (log, code) in enumerate(zip(logs, codes, strict=True))
        if code
    ]
    if any(code and not was_stopped for code, was_stopped in zip(codes, stopped, strict=True)):
        first = f"the run did not finish: {summary}"
    else:  # nothing failed: the timeout stopped the workers that were still running
        first = (
            f"the run did not finish within its timeout of {timeout:g} s: {summary}; "
            f"give it more time (`{timeout_name}`) or see the logs below"
        )
    lines = [first, *tails, f"logs in {run_dir}"]
    raise WorkersFailed("\n".join(lines))
