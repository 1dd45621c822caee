"""Which runtime is chosen on which machine, decided without TensorFlow's devices.

Each case is a fake machine: device files and PCI entries under a temporary root, and
environment variables, as found on Colab and Cloud TPU VMs, GPU machines and plain CPUs.
A TPU given by a grpc:// address must answer: a listening socket on this machine stands in
for a TPU that does, a closed port for one that does not.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from helpers.errors import ParameterError, RuntimeUnavailableError
from helpers.runtime import ONE_REPLICA, Choice, choose, runtime_line


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
    assert choice.tpu_address == "local"
    assert "/dev/accel0" in choice.reason


def test_cloud_tpu_vm_with_vfio_devices_uses_the_local_tpu(machine):
    machine.add_file("dev/vfio/0").add_file("dev/vfio/vfio")
    choice = choose("auto", probe=machine.probe(), list_gpus=gpus_must_not_be_listed)
    assert choice.tpu_address == "local"
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
    assert choice.kind == "TPU" and choice.tpu_address == "my-v3-8"
    assert "TPU_NAME=my-v3-8" in choice.reason


def test_tpu_name_parameter_wins_over_tpu_name_variable(machine):
    machine.env["TPU_NAME"] = "from-env"
    choice = choose("auto", "from-param", probe=machine.probe(), list_gpus=no_gpus)
    assert choice.tpu_address == "from-param"


@pytest.fixture
def answering_port() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends: nothing listens


def test_legacy_colab_tpu_node_address_that_answers(machine, answering_port):
    machine.env["COLAB_TPU_ADDR"] = f"127.0.0.1:{answering_port}"
    choice = choose("auto", probe=machine.probe(), list_gpus=no_gpus)
    assert choice.kind == "TPU"
    assert choice.tpu_address == f"grpc://127.0.0.1:{answering_port}"


def test_grpc_address_parameter_that_answers_is_used(machine, answering_port):
    address = f"grpc://127.0.0.1:{answering_port}"
    choice = choose("tpu", address, probe=machine.probe(), list_gpus=gpus_must_not_be_listed)
    assert choice.tpu_address == address and "TPU requested" in choice.reason


@pytest.mark.parametrize("accelerator", ["auto", "tpu"])
def test_a_tpu_address_that_does_not_answer_fails_fast_naming_address_and_fix(machine, accelerator):
    address = f"grpc://127.0.0.1:{closed_port()}"
    started = time.monotonic()
    with pytest.raises(RuntimeUnavailableError) as raised:
        choose(accelerator, address, probe=machine.probe(), list_gpus=gpus_must_not_be_listed)
    assert time.monotonic() - started < 30  # TensorFlow alone would retry for minutes
    message = str(raised.value)
    assert address in message and "does not answer" in message
    assert "Check the address" in message and "accelerator='auto' or 'cpu'" in message


def test_a_malformed_grpc_address_is_named(machine):
    with pytest.raises(RuntimeUnavailableError, match="grpc://HOST:PORT"):
        choose("tpu", "grpc://no-port", probe=machine.probe(), list_gpus=no_gpus)


def test_gpu_machine_gets_the_gpus(machine):
    choice = choose("auto", probe=machine.probe(), list_gpus=one_gpu)
    assert choice.kind == "GPU" and choice.tpu_address is None
    assert "1 GPU(s)" in choice.reason
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


@pytest.mark.parametrize("kind", ["TPU", "GPU", "CPU"])
def test_one_replica_adds_a_line_on_what_one_chip_means(kind):
    from tools.device_run import RUNTIME_LINE

    args = ("Runner", "dev:0", "TensorFlow x", "virtual devices", "one device")
    one = runtime_line(Choice(kind, "found"), args[0], 1, *args[1:]).split("\n")
    several = runtime_line(Choice(kind, "found"), args[0], 8, *args[1:]).split("\n")
    assert one[1] == ONE_REPLICA and len(one) == 2 and len(several) == 1
    assert one[0].startswith(f"Runtime: {kind} | Runner with 1 replica on dev:0")
    assert RUNTIME_LINE.search(one[0]).groups() == (kind, "1")  # the records still parse it
