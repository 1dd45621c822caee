"""Which runtime a notebook runs on, and one line that describes the strategy it built.

The notebooks build their strategy themselves, in one visible cell: the guide's four calls on
a TPU, `MirroredStrategy` on GPUs, the CPU split into virtual devices otherwise. This module
only decides which branch that cell takes (`choose`) and prints what it got (`describe`).

`choose` looks at the machine without initialising TensorFlow's devices: once they exist the
CPU can no longer be split into virtual devices. It also checks that a TPU given by a
`grpc://` address answers, because TensorFlow itself retries a dead address for minutes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from helpers.environment import GpuLister, Probe, find_tpu, grpc_address_answers, tensorflow_gpus
from helpers.errors import ParameterError, RuntimeUnavailableError

ACCELERATORS = ("auto", "tpu", "gpu", "cpu")
Kind = Literal["TPU", "GPU", "CPU"]

HOW_TO_GET_A_TPU = (
    "To get one: in Colab choose Runtime > Change runtime type > TPU and run the notebook "
    "from its first cell; on Google Cloud run it on a TPU VM, or set TPU_NAME (or the "
    "tpu_name parameter) to the name or grpc:// address of your TPU. To run here without a "
    "TPU, use accelerator='auto' or 'cpu'."
)


@dataclass(frozen=True)
class Choice:
    """The kind of runtime, why, and for a TPU the argument of `TPUClusterResolver(tpu=...)`."""

    kind: Kind
    reason: str
    tpu_address: str | None = None  # 'local', a TPU name or a grpc:// address


def choose(
    accelerator: str = "auto",
    tpu_name: str | None = None,
    *,
    probe: Probe | None = None,
    list_gpus: GpuLister = tensorflow_gpus,
) -> Choice:
    """Decide between TPU, GPU and CPU without initialising TensorFlow's devices.

    Order: an explicit request > a TPU found > GPU(s) found > CPU. A TPU at a `grpc://`
    address that does not answer fails here, in seconds, with the address and the fix.
    """
    request = str(accelerator).lower()
    if request not in ACCELERATORS:
        raise ParameterError(
            f"accelerator={accelerator!r} is not one of {', '.join(map(repr, ACCELERATORS))}."
        )
    if request in ("auto", "tpu"):
        target = find_tpu(probe or Probe(), tpu_name or None)
        if target is not None:
            problem = grpc_address_answers(target.resolver_arg)
            if problem:
                raise RuntimeUnavailableError(
                    f"The TPU at {target.resolver_arg} ({target.evidence}) does not answer: "
                    f"{problem}. Check the address and that the TPU is running. " + HOW_TO_GET_A_TPU
                )
            prefix = "TPU requested; " if request == "tpu" else ""
            return Choice("TPU", f"{prefix}found {target.evidence}", target.resolver_arg)
        if request == "tpu":
            raise RuntimeUnavailableError(
                "accelerator='tpu' was requested but this machine has no TPU. Looked for: the "
                "tpu_name parameter, the TPU_NAME and COLAB_TPU_ADDR environment variables, "
                "TPU device files (/dev/accel*, /dev/vfio/N) and TPU chips on the PCI bus. "
                + HOW_TO_GET_A_TPU
            )
    if request == "cpu":
        return Choice("CPU", "CPU requested")
    gpus = list_gpus()
    if gpus:
        prefix = "GPU requested; " if request == "gpu" else "no TPU found; "
        return Choice("GPU", f"{prefix}TensorFlow sees {len(gpus)} GPU(s)")
    if request == "gpu":
        raise RuntimeUnavailableError(
            "accelerator='gpu' was requested but TensorFlow sees no GPU. In Colab choose "
            "Runtime > Change runtime type > a GPU; elsewhere install a CUDA build of "
            "TensorFlow. To run without one, use accelerator='auto' or 'cpu'."
        )
    return Choice("CPU", "no TPU and no GPU found")


def describe(strategy: Any, choice: Choice) -> str:
    """One line: kind, strategy, replicas, devices, versions, and why this runtime."""
    import tensorflow as tf

    try:
        devices = tuple(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy runs on TensorFlow's default device
        devices = (tf.config.list_logical_devices()[0].name,)
    return runtime_line(
        choice,
        type(strategy).__name__,
        strategy.num_replicas_in_sync,
        compact_devices(devices),
        f"TensorFlow {tf.__version__}, Keras {keras_version()}",
        stand_ins="virtual CPU devices",
        one_device="one CPU device, TensorFlow's default strategy",
    )


def runtime_line(
    choice: Choice,
    runner: str,
    replicas: int,
    devices: str,
    versions: str,
    stand_ins: str,
    one_device: str,
) -> str:
    """The one line every notebook prints about its runtime (`Runtime: KIND | RUNNER with N
    replicas on DEVICES | VERSIONS | why`); the compatibility records parse it. With one
    replica a second line, ONE_REPLICA, says what that means for the notebook's lessons."""
    reason = choice.reason
    if choice.kind == "CPU":
        reason += (
            f"; {replicas} {stand_ins} stand in for TPU cores"
            if replicas > 1
            else f"; {one_device}"
        )
    line = (
        f"Runtime: {choice.kind} | {runner} with {replicas} "
        f"replica{'s' if replicas != 1 else ''} on {devices} | {versions} | {reason}"
    )
    return line + "\n" + ONE_REPLICA if replicas == 1 else line


# The second runtime line with one replica: a one-chip TPU (Colab's free v5e-1), one GPU, or
# the CPU stand-in at virtual_replicas=1, which is how the tests check one chip.
ONE_REPLICA = (
    "One replica, as on one v5e or v6e chip (Colab's free v5e-1): a lesson about several "
    "replicas runs with nothing to split, or is skipped, and needs a slice of several chips; "
    "the box at the top of this notebook says which lessons, if any, those are."
)


def keras_version() -> str:
    """Version of the Keras behind `tf.keras` (Keras 2 on TF <= 2.15, Keras 3 after)."""
    import importlib

    import tensorflow as tf

    package = tf.keras.Model.__module__.split(".")[0]  # 'keras', 'tf_keras' or 'tensorflow'
    return str(getattr(importlib.import_module(package), "__version__", "unknown"))


def compact_devices(devices: tuple[str, ...]) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:0' x8 -> 'CPU:0-7'; readable in one line."""
    parsed = [re.search(r"device:([A-Z_]+):(\d+)$", name) for name in devices]
    if not devices or not all(parsed):
        return ", ".join(devices) or "no devices"
    kinds = {match.group(1) for match in parsed if match}
    indices = [int(match.group(2)) for match in parsed if match]
    if len(kinds) == 1 and indices == list(range(indices[0], indices[0] + len(indices))):
        kind = kinds.pop()
        return f"{kind}:{indices[0]}" + (f"-{indices[-1]}" if len(indices) > 1 else "")
    return ", ".join(f"{match.group(1)}:{match.group(2)}" for match in parsed if match)
