"""`make bench`: training steps per second by steps per call: TPUEstimator, Model.fit, custom loop.

    python -m tools.bench [--quick] [--out DIR]

Measures steps/s and examples/s (median of 3 repeats of about 0.4 s each, after a warm-up)
for TPUEstimator's `iterations_per_loop` 1, 10, 100 (TensorFlow 2.15 only; off a TPU it runs
one step per session call), `Model.fit`'s `steps_per_execution`, and a custom loop running
1 to 1000 steps per `tf.function` call; on the guide's tiny model (per-step overhead
dominates) and on an MLP on MNIST-shaped data (compute dominates), whose FLOP/s are compared
with this machine's matrix-multiply FLOP/s measured in the same run; on 1 replica, also
`jit_compile`, `mixed_bfloat16` and the input pipeline without prefetch or cache, or
without drop_remainder (which here only leaves the batch size unknown: the data repeats
before it is batched, so no batch is partial). Every figure describes the machine it ran on
(the runtime line says which); 8 replicas are virtual CPU devices.
Each replica count (1 and 8) runs in its own process (virtual CPU devices are fixed at
TensorFlow's start). Where JAX and Keras 3 are installed (the current lane: `make
bench-current`), the same workloads also run on Keras 3's JAX backend, `Model.fit` and a
`jax.lax.scan` custom loop on 1 and 8 JAX devices (`tools.bench_jax`), in processes of their
own, with their ratios to TensorFlow's fastest custom loop of the same run. Writes bench.md
and bench.json to build/bench/ unless --out says otherwise.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from helpers import compat
from helpers.runtime import keras_version


def steps_per_second(steps: int, seconds: Sequence[float]) -> float:
    """Median over repeats of `steps / seconds`: a slow repeat on a busy machine moves it little."""
    if steps <= 0 or not seconds or min(seconds) <= 0:
        raise ValueError(f"need steps > 0 and positive durations, got {steps}, {list(seconds)}")
    return statistics.median(steps / s for s in seconds)


def ratios(rates: Mapping[str, float], baseline: str) -> dict[str, float]:
    """Each rate divided by the baseline's rate (the baseline gets 1.0)."""
    return {name: rate / rates[baseline] for name, rate in rates.items()}


def runtime_line(strategy, tf) -> str:
    """Device kind, replicas and versions: the label every measured figure carries."""
    kinds = [k for k in ("TPU", "GPU") if tf.config.list_logical_devices(k)]
    kind = kinds[0] if kinds else "CPU"
    return (
        f"{kind}, {strategy.num_replicas_in_sync} replica(s), "
        f"TensorFlow {tf.__version__}, Keras {keras_version()}"
    )


def markdown_table(rows: Sequence[Mapping[str, object]], digits: int = 3) -> str:
    """Rows of equal keys as a markdown table; floats with `digits` significant digits."""
    columns = list(rows[0])

    def cell(value: object) -> str:
        return f"{value:.{digits}g}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


ROOT = Path(__file__).resolve().parents[1]
TINY_BATCH = 8  # the guide's global batch
MLP_BATCH = 256
MLP_UNITS = (784, 512, 512, 10)
# Per example and dense layer of a inputs and b units: 2ab for the forward matmul, 2ab for the
# kernel's gradient and 2ab for the gradient of the layer's input, except the first layer's:
# nothing asks for the gradient of the data, so the traced step never computes it.
MLP_FLOPS_PER_EXAMPLE = 6 * sum(a * b for a, b in itertools.pairwise(MLP_UNITS)) - (
    2 * MLP_UNITS[0] * MLP_UNITS[1]
)


def settings(quick: bool, replicas: int = 1) -> dict:
    """Per process: steps per call measured, repeats, seconds per timed repeat, probe steps."""
    common = {"repeats": 3, "window": 0.4, "probe": {"tiny": 100, "mlp": 4}, "variants": False}
    if quick:  # one process, short repeats: checks the command, not the figures
        return {**common, "replicas": (1,), "repeats": 2, "window": 0.05, "estimator_steps": 100,
                "calls": {"tiny": (1, 10), "mlp": (1, 4)}}  # fmt: skip
    if replicas > 1:  # the CPU split into virtual devices: every step is slower
        return {**common, "replicas": (1, 8), "estimator_steps": 0,
                "calls": {"tiny": (1, 10, 100), "mlp": (1, 10)}}  # fmt: skip
    return {**common, "replicas": (1, 8), "variants": True, "estimator_steps": 1000,
            "calls": {"tiny": (1, 10, 100, 1000), "mlp": (1, 10, 20)}}  # fmt: skip


def timed(run, repeats: int) -> list[float]:
    run()  # warm-up: tracing, first execution
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        durations.append(time.perf_counter() - start)
    return durations


def tiny_dataset(tf, batch):
    """The guide's one example, repeated: every batch is full, with a static batch size."""
    features, labels = [[1.0, 1.5]], [[0.3]]
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat()
    return dataset.batch(batch, drop_remainder=True).prefetch(2)


def mlp_dataset(tf, prefetch=True, cache=True, drop_remainder=True):
    """MNIST-shaped random data. It repeats before it batches, so every batch is full either
    way: `drop_remainder=False` changes only the static batch size (None instead of 256)."""
    images = tf.random.stateless_uniform([2048, 784], seed=[1, 2])
    classes = tf.random.stateless_uniform([2048], seed=[3, 4], maxval=10, dtype=tf.int32)
    dataset = tf.data.Dataset.from_tensor_slices((images, classes))
    dataset = dataset.map(lambda x, y: (x * 2.0 - 1.0, y))  # work that cache() saves
    if cache:
        dataset = dataset.cache()
    dataset = dataset.repeat().batch(MLP_BATCH, drop_remainder=drop_remainder)
    return dataset.prefetch(tf.data.AUTOTUNE) if prefetch else dataset


def build(tf, kind, dtype_policy="float32"):
    if kind == "tiny":
        model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
        return model, tf.keras.optimizers.Adagrad(0.05), tf.keras.losses.MeanSquaredError()
    tf.keras.mixed_precision.set_global_policy(dtype_policy)
    layers = [tf.keras.layers.Dense(n, activation="relu") for n in MLP_UNITS[1:-1]]
    head = tf.keras.layers.Dense(MLP_UNITS[-1], dtype="float32")
    model = tf.keras.Sequential([tf.keras.Input((784,)), *layers, head])
    tf.keras.mixed_precision.set_global_policy("float32")
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return model, tf.keras.optimizers.SGD(0.01), loss


def fit_rate(tf, strategy, kind, dataset, spe, steps, repeats, window, jit=False, policy="float32"):
    with strategy.scope():
        model, optimizer, loss = build(tf, kind, policy)
        model.compile(optimizer, loss, steps_per_execution=spe, jit_compile=jit)

    class EpochTimes(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            durations.append(time.perf_counter() - self.start)

    def run(epochs, steps, callbacks=()):
        model.fit(dataset, epochs=epochs, steps_per_epoch=steps, callbacks=callbacks, verbose=0)

    steps = calibrated(lambda: run(1, steps), steps, spe, window)
    durations = []  # one fit call, `repeats` epochs of `steps`, each timed by the callback
    run(repeats, steps, [EpochTimes()])
    return steps_per_second(steps, durations), steps


def calibrated(run, probe_steps, multiple, window):
    """Steps that take about `window` seconds (a multiple of `multiple`), after a warm-up."""
    run()  # warm-up: tracing, first execution
    start = time.perf_counter()
    run()
    rate = probe_steps / (time.perf_counter() - start)
    return max(multiple, round(rate * window / multiple) * multiple)


def make_step_fn(tf, model, optimizer, loss_fn, loss_mean=None):
    """The custom loop's training step, run on each replica (its FLOPs are counted in the tests)."""
    loss_fn.reduction = "none"

    def step_fn(x, y):
        with tf.GradientTape() as tape:
            per_example = loss_fn(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(per_example)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        if loss_mean is not None:
            loss_mean.update_state(loss)

    return step_fn


def loop_rate(tf, strategy, kind, dataset, per_call, steps, repeats, window, mean_loss=False):
    with strategy.scope():
        model, optimizer, loss_fn = build(tf, kind)
        optimizer.build(model.trainable_variables)  # in the scope: Keras 3 needs it (notebook 03)
        loss_mean = tf.keras.metrics.Mean()  # what Model.fit updates at every step
    step_fn = make_step_fn(tf, model, optimizer, loss_fn, loss_mean if mean_loss else None)

    @tf.function
    def train_steps(iterator, count):
        for _ in tf.range(count):
            strategy.run(step_fn, args=next(iterator))

    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    count = tf.constant(per_call)

    def run(steps):
        for _ in range(steps // per_call):
            train_steps(iterator, count)
        optimizer.iterations.numpy()  # waits for the last call

    steps = calibrated(lambda: run(steps), steps, per_call, window)
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(steps)
        durations.append(time.perf_counter() - start)
    return steps_per_second(steps, durations), steps


def estimator_rate(tf, iterations_per_loop, steps, repeats, model_dir):
    """TPUEstimator(use_tpu=False) on the guide's model; returns (steps/s, session.run calls)."""
    tf1 = tf.compat.v1

    class RunEnds(tf1.train.SessionRunHook):
        def __init__(self):
            self.times = []

        def after_run(self, run_context, run_values):
            self.times.append(time.perf_counter())

    def model_fn(features, labels, mode, params):
        logits = tf1.layers.Dense(1)(features)
        loss = tf1.losses.mean_squared_error(labels=labels, predictions=logits)
        train_op = tf1.train.AdagradOptimizer(0.05).minimize(loss, tf1.train.get_global_step())
        return tf1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    tpu_config = tf1.estimator.tpu.TPUConfig(iterations_per_loop=iterations_per_loop)
    config = tf1.estimator.tpu.RunConfig(model_dir=str(model_dir), tpu_config=tpu_config)
    estimator = tf1.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=False, train_batch_size=TINY_BATCH
    )
    ends = RunEnds()
    estimator.train(
        lambda params: tiny_dataset(tf, params["batch_size"]),
        steps=(repeats + 1) * steps,
        hooks=[ends],
    )
    t = ends.times  # the first `steps` steps are the warm-up
    durations = [t[(i + 1) * steps - 1] - t[i * steps - 1] for i in range(1, repeats + 1)]
    return steps_per_second(steps, durations), len(t)


def matmul_flops(tf, repeats, n=2048):
    """This machine's matrix-multiply FLOP/s, float32 and bfloat16: the best of the repeats."""
    flops = {}
    for dtype in ("float32", "bfloat16"):
        x = tf.cast(tf.random.stateless_normal([n, n], seed=[5, 6]), dtype)
        product = tf.function(lambda x=x: tf.reduce_sum(tf.cast(tf.matmul(x, x), tf.float32)))
        durations = timed(lambda product=product: [product().numpy() for _ in range(4)], repeats)
        flops[dtype] = 4 * 2 * n**3 / min(durations)
    return flops


def strategy_for(tf, replicas):
    if replicas == 1:
        return tf.distribute.get_strategy()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * replicas
    )
    return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])


def worker(replicas: int, quick: bool, model_dir: Path) -> dict:
    from helpers.quiet import quiet_logs

    quiet_logs()
    import tensorflow as tf

    s, rows = settings(quick, replicas), []
    strategy = strategy_for(tf, replicas)
    tf.keras.utils.set_random_seed(0)
    keras_bug_19246 = compat.keras_major() >= 3 and replicas > 1  # see notebook 02
    batches = {"tiny": TINY_BATCH, "mlp": MLP_BATCH}

    def row(workload, path, per_call, measured):
        rate, steps = measured
        rows.append(
            {
                "workload": workload,
                "path": path,
                "steps_per_call": per_call,
                "replicas": replicas,
                "steps_per_s": rate,
                "examples_per_s": rate * batches[workload],
                "steps_per_repeat": steps,
            }
        )
        print(
            f"{replicas} replica(s), {workload}, {path}, {per_call}: {rate:.4g} steps/s",
            file=sys.stderr,
            flush=True,
        )

    def fit(workload, dataset, spe, path="Model.fit", **options):
        if keras_bug_19246 and spe > 1:
            return  # keras-team/keras#19246
        probe = max(s["probe"][workload], spe)
        measured = fit_rate(
            tf, strategy, workload, dataset, spe, probe, s["repeats"], s["window"], **options
        )
        row(workload, path, spe, measured)

    def loop(workload, dataset, per_call, path="custom loop", **options):
        probe = max(s["probe"][workload], per_call)
        measured = loop_rate(
            tf, strategy, workload, dataset, per_call, probe, s["repeats"], s["window"], **options
        )
        row(workload, path, per_call, measured)

    tiny, mlp = tiny_dataset(tf, TINY_BATCH), mlp_dataset(tf)
    if replicas == 1 and _has_estimator(tf):
        steps = s["estimator_steps"]
        for ipl in (1, 10, 100):
            rate, calls = estimator_rate(tf, ipl, steps, s["repeats"], model_dir / str(ipl))
            per_call = (s["repeats"] + 1) * steps / calls
            row("tiny", f"TPUEstimator iterations_per_loop={ipl}", per_call, (rate, steps))
    for workload, dataset in (("tiny", tiny), ("mlp", mlp)):
        for n in s["calls"][workload]:
            fit(workload, dataset, n)
        for n in s["calls"][workload]:
            loop(workload, dataset, n)
    if s["variants"] and replicas == 1:
        most = s["calls"]["tiny"][-1]
        fit("tiny", tiny, most, "Model.fit, jit_compile=True", jit=True)
        loop("tiny", tiny, most, "custom loop, loss Mean per step", mean_loss=True)
        fit("mlp", mlp, 10, "Model.fit, mixed_bfloat16", policy="mixed_bfloat16")
        for option in ("prefetch", "cache"):
            fit("mlp", mlp_dataset(tf, **{option: False}), 10, f"Model.fit, {option}=False")
        unknown_batch = mlp_dataset(tf, drop_remainder=False)
        fit("mlp", unknown_batch, 10, "Model.fit, drop_remainder=False (batch size None)")
    flops = matmul_flops(tf, 3) if replicas == 1 else None
    return {"runtime": runtime_line(strategy, tf), "rows": rows, "matmul_flops": flops}


def _has_estimator(tf) -> bool:
    try:
        compat.require_estimator(tf)
    except compat.EstimatorUnavailableError:
        return False
    return True


def combine(results: list[dict]) -> dict:
    """All rows, with ratios to the TPUEstimator baseline and to the best custom loop."""
    rows = [row for result in results for row in result["rows"]]
    flops = next((r["matmul_flops"] for r in results if r["matmul_flops"]), None)
    baseline = next(
        (r["steps_per_s"] for r in rows if r["path"] == "TPUEstimator iterations_per_loop=1"),
        None,
    )
    for row in rows:
        group = [
            r for r in rows if (r["workload"], r["replicas"]) == (row["workload"], row["replicas"])
        ]
        loops = [r["steps_per_s"] for r in group if r["path"] == "custom loop"]
        rates = {
            "row": row["steps_per_s"],
            **({"loop": max(loops)} if loops else {}),
            **({"estimator": baseline} if baseline else {}),
        }
        row["vs_estimator"] = (
            ratios(rates, "estimator")["row"] if baseline and row["workload"] == "tiny" else None
        )
        row["vs_best_loop"] = ratios(rates, "loop")["row"] if loops else None
        dtype = "bfloat16" if "bfloat16" in row["path"] else "float32"
        row["flops_fraction"] = (
            row["examples_per_s"] * MLP_FLOPS_PER_EXAMPLE / flops[dtype]
            if flops and row["workload"] == "mlp"
            else None
        )
    notes = []
    if not any(r["path"].startswith("Keras 3 on JAX") for r in rows):
        notes.append("No Keras 3 on JAX rows: this Python has no JAX (make bench-current has).")
    else:
        notes.append(
            "Keras 3 on JAX rows: 'x best loop' is the ratio to the fastest TensorFlow custom "
            "loop of the same workload and device count in this run; the JAX loop's batches "
            "sit on the devices before the timing (TensorFlow's loop reads its iterator)."
        )
    if baseline is None:
        notes.append("No TPUEstimator rows: TensorFlow 2.16 and later have no tf.estimator.")
    if any(r["replicas"] > 1 for r in rows) and compat.keras_major() >= 3:
        notes.append(
            "No Model.fit rows with steps_per_execution > 1 on several replicas: "
            "keras-team/keras#19246 (Keras 3, MirroredStrategy)."
        )
    return {
        "runtimes": [r["runtime"] for r in results],
        "matmul_flops": flops,
        "mlp_flops_per_example": MLP_FLOPS_PER_EXAMPLE,
        "rows": rows,
        "notes": notes,
    }


def markdown(report: dict) -> str:
    shown = [
        {
            "workload": r["workload"],
            "replicas": r["replicas"],
            "path": r["path"],
            "steps/call": r["steps_per_call"],
            "steps/s": r["steps_per_s"],
            "examples/s": r["examples_per_s"],
            "x TPUEstimator": r["vs_estimator"] or "",
            "x best loop": r["vs_best_loop"] or "",
            "of matmul FLOP/s": r["flops_fraction"] or "",
        }
        for r in report["rows"]
    ]
    lines = ["Runtime: " + "; ".join(report["runtimes"]), ""]
    for dtype, flops in (report["matmul_flops"] or {}).items():
        lines.append(f"Matrix multiply (2048x2048, {dtype}): {flops / 1e9:.3g} GFLOP/s")
    lines += [
        f"MLP {MLP_UNITS}, batch {MLP_BATCH}: {MLP_FLOPS_PER_EXAMPLE / 1e6:.3g} MFLOP per "
        "example (forward and backward); the last column is its training FLOP/s over the "
        "matrix multiply's (bfloat16 rows: over the bfloat16 multiply's).",
        "",
    ]
    return "\n".join([*lines, markdown_table(shown), "", *report["notes"]]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run, for the tests")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "bench")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--jax-worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.worker:
        with tempfile.TemporaryDirectory(prefix="bench_estimator_") as model_dir:
            result = worker(args.worker, args.quick, Path(model_dir))
        print(json.dumps(result))
        return 0
    if args.jax_worker:
        from tools import bench_jax

        print(json.dumps(bench_jax.worker(args.jax_worker, args.quick)))
        return 0
    from tools import bench_jax

    runs = [("--worker", n, {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
            for n in settings(args.quick)["replicas"]]  # fmt: skip
    if bench_jax.available():
        runs += [("--jax-worker", n, bench_jax.environment(n))
                 for n in settings(args.quick)["replicas"]]  # fmt: skip
    results = []
    for flag, replicas, env in runs:
        command = [sys.executable, "-m", "tools.bench", flag, str(replicas), "--out", str(args.out)]
        command += ["--quick"] if args.quick else []
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        if done.returncode:
            return done.returncode
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    report = combine(results)
    (args.out / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "bench.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
