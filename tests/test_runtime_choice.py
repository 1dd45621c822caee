"""Which runtime is chosen on which machine, decided without TensorFlow's devices.

Each case is a fake machine: device files and PCI entries under a temporary root, and
environment variables, as found on Colab and Cloud TPU VMs, GPU machines and plain CPUs.
"""

from __future__ import annotations

import pytest

from helpers.errors import ParameterError, RuntimeUnavailableError
from helpers.runtime import choose


def no_gpus() -> list[str]:
    return []


def one_gpu() -> list[str]:
    return ["/physical_device:GPU:0"]


def gpus_must_not_be_listed() -> list[str]:
    raise AssertionError("the GPU lister was called although the choice was already made")


def test_colab_tpu_vm_uses_the_local_tpu(machine):
    machine.env["COLAB_RELEASE_TAG"] = "release-colab_20261101"
    machine.add_file("dev/accel0")
    choice = choose("auto", probe=machine.probe(), list_gpus=gpus_must_not_be_listed)
    assert choice.kind == "TPU"
    assert choice.tpu is not None and choice.tpu.resolver_arg == "local"
    assert "/dev/accel0" in choice.reason


def test_cloud_tpu_vm_with_vfio_devices_uses_the_local_tpu(machine):
    machine.add_file("dev/vfio/0").add_file("dev/vfio/vfio")
    choice = choose("auto", probe=machine.probe(), list_gpus=gpus_must_not_be_listed)
    assert choice.tpu is not None and choice.tpu.resolver_arg == "local"
    assert "/dev/vfio/0" in choice.reason and "/dev/vfio/vfio" not in choice.reason


def test_tpu_chip_on_the_pci_bus_is_found_without_device_files(machine):
    machine.add_pci_device("0000:00:05.0", "0x1ae0", "0x0063")  # TPU v5e
    choice = choose("auto", probe=machine.probe(), list_gpus=gpus_must_not_be_listed)
    assert choice.kind == "TPU" and "PCI" in choice.reason


def test_google_network_card_alone_is_not_a_tpu(machine):
    machine.add_pci_device("0000:00:04.0", "0x1ae0", "0x0042")  # gVNIC on every GCE VM
    assert choose("auto", probe=machine.probe(), list_gpus=no_gpus).kind == "CPU"


def test_cloud_tpu_named_by_tpu_name(machine):
    machine.env["TPU_NAME"] = "my-v3-8"
    choice = choose("auto", probe=machine.probe(), list_gpus=gpus_must_not_be_listed)
    assert choice.kind == "TPU" and choice.tpu is not None
    assert choice.tpu.resolver_arg == "my-v3-8"
    assert "TPU_NAME=my-v3-8" in choice.reason


def test_tpu_name_parameter_wins_over_tpu_name_variable(machine):
    machine.env["TPU_NAME"] = "from-env"
    choice = choose("auto", tpu="from-param", probe=machine.probe(), list_gpus=no_gpus)
    assert choice.tpu is not None and choice.tpu.resolver_arg == "from-param"


def test_legacy_colab_tpu_node_address(machine):
    machine.env["COLAB_TPU_ADDR"] = "10.0.0.2:8470"
    choice = choose("auto", probe=machine.probe(), list_gpus=no_gpus)
    assert choice.tpu is not None and choice.tpu.resolver_arg == "grpc://10.0.0.2:8470"


def test_gpu_machine_gets_the_gpus(machine):
    choice = choose("auto", probe=machine.probe(), list_gpus=one_gpu)
    assert choice.kind == "GPU" and choice.gpus == ("/physical_device:GPU:0",)
    assert "no TPU found" in choice.reason


def test_tpu_is_preferred_over_gpus(machine):
    machine.add_file("dev/accel0")
    assert choose("auto", probe=machine.probe(), list_gpus=one_gpu).kind == "TPU"


def test_nothing_found_means_cpu(machine):
    choice = choose("auto", probe=machine.probe(), list_gpus=no_gpus)
    assert choice.kind == "CPU" and choice.reason == "no TPU and no GPU found"


def test_explicit_cpu_request_wins_over_a_present_tpu_and_gpu(machine):
    machine.add_file("dev/accel0")
    choice = choose("cpu", probe=machine.probe(), list_gpus=gpus_must_not_be_listed)
    assert choice.kind == "CPU" and choice.reason == "CPU requested"


def test_explicit_gpu_request_skips_the_tpu(machine):
    machine.add_file("dev/accel0")
    choice = choose("gpu", probe=machine.probe(), list_gpus=one_gpu)
    assert choice.kind == "GPU" and choice.reason.startswith("GPU requested")


def test_accelerator_request_is_case_insensitive(machine):
    machine.env["TPU_NAME"] = "t"
    assert choose("TPU", probe=machine.probe(), list_gpus=no_gpus).kind == "TPU"


def test_tpu_request_without_a_tpu_says_what_was_looked_for_and_how_to_get_one(machine):
    with pytest.raises(RuntimeUnavailableError) as raised:
        choose("tpu", probe=machine.probe(), list_gpus=gpus_must_not_be_listed)
    message = str(raised.value)
    for looked_for in ("TPU_NAME", "/dev/accel*", "PCI bus", "tpu_name"):
        assert looked_for in message
    assert "Runtime > Change runtime type > TPU" in message
    assert "accelerator='auto' or 'cpu'" in message


def test_gpu_request_without_a_gpu_is_a_clear_error(machine):
    with pytest.raises(RuntimeUnavailableError, match="sees no GPU"):
        choose("gpu", probe=machine.probe(), list_gpus=no_gpus)


def test_unknown_accelerator_is_a_parameter_error(machine):
    with pytest.raises(ParameterError, match=r"accelerator='quantum' is not one of"):
        choose("quantum", probe=machine.probe(), list_gpus=no_gpus)


def test_friendly_errors_render_as_their_message_alone():
    error = RuntimeUnavailableError("no TPU here")
    assert error._render_traceback_() == ["RuntimeUnavailableError: no TPU here"]
