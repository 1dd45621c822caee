"""The Colab set-up on faked runtimes: which installs it plans, in which case; and the Colab
lane (requirements-colab.txt) tests exactly the TensorFlow that the set-up installs."""

from __future__ import annotations

import re
import sys
from importlib.metadata import version

from support import LANE, ROOT

from helpers import colab
from helpers.runtime import choose


def everything_installed(module: str) -> bool:
    return True


def nothing_installed(module: str) -> bool:
    return False


def in_colab(machine):
    machine.env["COLAB_RELEASE_TAG"] = "release-colab-20261120"
    return machine


def test_outside_colab_nothing_happens(machine):
    todo = colab.plan(machine.probe(), is_installed=nothing_installed)
    assert todo.installs == () and dict(todo.environment) == {}
    assert todo.pip_commands() == []


def test_colab_tpu_vm_gets_tensorflow_tpu_with_libtpu_and_tpu_name_local(machine):
    in_colab(machine).add_file("dev/accel0")
    todo = colab.plan(machine.probe(), is_installed=nothing_installed)
    assert todo.installs == (colab.TPU_PACKAGES, ("matplotlib", "tensorboard"))
    assert todo.environment == {"TPU_NAME": "local"}
    assert todo.pip_commands()[0] == [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        f"tensorflow-tpu=={colab.TENSORFLOW_VERSION}",
        "libtpu~=0.0.14",
    ]
    assert "/dev/accel0" in todo.notes[0]


def test_after_prepare_the_runtime_helper_uses_the_local_tpu(machine):
    in_colab(machine).add_file("dev/vfio/0")
    todo = colab.plan(machine.probe(), is_installed=nothing_installed)
    machine.env.update(todo.environment)
    choice = choose("auto", probe=machine.probe(), list_gpus=list)
    assert choice.kind == "TPU" and choice.tpu_address == "local"


def test_colab_tpu_vm_with_tensorflow_already_installed_installs_nothing(machine):
    in_colab(machine).add_pci_device("0000:00:05.0", "0x1ae0", "0x0063")
    todo = colab.plan(machine.probe(), is_installed=everything_installed)
    assert todo.installs == () and todo.environment == {"TPU_NAME": "local"}


def test_a_tpu_runtime_with_another_tensorflow_gets_one_line_naming_the_known_failure(machine):
    in_colab(machine).add_file("dev/accel0")
    pinned = colab.plan(
        machine.probe(),
        is_installed=everything_installed,
        tensorflow_version=lambda: colab.TENSORFLOW_VERSION,
    )
    assert pinned.notes[0].endswith(f"TensorFlow {colab.TENSORFLOW_VERSION} is already installed.")
    other = colab.plan(
        machine.probe(), is_installed=everything_installed, tensorflow_version=lambda: "2.19.0"
    )
    (note,) = other.notes
    assert other.installs == () and "\n" not in note
    assert "TensorFlow 2.19.0 is installed, not the pinned tensorflow-tpu 2.20.0" in note
    assert "tensorflow/tensorflow#96203" in note and "pip uninstall" in note


def test_colab_cpu_or_gpu_runtime_uses_colabs_tensorflow(machine):
    todo = colab.plan(in_colab(machine).probe(), is_installed=everything_installed)
    assert todo.installs == () and dict(todo.environment) == {}
    assert "using Colab's TensorFlow" in todo.notes[0]


def test_colab_cpu_runtime_installs_only_what_is_missing(machine):
    todo = colab.plan(
        in_colab(machine).probe(), is_installed=lambda module: module != "tensorboard"
    )
    assert todo.installs == (("tensorboard",),)


def test_the_embeddings_notebook_adds_keras_rs_where_it_is_missing(machine):
    cpu = colab.plan(
        in_colab(machine).probe(), embeddings=True, is_installed=lambda module: module != "keras_rs"
    )
    assert cpu.installs == (("keras-rs",),)
    machine.add_file("dev/accel0")
    tpu = colab.plan(machine.probe(), embeddings=True, is_installed=nothing_installed)
    assert tpu.installs == (colab.TPU_PACKAGES, ("matplotlib", "tensorboard", "keras-rs"))
    present = colab.plan(machine.probe(), embeddings=True, is_installed=everything_installed)
    assert present.installs == ()


def test_tf1_notebook_on_colab_installs_nothing_and_says_why(machine):
    in_colab(machine).add_file("dev/accel0")
    todo = colab.plan(machine.probe(), tf1=True, is_installed=nothing_installed)
    assert todo.installs == ()
    assert "cannot run on Colab" in todo.notes[0] and "TensorFlow 2.15" in todo.notes[0]
    assert "Python 3.11" in todo.notes[0] and "make run" in todo.notes[0]


def test_the_jax_notebook_on_a_colab_tpu_gets_jax_for_the_tpu_keras_3_and_tensorflow_cpu(machine):
    in_colab(machine).add_file("dev/vfio/0")
    todo = colab.plan(machine.probe(), jax=True, is_installed=nothing_installed)
    assert todo.installs == (
        (
            "jax[tpu]",
            "keras>=3",
            f"tensorflow-cpu=={colab.TENSORFLOW_VERSION}",
            "matplotlib",
            "tensorboard",
        ),
    )
    assert dict(todo.environment) == {} and "/dev/vfio/0" in todo.notes[0]


def test_the_jax_notebook_on_a_colab_tpu_with_jax_installs_only_tensorflow_cpu(machine):
    in_colab(machine).add_file("dev/accel0")
    todo = colab.plan(
        machine.probe(),
        jax=True,
        is_installed=lambda module: module != "tensorflow",
        keras_major=lambda: 3,
    )
    assert todo.installs == ((f"tensorflow-cpu=={colab.TENSORFLOW_VERSION}",),)


def test_the_jax_notebook_replaces_keras_2_and_installs_nothing_else_where_all_is_there(machine):
    in_colab(machine)
    keras_2 = colab.plan(
        machine.probe(), jax=True, is_installed=everything_installed, keras_major=lambda: 2
    )
    assert keras_2.installs == (("keras>=3",),)
    keras_3 = colab.plan(
        machine.probe(), jax=True, is_installed=everything_installed, keras_major=lambda: 3
    )
    assert keras_3.installs == () and "all present" in keras_3.notes[0]


def test_the_colab_lane_pins_the_tensorflow_that_the_colab_setup_installs():
    requirements = (ROOT / "requirements-colab.txt").read_text()
    pins = re.findall(r"^tensorflow==(\S+)$", requirements, flags=re.MULTILINE)
    assert pins == [colab.TENSORFLOW_VERSION], (
        f"requirements-colab.txt pins tensorflow {pins}, helpers.colab installs "
        f"tensorflow-tpu=={colab.TENSORFLOW_VERSION}: regenerate requirements-colab.txt "
        "(change requirements-colab.in, then `make lock`)"
    )
    assert colab.TPU_PACKAGES[0] == f"tensorflow-tpu=={colab.TENSORFLOW_VERSION}"
    unpinned = [
        line
        for line in requirements.splitlines()
        if line.strip() and not line.lstrip().startswith("#") and "==" not in line
    ]
    assert not unpinned, f"requirements-colab.txt must pin every package: {unpinned}"


def release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def test_each_lane_runs_the_tensorflow_it_stands_for():
    """Reference: requirements.txt's pin; Colab: what the set-up installs; current: newer."""
    installed = version("tensorflow")
    if LANE == "reference":
        pinned = re.search(r"^tensorflow==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
        assert pinned and installed == pinned.group(1)
    elif LANE == "colab":
        assert installed == colab.TENSORFLOW_VERSION
    else:
        assert release(installed) >= release(colab.TENSORFLOW_VERSION), installed
