"""The runtime of the Keras 3 on JAX notebook: its devices, and one line about them.

JAX decides its devices once, when it first starts (at the first `jax.devices()` or the first
array): on a CPU, the number of devices comes from the XLA flag
`--xla_force_host_platform_device_count`, read from `XLA_FLAGS` at that moment, as the CPU
split of the TensorFlow notebooks must come before TensorFlow's first op. So the notebook sets
the flag and `KERAS_BACKEND=jax` before it imports JAX or Keras; this module only checks what
it needs first (`require_keras_on_jax`), writes the flag (`with_host_device_count`), checks
what JAX then found (`check_devices`) and prints it (`describe`). The choice between TPU, GPU
and CPU is `helpers.runtime.choose`, the same rules and errors as in the other notebooks, with
a GPU found from the device files (`helpers.environment.nvidia_gpus`), not through
TensorFlow.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from helpers.errors import FriendlyError, RuntimeUnavailableError
from helpers.runtime import Choice, runtime_line

HOST_DEVICE_FLAG = "--xla_force_host_platform_device_count"
PLATFORMS = {"TPU": "tpu", "GPU": "gpu", "CPU": "cpu"}  # runtime kind -> jax.Device.platform


class BackendUnavailableError(FriendlyError, ImportError):
    """This runtime cannot run Keras 3 on JAX (no JAX, Keras 2, or another backend already)."""


def _installed_version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def require_keras_on_jax() -> None:
    """Raise BackendUnavailableError unless JAX and Keras 3 are installed; imports neither."""
    keras = _installed_version("keras")
    jax = _installed_version("jax") if importlib.util.find_spec("jax") else None
    if jax and keras and int(keras.split(".")[0]) >= 3:
        return
    found = f"Keras {keras}" if keras else "no Keras"
    found += f" and JAX {jax}" if jax else " and no JAX"
    raise BackendUnavailableError(
        f"This runtime has {found}: this notebook needs Keras 3 and JAX. Install them "
        '(pip install "keras>=3" jax), or run it in the current lane (`make test-current`, '
        "whose lock has both); TensorFlow 2.15's reference lane has Keras 2, which has no "
        "JAX backend."
    )


def tensorflow_installed() -> bool:
    """Whether TensorFlow is installed here, found without importing it: a JAX runtime (a GPU
    machine with JAX alone, say) may have none, and the notebook then skips what needs it."""
    return importlib.util.find_spec("tensorflow") is not None


def without_tensorflow(what: str) -> str:
    """The one line a cell prints in place of `what` when TensorFlow is not installed."""
    return (
        f"skipped: {what} needs TensorFlow, which this runtime does not have "
        "(pip install tensorflow-cpu runs it here too)"
    )


def check_backend(keras: Any) -> None:
    """Raise if Keras runs on another backend: KERAS_BACKEND is read at Keras' first import."""
    backend = keras.backend.backend()
    if backend != "jax":
        raise BackendUnavailableError(
            f"Keras was imported with the {backend!r} backend before KERAS_BACKEND=jax was set "
            "(Keras reads it once, at its first import): restart the kernel and run the "
            "notebook from its first cell."
        )


def with_host_device_count(xla_flags: str, count: int) -> str:
    """XLA_FLAGS with the host device count set to `count` (other flags kept, an old count
    replaced)."""
    kept = [flag for flag in xla_flags.split() if not flag.startswith(HOST_DEVICE_FLAG + "=")]
    return " ".join([*kept, f"{HOST_DEVICE_FLAG}={count}"])


def check_devices(devices: list[Any], choice: Choice, virtual_replicas: int) -> None:
    """Raise unless JAX found the devices `choice` asked for (their platform, and on a CPU their
    number)."""
    platform = PLATFORMS[choice.kind]
    found = sorted({device.platform for device in devices})
    if found != [platform]:
        install = {"TPU": "jax[tpu]", "GPU": "jax[cuda12]"}.get(choice.kind, "jax")
        raise RuntimeUnavailableError(
            f"The runtime is {choice.kind} ({choice.reason}) but JAX found {len(devices)} "
            f'{"/".join(found)} device(s): install a JAX for it (pip install "{install}"), '
            "or run with accelerator='cpu'."
        )
    if choice.kind == "TPU" and choice.tpu_address not in (None, "local"):
        raise RuntimeUnavailableError(
            f"tpu_name={choice.tpu_address!r}: JAX uses the TPU chips of the machine it runs on "
            "and cannot reach a TPU by name or address. Run the notebook on the TPU VM itself "
            "(Colab's TPU runtime is one), or leave tpu_name empty."
        )
    if choice.kind == "CPU" and len(devices) != virtual_replicas:
        raise RuntimeUnavailableError(
            f"JAX started with {len(devices)} CPU device(s), not virtual_replicas="
            f"{virtual_replicas}: it reads {HOST_DEVICE_FLAG} only when it first starts. "
            "Restart the kernel and run the notebook from its first cell."
        )


def describe(devices: list[Any], choice: Choice, distribution: Any) -> str:
    """One line: kind, distribution, replicas, devices, versions, and why this runtime."""
    import jax
    import keras

    return runtime_line(
        choice,
        type(distribution).__name__,
        len(devices),
        compact(devices),
        f"JAX {jax.__version__}, Keras {keras.__version__}",
        stand_ins="XLA host devices",
        one_device="one CPU device",
    )


def compact(devices: list[Any]) -> str:
    """[CpuDevice(id=0), ..., CpuDevice(id=7)] -> 'cpu:0-7'."""
    ids = [device.id for device in devices]
    platforms = {device.platform for device in devices}
    if len(platforms) == 1 and ids == list(range(ids[0], ids[0] + len(ids))):
        return f"{platforms.pop()}:{ids[0]}" + (f"-{ids[-1]}" if len(ids) > 1 else "")
    return ", ".join(f"{device.platform}:{device.id}" for device in devices)


class ScriptFailedError(FriendlyError, RuntimeError):
    """A script run in a process of its own failed or printed no JSON result."""


def run_script(script: str, timeout_s: float = 600.0) -> Any:
    """Run `script` in a new Python process (this one's interpreter) and return the JSON value
    of its last output line.

    Keras chooses its backend once per process, so the same Keras code runs on another backend
    only in another process. What the script writes to stderr is kept out of the notebook,
    except its last line when it fails.
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        raise ScriptFailedError(f"the script did not finish within {timeout_s:.0f} s") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ScriptFailedError(f"the script ended with exit status {done.returncode}: {last}")
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        raise ScriptFailedError(f"the script's last line is not JSON: {lines[-1][:200]}") from None
