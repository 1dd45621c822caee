"""Regenerate fixtures/tf1_reference: the TPUEstimator run that 04_verify_migration checks.

`.venv/bin/python -m tools.make_tf1_fixture` (reference lane only: it needs
`tf.compat.v1.estimator`). The current lane has no TPUEstimator, so 04_verify_migration
compares its TensorFlow 2 runs with this recorded run instead. In the reference lane the
notebook trains the same TPUEstimator live and asserts that every number equals the
fixture, so a change here or in the notebook that makes them disagree fails there.

What is written (about 30 KB):
- `tf1_run.json`: per-step losses of `steps` training steps, the final weights, the
  estimator's predictions on the evaluation set, and the losses and weights of
  `continue_steps` further steps resumed from the checkpoint;
- `checkpoint/model.ckpt-<steps>.{index,data-00000-of-00001}`: the checkpoint after `steps`
  steps (weights, Adagrad accumulators, global_step; the `.meta` graph is left out);
- `saved_model/`: what `export_saved_model` wrote from that checkpoint;
- `manifest.json`: every file with its sha256 (used to download the fixture in Colab).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from tools.project import ROOT

STEPS = 100
CONTINUE_STEPS = 20
GLOBAL_BATCH = 8
LEARNING_RATE = 0.05
SEED = 42
DEFAULT_OUT = ROOT / "fixtures" / "tf1_reference"


def run_tf1(work_dir: Path, steps: int, continue_steps: int) -> dict:
    """Train, predict, export and continue a TPUEstimator(use_tpu=False); return the results."""
    import numpy as np
    import tensorflow as tf
    import tensorflow.compat.v1 as tf1

    from helpers import regression
    from helpers.reproducibility import make_reproducible

    make_reproducible(SEED)
    (train_x, train_y), (eval_x, _) = regression.train_and_eval_data(seed=0)
    step_losses: list[float] = []

    class LossPerStep(tf1.train.SessionRunHook):
        def __init__(self, loss):
            self.loss = loss

        def before_run(self, run_context):
            return tf1.train.SessionRunArgs(self.loss)

        def after_run(self, run_context, run_values):
            step_losses.append(float(run_values.results))

    def train_input_fn(params):
        dataset = tf1.data.Dataset.from_tensor_slices(({"x": train_x}, train_y))
        return dataset.repeat().batch(params["batch_size"], drop_remainder=True)

    def predict_input_fn(params):
        dataset = tf1.data.Dataset.from_tensor_slices({"x": eval_x})
        return dataset.batch(params["batch_size"], drop_remainder=True)

    def model_fn(features, labels, mode, params):
        dense = tf1.layers.Dense(
            1,
            kernel_initializer=tf1.constant_initializer(regression.INITIAL_KERNEL),
            bias_initializer=tf1.constant_initializer(regression.INITIAL_BIAS),
            name="dense",
        )
        predictions = dense(features["x"])
        if mode == tf1.estimator.ModeKeys.PREDICT:
            return tf1.estimator.tpu.TPUEstimatorSpec(mode, predictions={"prediction": predictions})
        loss = tf1.losses.mean_squared_error(labels=labels, predictions=predictions)
        optimizer = tf1.train.AdagradOptimizer(LEARNING_RATE)
        train_op = optimizer.minimize(loss, global_step=tf1.train.get_global_step())
        return tf1.estimator.tpu.TPUEstimatorSpec(
            mode, loss=loss, train_op=train_op, training_hooks=[LossPerStep(loss)]
        )

    def serving_input_receiver_fn():
        x = tf1.placeholder(tf.float32, shape=[None, 2], name="x")
        return tf1.estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    model_dir = work_dir / "model_dir"
    estimator = tf1.estimator.tpu.TPUEstimator(
        model_fn=model_fn,
        config=tf1.estimator.tpu.RunConfig(
            model_dir=str(model_dir),
            save_checkpoints_steps=steps,
            tf_random_seed=SEED,
            tpu_config=tf1.estimator.tpu.TPUConfig(iterations_per_loop=10),
        ),
        use_tpu=False,
        train_batch_size=GLOBAL_BATCH,
        predict_batch_size=GLOBAL_BATCH,
    )
    estimator.train(train_input_fn, max_steps=steps)
    losses = list(step_losses)
    weights = {name: estimator.get_variable_value(name) for name in ("dense/kernel", "dense/bias")}
    predictions = np.array([p["prediction"] for p in estimator.predict(predict_input_fn)])
    export = estimator.export_saved_model(str(work_dir / "export"), serving_input_receiver_fn)
    export = export.decode() if isinstance(export, bytes) else export

    step_losses.clear()
    estimator.train(train_input_fn, steps=continue_steps)
    continued = {name: estimator.get_variable_value(name) for name in weights}
    return {
        "losses": losses,
        "weights": weights,
        "predictions": predictions,
        "checkpoint": model_dir / f"model.ckpt-{steps}",
        "saved_model": Path(export),
        "continued_losses": list(step_losses),
        "continued_weights": continued,
    }


def write_fixture(out: Path, run: dict, steps: int, continue_steps: int) -> None:
    from importlib.metadata import version

    import tensorflow as tf

    from helpers.fixtures import write_manifest

    shutil.rmtree(out, ignore_errors=True)
    (out / "checkpoint").mkdir(parents=True)
    prefix = run["checkpoint"]
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copyfile(f"{prefix}{suffix}", out / "checkpoint" / f"{prefix.name}{suffix}")
    shutil.copytree(run["saved_model"], out / "saved_model")

    def as_lists(weights: dict) -> dict:
        return {name: value.tolist() for name, value in weights.items()}

    summary = {
        "made_by": "python -m tools.make_tf1_fixture",
        "tensorflow": tf.__version__,
        "tensorflow_estimator": version("tensorflow-estimator"),
        "steps": steps,
        "continue_steps": continue_steps,
        "global_batch": GLOBAL_BATCH,
        "learning_rate": LEARNING_RATE,
        "checkpoint": f"checkpoint/{prefix.name}",
        "saved_model": "saved_model",
        "losses": run["losses"],
        "weights": as_lists(run["weights"]),
        "predictions": run["predictions"].tolist(),
        "continued_losses": run["continued_losses"],
        "continued_weights": as_lists(run["continued_weights"]),
    }
    (out / "tf1_run.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_manifest(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    from helpers.quiet import quiet_logs

    quiet_logs()
    import tensorflow as tf

    from helpers.compat import EstimatorUnavailableError, require_estimator

    try:
        require_estimator(tf)
    except EstimatorUnavailableError as error:
        print(f"make_tf1_fixture: {error}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="tf1-fixture-") as scratch:
        run = run_tf1(Path(scratch), STEPS, CONTINUE_STEPS)
        write_fixture(args.out.resolve(), run, STEPS, CONTINUE_STEPS)
    total = sum(path.stat().st_size for path in args.out.rglob("*") if path.is_file())
    print(f"wrote {args.out} ({total / 1024:.0f} KB) with TensorFlow {tf.__version__}")
    print(f"final loss {run['losses'][-1]:.8f}, kernel {run['weights']['dense/kernel'].ravel()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
