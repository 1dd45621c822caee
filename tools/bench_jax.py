"""The Keras 3 on JAX rows of `make bench-current`: the same workloads, the same steps per call.

`tools.bench` runs this module as a worker process of its own for each device count, because
Keras reads KERAS_BACKEND at its first import and JAX reads its host device count
(`--xla_force_host_platform_device_count` in XLA_FLAGS) when it starts. Two paths, as in
notebook 11:

- `Model.fit` under `keras.distribution.DataParallel`, with `steps_per_execution` N, on the
  same `tf.data` pipelines as TensorFlow's rows;
- a custom loop: `model.stateless_call`, `jax.value_and_grad` and `optimizer.stateless_apply`
  in one `jax.jit` call that runs N steps with `jax.lax.scan`. Its N batches are placed on the
  devices once, before the timing (TensorFlow's loop reads its prefetched iterator inside the
  call): the row measures the compiled steps and the call, not an input pipeline. Each call
  waits for the one before.

`Model.fit` is `tools.bench.fit_rate` itself, and both paths build `tools.bench.build`'s
models: in this process `tf.keras` is Keras 3 on the JAX backend, and the `DataParallel`
distribution takes the place of the strategy (both have `scope()`). Rows carry the same keys
as `tools.bench`'s, with paths that start "Keras 3 on JAX", so
`tools.bench.combine` gives them the same ratios: to the fastest TensorFlow custom loop of
the same workload and device count, measured in the same run.
"""

from __future__ import annotations

import os
import sys
import time

from tools import bench

FIT = "Keras 3 on JAX: Model.fit"
LOOP = "Keras 3 on JAX: custom loop (jax.lax.scan)"


def available() -> bool:
    """Whether this Python has JAX and Keras 3 (the current lane's lock has both)."""
    from helpers.jax_runtime import BackendUnavailableError, require_keras_on_jax

    try:
        require_keras_on_jax()
    except BackendUnavailableError:
        return False
    return True


# XLA's CPU all-reduce ends the process when one device's thread has not joined it within 40 s
# (`Termination timeout for all reduce ... of 40 seconds exceeded`): on a loaded 2-core machine
# running the other lanes beside this one, a device thread was once that late. The bench
# measures rates, so it waits for a slow thread instead of dying; the flags are XLA's own.
PATIENT_COLLECTIVES = (
    "--xla_cpu_collective_call_warn_stuck_timeout_seconds=300",
    "--xla_cpu_collective_call_terminate_timeout_seconds=900",
)


def environment(replicas: int) -> dict[str, str]:
    """The worker's environment: JAX's backend for Keras, `replicas` CPU devices, and
    collectives that wait for a late device thread (PATIENT_COLLECTIVES, unless XLA_FLAGS
    already sets them)."""
    from helpers.jax_runtime import with_host_device_count

    flags = with_host_device_count(os.environ.get("XLA_FLAGS", ""), replicas).split()
    given = {flag.split("=", 1)[0] for flag in flags}
    flags += [flag for flag in PATIENT_COLLECTIVES if flag.split("=", 1)[0] not in given]
    xla_flags = " ".join(flags)
    return {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "XLA_FLAGS": xla_flags,
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


def loop_rate(jax, tf, kind, batch, per_call, steps, repeats, window):
    """N steps per `jax.jit` call over batches placed on the devices once."""
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    model, optimizer, loss_fn = bench.build(tf, kind)
    optimizer.build(model.trainable_variables)

    def loss_and_updates(trainable, non_trainable, x, y):
        predictions, non_trainable = model.stateless_call(trainable, non_trainable, x)
        return loss_fn(y, predictions), non_trainable

    gradients_of = jax.value_and_grad(loss_and_updates, has_aux=True)

    def train_step(state, data):
        trainable, non_trainable, optimizer_variables = state
        (loss, non_trainable), gradients = gradients_of(trainable, non_trainable, *data)
        trainable, optimizer_variables = optimizer.stateless_apply(
            optimizer_variables, gradients, trainable
        )
        return (trainable, non_trainable, optimizer_variables), loss

    train_steps = jax.jit(lambda state, xs, ys: jax.lax.scan(train_step, state, (xs, ys)))
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
    variables = (model.trainable_variables, model.non_trainable_variables, optimizer.variables)
    state = [
        jax.device_put(tuple([v.value for v in g] for g in variables), NamedSharding(mesh, P()))
    ]
    xs, ys = (jax.device_put(a, NamedSharding(mesh, P(None, "batch"))) for a in batch(per_call))

    def run(steps):
        for _ in range(steps // per_call):
            state[0], losses = train_steps(state[0], xs, ys)
            # Each call waits for the one before, as a TensorFlow function call does: calls
            # left queued on XLA's CPU devices can leave an all-reduce waiting for a device
            # that is still in another call, until XLA aborts after 40 s.
            losses.block_until_ready()

    steps = bench.calibrated(lambda: run(steps), steps, per_call, window)
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(steps)
        durations.append(time.perf_counter() - start)
    return bench.steps_per_second(steps, durations), steps


def stacked_batches(kind: str):
    """`per_call` batches of the workload as (step, example, ...) arrays, as `tools.bench`'s
    pipelines give them: the guide's one example repeated, or MNIST-shaped random data."""
    import numpy as np

    def batches(per_call: int):
        if kind == "tiny":
            x = np.tile(np.float32([[1.0, 1.5]]), (per_call, bench.TINY_BATCH, 1))
            return x, np.full((per_call, bench.TINY_BATCH, 1), 0.3, np.float32)
        rng = np.random.default_rng(0)
        x = rng.uniform(-1, 1, (per_call, bench.MLP_BATCH, 784)).astype(np.float32)
        return x, rng.integers(0, 10, (per_call, bench.MLP_BATCH)).astype(np.int32)

    return batches


def worker(replicas: int, quick: bool) -> dict:
    from helpers.quiet import quiet_logs

    quiet_logs()
    import jax
    import keras
    import tensorflow as tf

    s, rows = bench.settings(quick, replicas), []
    keras.utils.set_random_seed(0)
    distribution = keras.distribution.DataParallel(devices=jax.devices())
    keras.distribution.set_distribution(distribution)
    batches = {"tiny": bench.TINY_BATCH, "mlp": bench.MLP_BATCH}
    datasets = {"tiny": bench.tiny_dataset(tf, bench.TINY_BATCH), "mlp": bench.mlp_dataset(tf)}
    for workload in ("tiny", "mlp"):
        for path in (FIT, LOOP):
            for n in s["calls"][workload]:
                probe = max(s["probe"][workload], n)
                if path == FIT:
                    measured = bench.fit_rate(
                        tf, distribution, workload, datasets[workload], n, probe,
                        s["repeats"], s["window"],
                    )  # fmt: skip
                else:
                    measured = loop_rate(
                        jax, tf, workload, stacked_batches(workload), n, probe,
                        s["repeats"], s["window"],
                    )  # fmt: skip
                rate, steps = measured
                rows.append(
                    {
                        "workload": workload,
                        "path": path,
                        "steps_per_call": n,
                        "replicas": replicas,
                        "steps_per_s": rate,
                        "examples_per_s": rate * batches[workload],
                        "steps_per_repeat": steps,
                    }
                )
                print(f"{replicas} device(s), {workload}, {path}, {n}: {rate:.4g} steps/s",
                      file=sys.stderr, flush=True)  # fmt: skip
    runtime = (
        f"{jax.devices()[0].platform.upper()}, {len(jax.devices())} JAX device(s), "
        f"JAX {jax.__version__}, Keras {keras.__version__}"
    )
    return {"runtime": runtime, "rows": rows, "matmul_flops": None}
