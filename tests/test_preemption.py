"""Notebook 06's training script, killed and restarted at random steps, in this lane.

The script is the one notebook 06 writes with its `%%writefile` cells, assembled here from
the committed notebook, so the tests and the notebook cannot drift apart. Every run is a
new Python process killed with SIGKILL (or stopped with SIGTERM) where the script pauses,
as in the notebook; each run pays a TensorFlow import, so the runs are short and few.

- Kill points drawn from a seeded generator, several per path in a chain of restarts: every
  restart resumes at the last checkpoint before its kill (no more than one checkpoint
  interval lost) and the chain ends with the weights of an uninterrupted run, bit for bit.
- A kill during a checkpoint write. For `tf.train.CheckpointManager` (the custom loop, and
  Keras 2's `BackupAndRestore`, which saves with one), the child kills itself inside
  `update_checkpoint_state_internal`, the last act of a save: the new checkpoint's files are
  written and the state file still names the previous checkpoint, the state a kill at any
  earlier moment of the save leaves too, with fewer new files. Keras 3's `BackupAndRestore`
  overwrites its weights file in place, so a kill during a backup leaves it cut short: the
  test cuts the newest backup to half its length, as such a kill would, and the script's
  `double_checkpoint=True` must fall back to the previous backup.
- TensorFlow 1 (reference lane only): a `TPUEstimator` (off a TPU) killed twice and
  restarted from its `model_dir`, ending with the uninterrupted run's weights.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import numpy as np
import pytest
from support import KERAS_MAJOR, LANE, ROOT

# Slow (one TensorFlow import per run, about a minute in all): not part of `make test-fast`.
# The reference lane runs them with Keras 2 and the current lane with Keras 3 and the newest
# TensorFlow; the Colab lane, Keras 3 as well, runs notebook 06 itself at its defaults.
pytestmark = [
    pytest.mark.notebook,
    pytest.mark.skipif(LANE == "colab", reason="Keras 3's kill points run in the current lane"),
]

NOTEBOOK = ROOT / "notebooks" / "06_preemption.ipynb"
STEPS, INTERVAL = 24, 6
TIMEOUT = 120  # seconds for one run; a run takes a few
PATHS = ("fit", "loop")


def write_script(folder: Path) -> Path:
    """The script as notebook 06's `%%writefile` cells write it."""
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    sources = [c.source for c in cells if c.cell_type == "code"]
    bodies = [source.split("\n", 1)[1] for source in sources if source.startswith("%%writefile")]
    assert len(bodies) >= 5, "notebook 06 no longer writes its script with %%writefile cells"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "preemptible.py"
    script.write_text("\n".join(bodies) + "\n")
    return script


def command(path: str, run_dir: Path, pause_at: int | None = None) -> list[str]:
    arguments = [path, str(run_dir), "--steps", str(STEPS), "--interval", str(INTERVAL)]
    arguments += ["--seed", "0"] + (["--pause-at", str(pause_at)] if pause_at else [])
    return arguments


def run(
    folder: Path,
    arguments: list[str],
    pause_signal: signal.Signals = signal.SIGKILL,
    prelude: str = "",
) -> dict:
    """Run the script in a new process (after `prelude`); signal it when it pauses."""
    code = f"import runpy, sys\n{prelude}\nsys.argv = ['preemptible.py', *{arguments!r}]\n"
    code += "runpy.run_path('preemptible.py', run_name='__main__')\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = folder / "stderr.log"
    with log.open("a") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=folder,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        events = []
        for line in process.stdout:
            events.append(line.split())
            if events[-1][0] == "paused":
                process.send_signal(pause_signal)
                if pause_signal != signal.SIGKILL:
                    process.stdin.write("\n")
                    process.stdin.flush()
        exit_code = process.wait(timeout=TIMEOUT)
    assert exit_code in (0, -signal.SIGKILL, 42), log.read_text()[-3000:]
    trained = [int(event[1]) for event in events if event[0] == "step"]
    return {"start": int(events[0][1]), "last": max(trained, default=None), "exit": exit_code}


def weights(run_dir: Path) -> np.ndarray:
    return np.load(run_dir / "final_weights.npy")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict[str, np.ndarray]:
    """Both paths' final weights, trained without interruption in one process."""
    folder = tmp_path_factory.mktemp("uninterrupted")
    write_script(folder)
    prelude = (
        "import preemptible\n"
        "from pathlib import Path\n"
        "import numpy as np\n"
        "for path, train in (('fit', preemptible.train_fit), ('loop', preemptible.train_loop)):\n"
        f"    model = train(Path(path), {STEPS}, {INTERVAL})\n"
        "    flat = np.concatenate([w.ravel() for w in model.get_weights()])\n"
        "    np.save(f'{path}.npy', flat)\n"
        "sys.exit(0)\n"
    )
    code = "import sys\nsys.path.insert(0, '.')\nimport tensorflow as tf\n"
    code += "tf.keras.utils.set_random_seed(0)\ntf.config.experimental.enable_op_determinism()\n"
    result = subprocess.run(
        [sys.executable, "-c", code + prelude],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {path: np.load(folder / f"{path}.npy") for path in ("fit", "loop")}


def last_checkpoint_before(step: int) -> int:
    """Where a run killed right after `step` resumes: the pause comes before that step's save."""
    return (step - 1) // INTERVAL * INTERVAL


def kill_and_resume(path: str, folder: Path) -> tuple[list[int], np.ndarray]:
    """A chain of runs killed at random steps, then one to the end; its final weights."""
    write_script(folder)
    run_dir = folder / "run"
    generator = random.Random(f"06_preemption-{LANE}-{path}")
    kills = sorted(generator.sample(range(1, STEPS - 3), 2))
    signals = [signal.SIGKILL, signal.SIGKILL]
    if path == "loop":  # then a SIGTERM, which PreemptionCheckpointHandler turns into a save
        kills.append(generator.randrange(kills[-1] + 1, STEPS - 1))
        signals.append(signal.SIGTERM)
    resume_at = 0
    for kill, pause_signal in zip(kills, signals, strict=True):
        result = run(folder, command(path, run_dir, kill), pause_signal)
        assert result["start"] == resume_at, (path, kill, result)
        if pause_signal == signal.SIGKILL:
            assert (result["exit"], result["last"]) == (-signal.SIGKILL, kill)
            resume_at = last_checkpoint_before(kill)
            assert 0 < kill - resume_at <= INTERVAL  # no more than one interval lost
        else:  # one more step, a checkpoint before the next, exit code 42: nothing lost
            assert (result["exit"], result["last"]) == (42, kill + 1)
            resume_at = kill + 1
    final = run(folder, command(path, run_dir))
    assert (final["start"], final["last"], final["exit"]) == (resume_at, STEPS, 0)
    print(f"{LANE} {path}: kill points {kills} ({', '.join(s.name for s in signals)})")
    return kills, weights(run_dir)


def test_kill_and_resume_at_random_steps(uninterrupted, tmp_path):
    with ThreadPoolExecutor() as pool:  # the two paths' processes side by side
        chains = {path: pool.submit(kill_and_resume, path, tmp_path / path) for path in PATHS}
    for path, chain in chains.items():
        kills, final_weights = chain.result()
        assert len(kills) >= 2
        np.testing.assert_array_equal(final_weights, uninterrupted[path])


# The child kills itself inside the save that would record this checkpoint.
DIE_IN_SAVE = """
import os, signal
import tensorflow as tf
from tensorflow.python.checkpoint import checkpoint_management

record = checkpoint_management.update_checkpoint_state_internal

def record_or_die(save_dir, model_checkpoint_path, *args, **kwargs):
    if model_checkpoint_path.endswith({name!r}):  # its files are written, not yet recorded
        os.kill(os.getpid(), signal.SIGKILL)
    return record(save_dir, model_checkpoint_path, *args, **kwargs)

checkpoint_management.update_checkpoint_state_internal = record_or_die
"""


def kill_during_a_write(path: str, folder: Path) -> np.ndarray:
    write_script(folder)
    run_dir = folder / "run"
    second_save = 2 * INTERVAL
    if path == "fit" and KERAS_MAJOR >= 3:  # Keras 3 overwrites latest.weights.h5 in place
        killed = run(folder, command(path, run_dir, second_save + 1))
        latest = run_dir / "backup" / "latest.weights.h5"
        assert (run_dir / "backup" / "latest.weights.h5.bkp").exists()
        latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])
    else:  # a CheckpointManager: the loop's, or Keras 2's BackupAndRestore (its 2nd save)
        name = f"ckpt-{second_save}" if path == "loop" else "ckpt-2"
        killed = run(folder, command(path, run_dir), prelude=DIE_IN_SAVE.format(name=name))
        written = [p.name for p in run_dir.rglob(f"{name}.index")]
        assert written, "the kill came before the checkpoint's files were written"
    assert killed["exit"] == -signal.SIGKILL and killed["last"] in (second_save, second_save + 1)
    final = run(folder, command(path, run_dir))
    assert (final["start"], final["last"], final["exit"]) == (INTERVAL, STEPS, 0)
    return weights(run_dir)


def test_a_kill_during_a_checkpoint_write_leaves_a_run_that_resumes(uninterrupted, tmp_path):
    with ThreadPoolExecutor() as pool:
        runs = {path: pool.submit(kill_during_a_write, path, tmp_path / path) for path in PATHS}
    for path, resumed in runs.items():
        np.testing.assert_array_equal(resumed.result(), uninterrupted[path])


# TensorFlow 1: a TPUEstimator run (off a TPU) killed and restarted from its model_dir. Its
# input_fn starts again from the first batch at every restart, so the data repeats with a
# period of one checkpoint interval: a restart at a checkpoint then reads what the
# uninterrupted run read (with a longer period, TF1 restarts would not reproduce it).
TF1_SCRIPT = """
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

from helpers import regression

tf1 = tf.compat.v1
run_dir, steps, interval, pause_at = Path(sys.argv[1]), *map(int, sys.argv[2:5])


def input_fn(params):
    (x, y), _ = regression.train_and_eval_data(seed=0)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(params["batch_size"], True)
    return data.take(interval).repeat()


def model_fn(features, labels, mode, params):
    kernel = tf1.constant_initializer(regression.INITIAL_KERNEL)
    predictions = tf1.layers.dense(features, 1, kernel_initializer=kernel)
    loss = tf1.losses.mean_squared_error(labels, predictions)
    train_op = tf1.train.AdagradOptimizer(0.05).minimize(loss, tf1.train.get_global_step())
    return tf1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


class Progress(tf1.train.SessionRunHook):
    def begin(self):
        self.global_step = tf1.train.get_global_step()

    def after_create_session(self, session, coord):
        print("start", session.run(self.global_step), flush=True)

    def after_run(self, run_context, run_values):
        step = run_context.session.run(self.global_step)
        print("step", step, flush=True)
        if step == pause_at:
            print("paused", step, flush=True)
            sys.stdin.readline()


config = tf1.estimator.tpu.RunConfig(model_dir=str(run_dir), save_checkpoints_steps=interval)
estimator = tf1.estimator.tpu.TPUEstimator(
    model_fn=model_fn, config=config, use_tpu=False, train_batch_size=8
)
estimator.train(input_fn, max_steps=steps, hooks=[Progress()])
names = ("dense/kernel", "dense/bias")
weights = [estimator.get_variable_value(name).ravel() for name in names]
np.save(run_dir / "final_weights.npy", np.concatenate(weights))
print("done", flush=True)
"""


def run_tf1(folder: Path, run_dir: Path, pause_at: int = 0) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tf1_training.py").write_text(TF1_SCRIPT)
    prelude = f"sys.argv = ['tf1_training.py', {str(run_dir)!r}, '{STEPS}', '{INTERVAL}', "
    prelude += f"'{pause_at}']\nrunpy.run_path('tf1_training.py', run_name='__main__')\n"
    prelude += "sys.exit(0)"
    return run(folder, [], prelude=prelude)


@pytest.mark.reference_only  # tf.estimator: TensorFlow 2.15 only
def test_tpu_estimator_killed_and_restarted_resumes_from_model_dir(tmp_path):
    generator = random.Random(f"06_preemption-{LANE}-tf1")
    kills = sorted(generator.sample(range(1, STEPS - 1), 2))
    run_dir = tmp_path / "model_dir"
    with ThreadPoolExecutor() as pool:  # the uninterrupted run beside the killed ones
        uninterrupted = pool.submit(run_tf1, tmp_path / "uninterrupted", tmp_path / "u")
        resume_at = 0
        for kill in kills:
            result = run_tf1(tmp_path / "killed", run_dir, kill)
            assert result["start"] == resume_at and result["exit"] == -signal.SIGKILL, result
            # The pause comes before the saver's after_run (MonitoredTrainingSession runs the
            # train() hooks before the chief-only ones), as in the TF2 script.
            resume_at = last_checkpoint_before(kill)
            assert 0 < kill - resume_at <= INTERVAL
        final = run_tf1(tmp_path / "killed", run_dir)
        assert (final["start"], final["last"], uninterrupted.result()["last"]) == (
            resume_at,
            STEPS,
            STEPS,
        )
    print(f"{LANE} TPUEstimator: kill points {kills} (SIGKILL)")
    np.testing.assert_array_equal(weights(run_dir), weights(tmp_path / "u"))


# The pitfall notebook 06 describes: PreemptionCheckpointHandler.run checks for SIGTERM, and
# saves, before it calls the step function, so a batch passed as an argument was taken from
# the iterator before that save. The script's own step takes its batch inside the function.
BATCH_AS_ARGUMENT = """
import runpy, sys
from pathlib import Path
import tensorflow as tf

script = runpy.run_path("preemptible.py")  # its functions; its main does not run
steps, pause_at, run_dir = {steps}, {pause_at}, Path({run_dir!r})
model, optimizer = script["build_model"]()
iterator = iter(script["training_data"]())
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, iterator=iterator)
manager = tf.train.CheckpointManager(checkpoint, str(run_dir), max_to_keep=2)
handler = tf.distribute.experimental.PreemptionCheckpointHandler(None, manager)
print("start", int(optimizer.iterations), flush=True)

@tf.function
def train_step(features, labels):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(labels - model(features, training=True)))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))

while (step := int(optimizer.iterations) + 1) <= steps:
    handler.run(train_step, *next(iterator))  # the batch is taken before run() saves
    print("step", step, flush=True)
    if step == pause_at:
        print("paused", step, flush=True)
        sys.stdin.readline()
script["np"].save(run_dir / "final_weights.npy",
                  script["np"].concatenate([w.ravel() for w in model.get_weights()]))
sys.exit(0)
"""


def test_a_batch_passed_to_the_handler_is_lost_to_a_sigterm(uninterrupted, tmp_path):
    write_script(tmp_path)
    run_dir, kill = tmp_path / "run", STEPS // 2

    def prelude(pause_at):
        return BATCH_AS_ARGUMENT.format(steps=STEPS, pause_at=pause_at, run_dir=str(run_dir))

    stopped = run(tmp_path, [], signal.SIGTERM, prelude=prelude(kill))
    assert (stopped["exit"], stopped["last"]) == (42, kill + 1)
    final = run(tmp_path, [], prelude=prelude(0))
    assert (final["start"], final["last"]) == (kill + 1, STEPS)
    # The checkpoint's iterator was one batch ahead of its step counter: a batch was skipped.
    assert not np.array_equal(weights(run_dir), uninterrupted["loop"])
