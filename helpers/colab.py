"""Prepare a Colab runtime for a notebook: install only what that runtime lacks.

The first cell of every notebook installs this package from the collection's repository and
calls `prepare()`; outside Colab the cell does nothing. What Colab needs differs by runtime:

- TPU runtimes are TPU VMs with no TensorFlow installed: they get the TPU build of
  TensorFlow with a libtpu in the range its wheel declares (pip takes the newest in it), and
  TPU_NAME=local so that `runtime.choose` and `TPUClusterResolver` use the TPU attached to the VM.
- CPU and GPU runtimes come with TensorFlow: the notebook uses it, and only missing packages
  are installed.
- The Keras 3 on JAX notebook (`jax=True`) trains on JAX and uses TensorFlow only to read
  the TF1 checkpoint and SavedModel and to serve its export: what is missing of JAX (with its
  TPU library on a TPU runtime), Keras 3 and TensorFlow (as `tensorflow-cpu`, where none is
  installed) is installed. This path has not run on a Colab runtime.
- The TPU embeddings notebook (`embeddings=True`) also needs Keras RS, which Colab's images
  lack: it is installed like the other missing packages, on TPU and CPU/GPU runtimes alike.
- The TF1 notebook cannot run on Colab at all (TensorFlow 2.15, the last release with
  `tf.estimator`, has no wheels for Colab's Python): nothing is installed, and the reason is
  printed; the notebook's next cell stops with the same explanation.

`plan()` decides without side effects, so tests can check each case on a faked runtime;
`prepare()` carries the plan out.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from helpers.environment import Probe, find_tpu

# The TensorFlow a Colab TPU runtime gets: the newest tensorflow-tpu on PyPI, which is also
# the release Colab's CPU/GPU images ship. The test suite's Colab lane pins exactly this
# version (requirements-colab.txt; a test fails if the two disagree).
TENSORFLOW_VERSION = "2.20.0"
# tensorflow-tpu and the libtpu range its wheel declares (~=0.0.14).
TPU_PACKAGES = (f"tensorflow-tpu=={TENSORFLOW_VERSION}", "libtpu~=0.0.14")
# What the TF2 notebooks import besides TensorFlow (Colab's CPU/GPU images have them all).
NOTEBOOK_PACKAGES = {"matplotlib": "matplotlib", "tensorboard": "tensorboard"}
# The Keras 3 on JAX notebook: JAX for the TPU (jax[tpu] brings libtpu), Keras 3, and the CPU
# build of TensorFlow where none is installed: TensorFlow only reads files and serves there.
# The TPU embeddings notebook on Keras 3 (every Colab runtime): Keras RS' DistributedEmbedding.
EMBEDDING_PACKAGES = {"keras_rs": "keras-rs"}
JAX_TPU_PACKAGE = "jax[tpu]"
KERAS_3_PACKAGE = "keras>=3"
TENSORFLOW_CPU_PACKAGE = f"tensorflow-cpu=={TENSORFLOW_VERSION}"


@dataclass(frozen=True)
class Plan:
    """What `prepare()` will do: pip installs, environment variables, and why."""

    installs: tuple[tuple[str, ...], ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def pip_commands(self) -> list[list[str]]:
        return [
            [sys.executable, "-m", "pip", "install", "--quiet", *pkgs] for pkgs in self.installs
        ]


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def plan(
    probe: Probe | None = None,
    *,
    tf1: bool = False,
    jax: bool = False,
    embeddings: bool = False,
    is_installed: Callable[[str], bool] = installed,
    keras_major: Callable[[], int | None] | None = None,
    tensorflow_version: Callable[[], str | None] | None = None,
) -> Plan:
    """Decide what this runtime needs for a TF2 notebook (with tf1=True the TF1 one, with
    jax=True the Keras 3 on JAX one, with embeddings=True the TPU embeddings one)."""
    probe = probe or Probe()
    if not probe.in_colab():
        return Plan(notes=("Not running in Colab: nothing to install.",))
    if jax:
        return _jax_plan(probe, is_installed, keras_major or installed_keras_major)
    if tf1:
        python = ".".join(map(str, sys.version_info[:2]))
        return Plan(
            notes=(
                f"This TF1 notebook cannot run on Colab: it needs TensorFlow 2.15 (the last "
                f"release with tf.estimator), which has no wheels for Colab's Python {python}. "
                "Its recorded outputs show a run with TensorFlow 2.15; to run it yourself, use "
                "Python 3.11 and the README's `make run`, which installs that TensorFlow.",
            )
        )
    tpu = find_tpu(probe)
    wanted = {**NOTEBOOK_PACKAGES, **(EMBEDDING_PACKAGES if embeddings else {})}
    missing = tuple(pkg for module, pkg in wanted.items() if not is_installed(module))
    if tpu is not None and tpu.resolver_arg == "local":
        installs = (TPU_PACKAGES,) if not is_installed("tensorflow") else ()
        note = (
            f"Colab TPU runtime ({tpu.evidence}): installing {' and '.join(TPU_PACKAGES)}."
            if installs
            else _installed_tpu_note(tpu.evidence, (tensorflow_version or installed_tensorflow)())
        )
        if missing:
            installs = (*installs, missing)
        return Plan(installs, {"TPU_NAME": "local"}, (note,))
    if not is_installed("tensorflow"):
        missing = ("tensorflow", *missing)
    note = (
        f"Colab CPU/GPU runtime: installing {', '.join(missing)}."
        if missing
        else "Colab CPU/GPU runtime: using Colab's TensorFlow."
    )
    return Plan((missing,) if missing else (), {}, (note,))


def installed_tensorflow() -> str | None:
    """The installed TensorFlow's version, by its distribution (no import: it is slow)."""
    from importlib.metadata import PackageNotFoundError, version

    for distribution in ("tensorflow-tpu", "tensorflow", "tensorflow-cpu"):
        try:
            return version(distribution)
        except PackageNotFoundError:
            continue
    return None


def _installed_tpu_note(evidence: str, found: str | None) -> str:
    """A TPU runtime that has a TensorFlow already: fine if it is the pinned one, else why not."""
    if found == TENSORFLOW_VERSION:
        return f"Colab TPU runtime ({evidence}): TensorFlow {found} is already installed."
    return (
        f"Colab TPU runtime ({evidence}): TensorFlow {found} is installed, not the pinned "
        f"tensorflow-tpu {TENSORFLOW_VERSION}; 2.18 and 2.19 fail on these TPU VMs with "
        "'No OpKernel was registered to support Op ConfigureDistributedTPU' "
        "(tensorflow/tensorflow#96203): pip uninstall it, restart the runtime and run this "
        "cell again to install the pinned one."
    )


def installed_keras_major() -> int | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("keras").split(".")[0])
    except PackageNotFoundError:
        return None


def _jax_plan(
    probe: Probe, is_installed: Callable[[str], bool], keras_major: Callable[[], int | None]
) -> Plan:
    tpu = find_tpu(probe)
    on_tpu = tpu is not None and tpu.resolver_arg == "local"
    wanted = [
        ("jax", JAX_TPU_PACKAGE if on_tpu else "jax", is_installed("jax")),
        ("keras", KERAS_3_PACKAGE, is_installed("keras") and (keras_major() or 0) >= 3),
        ("tensorflow", TENSORFLOW_CPU_PACKAGE, is_installed("tensorflow")),
        *((module, pkg, is_installed(module)) for module, pkg in NOTEBOOK_PACKAGES.items()),
    ]
    missing = tuple(pkg for _, pkg, present in wanted if not present)
    where = f"Colab TPU runtime ({tpu.evidence})" if on_tpu else "Colab CPU/GPU runtime"
    note = f"{where}: installing {', '.join(missing)}." if missing else f"{where}: all present."
    return Plan((missing,) if missing else (), {}, (note,))


def prepare(*, tf1: bool = False, jax: bool = False, embeddings: bool = False) -> Plan:
    """Carry out `plan()`: print why, run the installs, set the environment."""
    todo = plan(tf1=tf1, jax=jax, embeddings=embeddings)
    for note in todo.notes:
        print(note)
    for command in todo.pip_commands():
        subprocess.run(command, check=True)
    os.environ.update(todo.environment)
    return todo
