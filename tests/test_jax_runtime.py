"""The Keras 3 on JAX notebook's runtime helpers: its XLA flag, the checks of what JAX found,
its one runtime line, and the GPU lookup that starts neither JAX nor TensorFlow."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version

import pytest
from support import LANE

from helpers import jax_runtime
from helpers.environment import nvidia_gpus
from helpers.errors import RuntimeUnavailableError
from helpers.runtime import Choice

CPU = Choice("CPU", "no TPU and no GPU found")


@dataclass(frozen=True)
class FakeDevice:
    id: int
    platform: str = "cpu"


def cpus(count: int) -> list[FakeDevice]:
    return [FakeDevice(index) for index in range(count)]


def test_the_host_device_count_is_set_and_the_other_flags_are_kept():
    flags = "--xla_cpu_max_isa=AVX2 --xla_force_host_platform_device_count=4"
    assert jax_runtime.with_host_device_count(flags, 8) == (
        "--xla_cpu_max_isa=AVX2 --xla_force_host_platform_device_count=8"
    )
    assert jax_runtime.with_host_device_count("", 2) == "--xla_force_host_platform_device_count=2"


def test_the_devices_jax_found_are_accepted_when_they_are_what_was_asked_for():
    jax_runtime.check_devices(cpus(8), CPU, 8)
    jax_runtime.check_devices([FakeDevice(0, "tpu")], Choice("TPU", "found", "local"), 8)


def test_a_cpu_count_that_jax_did_not_take_says_restart_the_kernel():
    with pytest.raises(RuntimeUnavailableError, match="Restart the kernel") as error:
        jax_runtime.check_devices(cpus(1), CPU, 8)
    assert "not virtual_replicas=8" in str(error.value)


def test_a_tpu_runtime_where_jax_finds_only_cpus_names_the_package():
    with pytest.raises(RuntimeUnavailableError, match=r'pip install "jax\[tpu\]"'):
        jax_runtime.check_devices(cpus(1), Choice("TPU", "found /dev/accel0", "local"), 8)


def test_a_tpu_by_name_or_address_is_refused_with_the_reason():
    remote = Choice("TPU", "found TPU_NAME", "grpc://10.0.0.2:8470")
    with pytest.raises(RuntimeUnavailableError, match="cannot reach a TPU by name"):
        jax_runtime.check_devices([FakeDevice(0, "tpu")], remote, 8)


def test_the_devices_are_written_compactly():
    assert jax_runtime.compact(cpus(8)) == "cpu:0-7"
    assert jax_runtime.compact(cpus(1)) == "cpu:0"
    assert jax_runtime.compact([FakeDevice(0), FakeDevice(2)]) == "cpu:0, cpu:2"


def test_gpus_are_found_by_their_device_files(tmp_path):
    (tmp_path / "dev").mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        (tmp_path / "dev" / name).touch()
    assert nvidia_gpus(tmp_path) == ["/dev/nvidia0", "/dev/nvidia1"]
    assert nvidia_gpus(tmp_path / "nothing") == []


def test_each_lane_has_keras_3_with_jax_or_says_in_one_line_what_is_missing():
    """The current lane has both; the reference lane (Keras 2) and the Colab lane lack JAX."""
    if LANE == "current":
        jax_runtime.require_keras_on_jax()
        return
    with pytest.raises(jax_runtime.BackendUnavailableError) as error:
        jax_runtime.require_keras_on_jax()
    assert f"Keras {version('keras')} and no JAX" in str(error.value)
    assert len(str(error.value).splitlines()) == 1


def test_a_script_in_its_own_process_gives_back_its_last_line_as_json():
    assert jax_runtime.run_script('print("noise")\nprint(\'{"answer": 42}\')') == {"answer": 42}


def test_a_failing_script_says_how_in_one_line():
    with pytest.raises(jax_runtime.ScriptFailedError, match="exit status 1: ZeroDivisionError"):
        jax_runtime.run_script("1 / 0")
    with pytest.raises(jax_runtime.ScriptFailedError, match="not JSON: done"):
        jax_runtime.run_script('print("done")')
