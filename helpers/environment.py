"""Look for accelerators without starting TensorFlow's runtime.

Why not simply ask TensorFlow? On a machine without a TPU, `initialize_tpu_system` fails, and
merely trying it initialises TensorFlow's devices: after that the CPU can no longer be split
into virtual devices ("Virtual devices cannot be modified after being initialized"). So the
TPU is looked for the way the TPU runtime itself finds it: environment variables, device
files and the PCI bus. Everything here reads a `Probe`, which tests replace with a fake
machine (a temporary root folder and a dictionary of environment variables).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

GOOGLE_PCI_VENDOR_ID = "0x1ae0"
# PCI device ids of TPU chips (v2/v3, v4, v5p, v5e, v6e, ...). Google's vendor id alone is not
# enough: the gVNIC network card of every Compute Engine VM has it too.
TPU_PCI_DEVICE_IDS = frozenset(
    {"0x0027", "0x0056", "0x005e", "0x0062", "0x0063", "0x006f", "0x0076"}
)


@dataclass(frozen=True)
class Probe:
    """What can be learnt about the machine without importing TensorFlow."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    root: Path = Path("/")

    def _glob(self, pattern: str) -> list[str]:
        return sorted("/" + str(p.relative_to(self.root)) for p in self.root.glob(pattern))

    def tpu_device_files(self) -> list[str]:
        """`/dev/accel*` (TPU v2-v4, v5e) and `/dev/vfio/<n>` (v5p, v6e) on a TPU VM."""
        return self._glob("dev/accel[0-9]*") + self._glob("dev/vfio/[0-9]*")

    def tpu_pci_devices(self) -> list[str]:
        """PCI functions whose vendor is Google and whose device id is a TPU chip."""
        found = []
        for vendor_file in sorted(self.root.glob("sys/bus/pci/devices/*/vendor")):
            device_file = vendor_file.with_name("device")
            try:
                vendor = vendor_file.read_text().strip().lower()
                device = device_file.read_text().strip().lower()
            except OSError:
                continue
            if vendor == GOOGLE_PCI_VENDOR_ID and device in TPU_PCI_DEVICE_IDS:
                found.append(vendor_file.parent.name)
        return found

    def in_colab(self) -> bool:
        return "COLAB_RELEASE_TAG" in self.env or "COLAB_GPU" in self.env


@dataclass(frozen=True)
class TpuTarget:
    """Where a TPU is and how `TPUClusterResolver(tpu=...)` should be called to reach it."""

    resolver_arg: str  # 'local', a TPU name, or a grpc:// address
    evidence: str  # what was found, in words, for the runtime line


def find_tpu(probe: Probe, tpu: str | None = None) -> TpuTarget | None:
    """Return the TPU this process should use, or None when there is no sign of one.

    Order: a name or address given by the caller; `TPU_NAME`; a TPU attached to this VM
    (Colab TPU runtime, Cloud TPU VM); the legacy `COLAB_TPU_ADDR` of old Colab TPU nodes.
    """
    if tpu:
        return TpuTarget(tpu, f"TPU '{tpu}' requested by parameter")
    if probe.env.get("TPU_NAME"):
        name = probe.env["TPU_NAME"]
        return TpuTarget(name, f"TPU_NAME={name}")
    files = probe.tpu_device_files()
    if files:
        return TpuTarget("local", f"TPU device files {', '.join(files[:2])} on this VM")
    chips = probe.tpu_pci_devices()
    if chips:
        return TpuTarget("local", f"{len(chips)} TPU chip(s) on this VM's PCI bus")
    if probe.env.get("COLAB_TPU_ADDR"):
        address = "grpc://" + probe.env["COLAB_TPU_ADDR"]
        return TpuTarget(address, f"COLAB_TPU_ADDR={probe.env['COLAB_TPU_ADDR']}")
    return None


def grpc_address_answers(address: str, timeout_s: float = 3.0) -> str | None:
    """Check that a `grpc://host:port` TPU address accepts connections.

    Returns None when it does, else the reason in words. TensorFlow itself would retry a dead
    address for minutes before failing with a long trace; a plain TCP connect answers in
    seconds. Names that are not grpc:// addresses are left to the resolver.
    """
    parsed = urlparse(address)
    if parsed.scheme != "grpc":
        return None
    if not parsed.hostname or not parsed.port:
        return f"'{address}' is not of the form grpc://HOST:PORT"
    try:
        with socket.create_connection((parsed.hostname, parsed.port), timeout=timeout_s):
            return None
    except OSError as error:
        return f"nothing answered at {parsed.hostname}:{parsed.port} ({error.strerror or error})"


GpuLister = Callable[[], list[str]]


def tensorflow_gpus() -> list[str]:
    """Names of the GPUs TensorFlow can use.

    `list_physical_devices` does not initialise the runtime, so virtual CPU devices can still
    be configured afterwards.
    """
    import tensorflow as tf

    return [device.name for device in tf.config.list_physical_devices("GPU")]


def nvidia_gpus(root: Path = Path("/")) -> list[str]:
    """NVIDIA GPU device files (`/dev/nvidia0`, ...), for runtimes that must not ask
    TensorFlow (the Keras 3 on JAX notebook chooses its runtime before JAX or TensorFlow
    starts)."""
    return sorted(
        "/" + str(path.relative_to(root))
        for path in root.glob("dev/nvidia[0-9]*")
        if path.name[len("nvidia") :].isdigit()
    )
