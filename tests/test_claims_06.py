"""Claims of notebook 06 that its cells cannot show in every lane, pinned in this lane's TF.

- `PreemptionCheckpointHandler` restores the latest checkpoint when it is created, installs
  a `SIGTERM` handler, and polls the metadata server, depending on the platform that
  `detect_platform()` reports: the notebook's table of platforms. The notebook runs the
  Google Cloud CPU VM row itself (a local stand-in for the metadata server) in every lane.
  Here `detect_platform` is replaced, so the Cloud TPU VM, the internal TPU, the Google
  Cloud GPU VM rows run, as far as `__init__` goes (nothing here runs on a TPU), and so does
  the row of a machine off Google Cloud, which the notebook's `SIGTERM` cells rely on and
  which a Colab runtime may not be, if `on_gcp()` finds a metadata server there. The GPU VM
  row also runs with a stand-in metadata server that sends a maintenance notice.
- The TensorFlow and estimator source that the notebook quotes (cells on
  `CloudTPUPreemptedHook`, `TPUConfig`, the handler's docstring and `functional_saver.py`),
  read without starting TensorFlow.
"""

from __future__ import annotations

import contextlib
import http.server
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import installed_source

# platform -> (restores when created, installs a SIGTERM handler, polls the metadata server),
# from failure_handling.py: GCE_TPU only logs a warning in __init__ (as GCE_CPU, which the
# notebook runs); INTERNAL_TPU calls _initialize_for_tpu_strategy (restore, no signal);
# GCE_GPU restores and starts _poll_termination_signal_thread instead of a signal handler;
# the rest call _initialize_for_mirrored_and_multi_worker_mirrored (restore, then SIGTERM).
PLATFORMS = {
    "GCE_TPU": (False, False, False),
    "INTERNAL_TPU": (True, False, False),
    "INTERNAL_CPU": (True, True, False),
    "GCE_GPU": (True, False, True),
}


def saved_variable(folder: Path):
    """A checkpoint in `folder` of a variable at 7; a fresh variable at 0 and its manager."""
    import tensorflow as tf

    variable = tf.Variable(7)
    tf.train.CheckpointManager(tf.train.Checkpoint(v=variable), str(folder), 1).save()
    fresh = tf.Variable(0)
    return fresh, tf.train.CheckpointManager(tf.train.Checkpoint(v=fresh), str(folder), 1)


class MaintenanceEvent(http.server.BaseHTTPRequestHandler):
    """A metadata server whose `instance/maintenance-event` says `event` (on the server)."""

    def do_GET(self) -> None:
        body = getattr(self.server, "event", "NONE").encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # no request log on stderr
        pass


@contextlib.contextmanager
def metadata_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[http.server.HTTPServer]:
    """`termination_watcher_function_gce` asks this server, via `GCE_METADATA_IP`."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MaintenanceEvent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("GCE_METADATA_IP", f"127.0.0.1:{server.server_port}")
    try:
        yield server
    finally:
        server.shutdown()


@pytest.mark.tensorflow
@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_handler_restores_handles_sigterm_or_polls_depending_on_the_platform(
    platform, tmp_path, monkeypatch
):
    """Each row of the table; then the script's explicit restore, which holds on every row."""
    import tensorflow as tf
    from tensorflow.python.distribute.failure_handling import failure_handling_util as util

    monkeypatch.setattr(util, "detect_platform", lambda: util.PlatformDevice[platform])
    fresh, manager = saved_variable(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    handler = None
    with metadata_server(monkeypatch):
        try:
            handler = tf.distribute.experimental.PreemptionCheckpointHandler(None, manager)
            installed = signal.getsignal(signal.SIGTERM) is not before
            thread = getattr(handler, "_poll_termination_signal_thread", None)
            polls = thread is not None and thread.is_alive()
        finally:
            signal.signal(signal.SIGTERM, before)
            if handler is not None:
                handler._stop_poll_termination_signal_thread()
    restores, *signal_and_polling = PLATFORMS[platform]
    assert (int(fresh.numpy()), installed, polls) == (7 if restores else 0, *signal_and_polling)
    manager.restore_or_initialize()
    assert int(fresh.numpy()) == 7


class Exited(Exception):
    """Raised by the test's `exit_fn`, where the default one ends the process."""


@pytest.mark.tensorflow
def test_on_a_google_cloud_gpu_vm_the_handler_waits_an_hour_then_exits_with_143(
    tmp_path, monkeypatch
):
    """The GCE_GPU row's defaults: `GRACE_PERIOD_GCE` (3600 s) and `gce_exit_fn` (code 143)."""
    import tensorflow as tf
    from tensorflow.python.distribute.failure_handling import failure_handling_util as util

    monkeypatch.setattr(util, "detect_platform", lambda: util.PlatformDevice.GCE_GPU)
    _, manager = saved_variable(tmp_path)
    with metadata_server(monkeypatch):
        handler = tf.distribute.experimental.PreemptionCheckpointHandler(None, manager)
        try:
            defaults = (handler._grace_period, handler._exit_fn)
        finally:
            handler._stop_poll_termination_signal_thread()
    assert defaults == (util.GRACE_PERIOD_GCE, util.gce_exit_fn) and util.GRACE_PERIOD_GCE == 3600
    assert util._RESTARTABLE_EXIT_CODE == 143
    with pytest.raises(SystemExit) as exited:
        util.gce_exit_fn()
    assert exited.value.code == 143


@pytest.mark.tensorflow
def test_a_maintenance_notice_saves_then_trains_through_the_grace_period(tmp_path, monkeypatch):
    """A notice: a save one `run` call later, training on, a final save and exit at its end."""
    import tensorflow as tf
    from tensorflow.python.distribute.failure_handling import failure_handling_util as util

    monkeypatch.setattr(util, "detect_platform", lambda: util.PlatformDevice.GCE_GPU)
    step = tf.Variable(0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(tmp_path), 3)

    def exit_fn() -> None:
        raise Exited(int(step.numpy()))

    config = tf.distribute.experimental.TerminationConfig(exit_fn=exit_fn, grace_period=2)
    saved_at: list[int] = []
    exited_at = None
    with metadata_server(monkeypatch) as server:
        handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            None, manager, termination_config=config
        )
        try:
            server.event = "TERMINATE_ON_HOST_MAINTENANCE"  # type: ignore[attr-defined]
            deadline = time.monotonic() + 10
            while not handler._received_own_sigterm.is_set() and time.monotonic() < deadline:
                time.sleep(0.1)  # the thread polls once a second
            while exited_at is None and int(step.numpy()) < 100 and time.monotonic() < deadline:
                before = manager.latest_checkpoint
                handler.run(lambda: step.assign_add(1))
                if manager.latest_checkpoint != before:
                    saved_at.append(int(step.numpy()) - 1)  # saved before the call's step
                time.sleep(0.05)
        except Exited as exited:
            exited_at = exited.args[0]
        finally:
            handler._stop_poll_termination_signal_thread()
    assert saved_at[0] == 1, saved_at  # the notice before call 1: saved in call 2, before its step
    assert exited_at is not None and exited_at > saved_at[0]  # trained on, then saved and exited
    assert tf.train.load_variable(manager.latest_checkpoint, "step/.ATTRIBUTES/VARIABLE_VALUE") == (
        exited_at
    )


# (file under tensorflow/python, quote): what cells 9, 46 and 64 of the notebook quote or
# paraphrase, whitespace collapsed as installed_source returns it.
TF_QUOTES = [
    # cell 9: a resolver made from a grpc:// address has no Cloud TPU API
    ("tpu/client/client.py", "self._use_api = not self._tpu.startswith('grpc://')"),
    (
        "tpu/client/client.py",
        'def api_available(self): """Return if the Cloud TPU API is available, if not certain '
        'features will not work.""" return self._use_api',
    ),
    # cell 9: tpu='local' gets _LocalCloudTpuClient, whose api_available is always false
    (
        "distribute/cluster_resolver/tpu/tpu_cluster_resolver.py",
        'class _LocalCloudTpuClient(object): """Dummy local Cloud TPU client.""" '
        "def api_available(self): return False",
    ),
    (
        "distribute/cluster_resolver/tpu/tpu_cluster_resolver.py",
        "# Directly connected TPU environment self._cloud_tpu_client = _LocalCloudTpuClient()",
    ),
    # cell 46: the handler's docstring
    (
        "distribute/failure_handling/failure_handling.py",
        "This API only supports use with `tf.distribute.MultiWorkerMirroredStrategy` and "
        "`tf.distribute.TPUStrategy`.",
    ),
    # cell 64: checkpoint files written under a temporary name, then renamed
    ("checkpoint/functional_saver.py", "a temporary directory is first created"),
    (
        "checkpoint/functional_saver.py",
        "# Before .save() finishes, they will be (hopefully, atomically) renamed",
    ),
]

# (file under tensorflow_estimator/python/estimator/tpu, quote): cell 9's TF1 source.
ESTIMATOR_QUOTES = [
    (
        "tpu_estimator.py",
        "def _check_add_preemption_hook(cluster): return (tpu_cluster_resolver.is_running_in_gce()"
        " and cluster and isinstance( cluster, tf.distribute.cluster_resolver.TPUClusterResolver)"
        " and cluster._cloud_tpu_client.api_available())",
    ),
    (
        "tpu_config.py",
        "This is the number of train steps running in TPU system before returning to CPU host "
        "for each `Session.run`.",
    ),
]


@pytest.mark.parametrize(("path", "quote"), TF_QUOTES)
def test_tensorflow_source_holds_what_the_notebook_quotes(path: str, quote: str) -> None:
    assert quote in installed_source("tensorflow", "python", *path.split("/")), quote


@pytest.mark.reference_only
@pytest.mark.parametrize(("path", "quote"), ESTIMATOR_QUOTES)
def test_estimator_source_holds_what_the_notebook_quotes(path: str, quote: str) -> None:
    source = installed_source("tensorflow_estimator", "python", "estimator", "tpu", path)
    assert quote in source, quote
