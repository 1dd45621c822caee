"""Claims of notebook 06 that its cells cannot show in every lane, pinned in this lane's TF.

- `PreemptionCheckpointHandler` restores the latest checkpoint when it is created, and installs
  a `SIGTERM` handler, depending on the platform that `detect_platform()` reports: the
  notebook's table of platforms, one row per platform. The notebook runs the Google Cloud
  CPU VM row (a local stand-in for the metadata server) and this machine's row; here
  `detect_platform` is replaced, so the Cloud TPU VM and the TPU rows run too, as far as
  `__init__` goes (nothing here runs on a TPU), and the Google Cloud GPU VM row runs with a
  stand-in metadata server that sends a maintenance notice.
- The notebook's TF1 cell passes `save_graph_def=False` to its `CheckpointSaverHook`, because
  TF 2.20 with protobuf 7 fails to write `graph.pbtxt`: `graph_io.write_graph` passes
  `float_format`, which protobuf 7's `text_format.MessageToString` no longer takes. Pinned
  both ways, so that the comment goes when a lane no longer needs it.
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

pytestmark = pytest.mark.tensorflow

# platform -> (restores when created, installs a SIGTERM handler), from failure_handling.py:
# GCE_TPU and GCE_CPU only log a warning in __init__; INTERNAL_TPU calls
# _initialize_for_tpu_strategy (restore, no signal); the rest call
# _initialize_for_mirrored_and_multi_worker_mirrored (restore, then a SIGTERM handler).
PLATFORMS = {
    "GCE_TPU": (False, False),
    "GCE_CPU": (False, False),
    "INTERNAL_TPU": (True, False),
    "INTERNAL_CPU": (True, True),
}


def saved_variable(folder: Path):
    """A checkpoint in `folder` of a variable at 7; a fresh variable at 0 and its manager."""
    import tensorflow as tf

    variable = tf.Variable(7)
    tf.train.CheckpointManager(tf.train.Checkpoint(v=variable), str(folder), 1).save()
    fresh = tf.Variable(0)
    return fresh, tf.train.CheckpointManager(tf.train.Checkpoint(v=fresh), str(folder), 1)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_handler_restores_and_handles_sigterm_only_on_some_platforms(
    platform, tmp_path, monkeypatch
):
    import tensorflow as tf
    from tensorflow.python.distribute.failure_handling import failure_handling_util as util

    monkeypatch.setattr(util, "detect_platform", lambda: util.PlatformDevice[platform])
    fresh, manager = saved_variable(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    try:
        tf.distribute.experimental.PreemptionCheckpointHandler(None, manager)
        installed = signal.getsignal(signal.SIGTERM) is not before
    finally:
        signal.signal(signal.SIGTERM, before)
    assert (int(fresh.numpy()) == 7, installed) == PLATFORMS[platform]


def test_restore_or_initialize_restores_on_a_cloud_tpu_vm_too(tmp_path, monkeypatch):
    """The notebook's script restores explicitly: on GCE_TPU that is the only restore."""
    import tensorflow as tf
    from tensorflow.python.distribute.failure_handling import failure_handling_util as util

    monkeypatch.setattr(util, "detect_platform", lambda: util.PlatformDevice.GCE_TPU)
    fresh, manager = saved_variable(tmp_path)
    tf.distribute.experimental.PreemptionCheckpointHandler(None, manager)
    after_handler = int(fresh.numpy())
    manager.restore_or_initialize()
    assert (after_handler, int(fresh.numpy())) == (0, 7)


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


class Exited(Exception):
    """Raised by the test's `exit_fn`, where the default one ends the process."""


def test_on_a_google_cloud_gpu_vm_the_handler_polls_the_maintenance_event(tmp_path, monkeypatch):
    """The GCE_GPU row: restore, no SIGTERM handler, a polling thread, an hour's grace."""
    import tensorflow as tf
    from tensorflow.python.distribute.failure_handling import failure_handling_util as util

    monkeypatch.setattr(util, "detect_platform", lambda: util.PlatformDevice.GCE_GPU)
    fresh, manager = saved_variable(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    with metadata_server(monkeypatch):
        handler = tf.distribute.experimental.PreemptionCheckpointHandler(None, manager)
        try:
            installed = signal.getsignal(signal.SIGTERM) is not before
            polling = handler._poll_termination_signal_thread.is_alive()
            defaults = (handler._grace_period, handler._exit_fn)
        finally:
            signal.signal(signal.SIGTERM, before)
            handler._stop_poll_termination_signal_thread()
    assert (int(fresh.numpy()), installed, polling) == (7, False, True)
    assert defaults == (util.GRACE_PERIOD_GCE, util.gce_exit_fn) and util.GRACE_PERIOD_GCE == 3600


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


def test_graph_pbtxt_fails_to_write_with_tensorflow_2_20_and_protobuf_7(tmp_path):
    import google.protobuf
    import tensorflow as tf

    tf1 = tf.compat.v1
    error = None
    with tf1.Graph().as_default():
        step = tf1.train.get_or_create_global_step()
        advance = step.assign_add(1)
        hook = tf1.train.CheckpointSaverHook(str(tmp_path), save_steps=1)  # save_graph_def=True
        try:
            with tf1.train.MonitoredSession(tf1.train.ChiefSessionCreator(), hooks=[hook]) as s:
                s.run(advance)
        except TypeError as raised:
            error = str(raised)
    protobuf_major = int(google.protobuf.__version__.split(".")[0])
    if tf.__version__.startswith("2.20.") and protobuf_major >= 7:
        assert error is not None and "float_format" in error
    else:
        assert error is None and (tmp_path / "graph.pbtxt").exists()
