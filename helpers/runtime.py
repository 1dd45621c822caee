"""Choose and build the distribution strategy for the machine the notebook runs on.

One call, `setup()`, gives every notebook the same code on a TPU, on GPUs and on a plain CPU.
The order is: an explicit request > a TPU found > GPU(s) found > CPU. On a CPU the single
physical device is split into N logical devices (8 by default, standing in for the 8 cores of
a v2-8/v3-8 TPU) and a MirroredStrategy runs one replica on each, so that the replication,
per-replica batches and all-reduces of a TPU are exercised without one. N=1 gives TensorFlow's
default strategy.

The choice (`choose`) touches no TensorFlow runtime state, so it can be tested against fake
machines and it never spoils the CPU split by initialising devices too early.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from helpers.environment import (
    GpuLister,
    Probe,
    TpuTarget,
    find_tpu,
    grpc_address_answers,
    tensorflow_gpus,
)
from helpers.errors import ParameterError, RuntimeUnavailableError

ACCELERATORS = ("auto", "tpu", "gpu", "cpu")
DEFAULT_VIRTUAL_REPLICAS = 8
Kind = Literal["TPU", "GPU", "CPU"]

HOW_TO_GET_A_TPU = (
    "To get one: in Colab choose Runtime > Change runtime type > TPU and run the notebook "
    "from its first cell; on Google Cloud run it on a TPU VM, or set TPU_NAME (or the "
    "tpu_name parameter) to the name or grpc:// address of your TPU. To run here without a "
    "TPU, use accelerator='auto' or 'cpu'."
)


@dataclass(frozen=True)
class Choice:
    """Which kind of runtime to build, and why (before any TensorFlow device exists)."""

    kind: Kind
    reason: str
    tpu: TpuTarget | None = None
    gpus: tuple[str, ...] = ()


@dataclass(frozen=True)
class Runtime:
    """The runtime a notebook got: what it is, why it was chosen, and its strategy."""

    kind: Kind
    replicas: int
    devices: tuple[str, ...]
    tf_version: str
    keras_version: str
    reason: str
    strategy: Any = field(repr=False, compare=False)

    @property
    def strategy_name(self) -> str:
        return type(self.strategy).__name__

    def __str__(self) -> str:
        return (
            f"Runtime: {self.kind} | {self.strategy_name} with {self.replicas} "
            f"replica{'s' if self.replicas != 1 else ''} on {compact_devices(self.devices)} | "
            f"TensorFlow {self.tf_version}, Keras {self.keras_version} | {self.reason}"
        )


def choose(
    accelerator: str = "auto",
    tpu: str | None = None,
    *,
    probe: Probe | None = None,
    list_gpus: GpuLister = tensorflow_gpus,
) -> Choice:
    """Decide between TPU, GPU and CPU without initialising TensorFlow's devices."""
    request = str(accelerator).lower()
    if request not in ACCELERATORS:
        raise ParameterError(
            f"accelerator={accelerator!r} is not one of {', '.join(map(repr, ACCELERATORS))}."
        )
    probe = probe or Probe()
    if request in ("auto", "tpu"):
        target = find_tpu(probe, tpu)
        if target is not None:
            prefix = "TPU requested; " if request == "tpu" else ""
            return Choice("TPU", f"{prefix}found {target.evidence}", tpu=target)
        if request == "tpu":
            raise RuntimeUnavailableError(
                "accelerator='tpu' was requested but this machine has no TPU. Looked for: the "
                "tpu_name parameter, the TPU_NAME and COLAB_TPU_ADDR environment variables, "
                "TPU device files (/dev/accel*, /dev/vfio/N) and TPU chips on the PCI bus. "
                + HOW_TO_GET_A_TPU
            )
    if request == "cpu":
        return Choice("CPU", "CPU requested")
    gpus = tuple(list_gpus())
    if gpus:
        prefix = "GPU requested; " if request == "gpu" else "no TPU found; "
        return Choice("GPU", f"{prefix}TensorFlow sees {len(gpus)} GPU(s)", gpus=gpus)
    if request == "gpu":
        raise RuntimeUnavailableError(
            "accelerator='gpu' was requested but TensorFlow sees no GPU. In Colab choose "
            "Runtime > Change runtime type > a GPU; elsewhere install a CUDA build of "
            "TensorFlow. To run without one, use accelerator='auto' or 'cpu'."
        )
    return Choice("CPU", "no TPU and no GPU found")


def setup(
    accelerator: str = "auto",
    virtual_replicas: int = DEFAULT_VIRTUAL_REPLICAS,
    tpu: str | None = None,
    *,
    probe: Probe | None = None,
    list_gpus: GpuLister = tensorflow_gpus,
) -> Runtime:
    """Pick the runtime, build its distribution strategy and describe it.

    `virtual_replicas` only applies to the CPU: the number of logical CPU devices (and so of
    replicas) standing in for TPU cores. On a TPU or GPU the hardware decides.
    """
    if isinstance(virtual_replicas, bool) or not isinstance(virtual_replicas, int):
        raise ParameterError(f"virtual_replicas={virtual_replicas!r} must be an integer >= 1.")
    if virtual_replicas < 1:
        raise ParameterError(f"virtual_replicas={virtual_replicas!r} must be >= 1.")
    choice = choose(accelerator, tpu or None, probe=probe, list_gpus=list_gpus)
    if choice.kind == "TPU":
        assert choice.tpu is not None
        strategy = _tpu_strategy(choice.tpu)
        reason = choice.reason
    elif choice.kind == "GPU":
        strategy = _gpu_strategy(choice.gpus)
        reason = choice.reason
    else:
        strategy = _cpu_strategy(virtual_replicas)
        stand_in = (
            f"{virtual_replicas} virtual CPU devices stand in for TPU cores"
            if virtual_replicas > 1
            else "one CPU device, TensorFlow's default strategy"
        )
        reason = f"{choice.reason}; {stand_in}"
    return describe(strategy, choice.kind, reason)


def describe(strategy: Any, kind: Kind, reason: str) -> Runtime:
    """Summarise a built strategy: kind, replicas, devices, versions and the reason."""
    import tensorflow as tf

    try:
        devices = tuple(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy runs on TensorFlow's default device
        devices = (tf.config.list_logical_devices()[0].name,)
    return Runtime(
        kind=kind,
        replicas=strategy.num_replicas_in_sync,
        devices=devices,
        tf_version=tf.__version__,
        keras_version=keras_version(),
        reason=reason,
        strategy=strategy,
    )


def keras_version() -> str:
    """Version of the Keras behind `tf.keras` (Keras 2 on TF <= 2.15, Keras 3 after)."""
    import importlib

    import tensorflow as tf

    package = tf.keras.Model.__module__.split(".")[0]  # 'keras', 'tf_keras' or 'tensorflow'
    module = importlib.import_module(package)
    return str(getattr(module, "__version__", "unknown"))


def _tpu_strategy(target: TpuTarget) -> Any:
    problem = grpc_address_answers(target.resolver_arg)
    if problem:
        raise RuntimeUnavailableError(
            f"The TPU at {target.resolver_arg} ({target.evidence}) does not answer: {problem}. "
            "Check the address and that the TPU is running. " + HOW_TO_GET_A_TPU
        )
    import tensorflow as tf

    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=target.resolver_arg)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except Exception as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        if len(first_line) > 160:
            first_line = first_line[:157] + "..."
        raise RuntimeUnavailableError(
            f"A TPU was found ({target.evidence}) but TensorFlow could not initialise it with "
            f"TPUClusterResolver(tpu={target.resolver_arg!r}): {type(error).__name__}: "
            f"{first_line}. On a TPU VM install the TPU build of TensorFlow "
            "(tensorflow-tpu with its matching libtpu); for a remote TPU check TPU_NAME."
        ) from None
    return tf.distribute.TPUStrategy(resolver)


def _gpu_strategy(gpus: tuple[str, ...]) -> Any:
    import tensorflow as tf

    names = [re.sub(r"^/physical_device:", "/device:", name) for name in gpus]
    return tf.distribute.MirroredStrategy(names)


def _cpu_strategy(virtual_replicas: int) -> Any:
    import tensorflow as tf

    if virtual_replicas == 1:
        return tf.distribute.get_strategy()
    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = [tf.config.LogicalDeviceConfiguration()] * virtual_replicas
    try:
        tf.config.set_logical_device_configuration(cpu, wanted)
    except RuntimeError:
        current = len(tf.config.list_logical_devices("CPU"))
        if current != virtual_replicas:
            raise RuntimeUnavailableError(
                f"This Python process already initialised TensorFlow with {current} CPU "
                f"device(s), so it cannot be split into {virtual_replicas} any more. Restart "
                "the kernel and run the notebook from the top."
            ) from None
    names = [device.name for device in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(names)


def compact_devices(devices: tuple[str, ...]) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:0' x8 -> 'CPU:0-7'; readable in one line."""
    parsed = [re.search(r"device:([A-Z_]+):(\d+)$", name) for name in devices]
    if not devices or not all(parsed):
        return ", ".join(devices) or "no devices"
    kinds = {match.group(1) for match in parsed if match}
    indices = [int(match.group(2)) for match in parsed if match]
    if len(kinds) == 1 and indices == list(range(indices[0], indices[0] + len(indices))):
        kind = kinds.pop()
        if len(indices) == 1:
            return f"{kind}:{indices[0]}"
        return f"{kind}:{indices[0]}-{indices[-1]}"
    return ", ".join(f"{match.group(1)}:{match.group(2)}" for match in parsed if match)
