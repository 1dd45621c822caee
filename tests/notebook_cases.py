"""The papermill matrix: which parameters each notebook runs with, and which must fail how.

Good cases must run to the end, as Colab's "Run all" runs them (no cell may end in an error,
whatever its tags), with the notebook's own assertions holding. Bad cases must stop with one
readable error (no stack trace) whose message contains the given fragment.

Lanes: good runs go to the reference lane (TF 2.15, Keras 2) and the current lane (the
newest TF, Keras 3). The defaults are 4 replicas, which nbval runs in the reference lane and
the Colab lane (Keras 3) runs too; Keras 3 also runs 1 replica, and so does Keras 2 except
in the stored-run notebooks 09 to 15 (`stored_run_cases` says why), and each generation
runs one other count: 8 in Keras 2, whose tracing over many replicas costs about half of
Keras 3's, and 2 in Keras 3, so that 1, 2, 4 and 8 all run, each count other than 1 and 4
once (02, 04, 10 and 16 default to 2 and run 4 in Keras 3 instead; 16 also runs 8 there),
with the other parameters' variations, another seed among them, folded into those runs.
Bad parameters stop in `helpers.parameters` before any TensorFlow call, so
they run in the reference lane only (the unit tests of `helpers.parameters` and the one-line
rendering test run in every lane); a case whose error depends on the TensorFlow version
names its lanes. The Colab lane (the TF that helpers.colab installs, Keras 3 like the current
lane) runs each notebook once at its defaults, as a Colab user opens it. The Keras 3 on JAX
notebook is recorded in the current lane, where nbval runs its defaults and its good cases
run (notebook_cases_11).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

REFERENCE = ("reference",)
CURRENT = ("current",)
COLAB = ("colab",)
NO_ESTIMATOR = ("current", "colab")  # TensorFlow 2.16 and newer: no tf.estimator


@dataclass(frozen=True)
class Case:
    notebook: str
    parameters: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # exception class name expected, None for a passing run
    message: str = ""  # fragment the error message must contain
    lanes: tuple[str, ...] = ()  # empty: good runs in both full lanes, bad ones in the reference

    def __post_init__(self) -> None:
        if not self.lanes:
            default = ("reference", "current") if self.error is None else REFERENCE
            object.__setattr__(self, "lanes", default)

    @property
    def id(self) -> str:
        values = ",".join(f"{key}={value}" for key, value in self.parameters.items())
        return f"{self.notebook.removesuffix('.ipynb')}[{values}]"


CASES = [
    Case("00_setup.ipynb", lanes=COLAB),
    Case("00_setup.ipynb", {"virtual_replicas": 1, "global_batch": 3}),
    Case("00_setup.ipynb", {"virtual_replicas": 8, "global_batch": 16, "seed": 7}, lanes=REFERENCE),
    Case("00_setup.ipynb", {"virtual_replicas": 2, "global_batch": 4, "seed": 3}, lanes=CURRENT),
    Case(
        "00_setup.ipynb",
        {"virtual_replicas": 0},
        "ParameterError",
        "virtual_replicas=0 (int): expected an integer from 1 to 64",
    ),
    Case("00_setup.ipynb", {"accelerator": "quantum"}, "ParameterError", "accelerator='quantum'"),
    Case(
        "00_setup.ipynb",
        {"global_batch": 6},
        "ParameterError",
        "global_batch=6 does not divide across 4 replicas",
    ),
    Case(
        "00_setup.ipynb",
        {"accelerator": "tpu"},
        "RuntimeUnavailableError",
        "accelerator='tpu' was requested but this machine has no TPU",
    ),
    Case(
        "01_tpu_estimator.ipynb",
        {"train_steps": 30, "train_batch_size": 16, "iterations_per_loop": 5},
        lanes=REFERENCE,
    ),
    Case(
        "01_tpu_estimator.ipynb",
        {"train_steps": 12, "eval_batch_size": 32, "iterations_per_loop": 1, "seed": 7},
        lanes=REFERENCE,
    ),
    Case(
        "01_tpu_estimator.ipynb",
        {"train_batch_size": 12},
        "ParameterError",
        "train_batch_size=12 does not divide across 8 replicas",
        lanes=REFERENCE,
    ),
    Case(
        "01_tpu_estimator.ipynb",
        {"train_steps": 0},
        "ParameterError",
        "train_steps=0 (int): expected an integer from 1 to 100000",
        lanes=REFERENCE,
    ),
    Case(
        "01_tpu_estimator.ipynb",
        {},
        "EstimatorUnavailableError",
        "which has no tf.compat.v1.estimator (TPUEstimator): TensorFlow removed it in 2.16",
        lanes=NO_ESTIMATOR,
    ),
    Case(
        "01_tpu_estimator.ipynb",
        {"accelerator": "tpu"},
        "RuntimeUnavailableError",
        "accelerator='tpu' was requested but this machine has no TPU",
        lanes=REFERENCE,
    ),
    Case("02_keras_fit.ipynb", lanes=COLAB),
    Case(
        "02_keras_fit.ipynb",
        {"virtual_replicas": 1, "epochs": 2, "steps_per_epoch": 10, "steps_per_execution": 10},
    ),
    Case(
        "02_keras_fit.ipynb",
        {"virtual_replicas": 8, "epochs": 2, "steps_per_epoch": 10, "global_batch": 16},
        lanes=REFERENCE,
    ),
    Case(
        "02_keras_fit.ipynb",
        {"virtual_replicas": 4, "epochs": 2, "steps_per_epoch": 10, "global_batch": 16, "seed": 7},
        lanes=CURRENT,
    ),
    Case(
        "02_keras_fit.ipynb",
        {"global_batch": 5},
        "ParameterError",
        "global_batch=5 does not divide across 2 replicas",
    ),
    Case(
        "02_keras_fit.ipynb",
        {"steps_per_execution": 0},
        "ParameterError",
        "steps_per_execution=0 (int): expected an integer from 1 to 1000",
    ),
    Case("03_custom_loop.ipynb", lanes=COLAB),
    Case("03_custom_loop.ipynb", {"virtual_replicas": 1, "steps": 30, "steps_per_call": 7}),
    Case(
        "03_custom_loop.ipynb",
        {"virtual_replicas": 8, "steps": 24, "steps_per_call": 5, "global_batch": 16, "l2": 0.001},
        lanes=REFERENCE,
    ),
    Case(
        "03_custom_loop.ipynb",
        {"virtual_replicas": 2, "steps": 24, "steps_per_call": 5, "global_batch": 16, "seed": 7},
        lanes=CURRENT,
    ),
    Case(
        "03_custom_loop.ipynb",
        {"virtual_replicas": 4, "global_batch": 6},
        "ParameterError",
        "global_batch=6 does not divide across 4 replicas",
    ),
    Case(
        "03_custom_loop.ipynb",
        {"l2": -1.0},
        "ParameterError",
        "l2=-1.0 (float): expected a number from 0.0 to 1.0",
    ),
    Case("08_tpu_readiness.ipynb", lanes=COLAB),
    Case("08_tpu_readiness.ipynb", {"virtual_replicas": 1, "steps": 10}),
    Case(
        "08_tpu_readiness.ipynb",
        {"virtual_replicas": 8, "global_batch": 16, "steps": 20, "seed": 7},
        lanes=REFERENCE,
    ),
    Case(
        "08_tpu_readiness.ipynb",
        {"virtual_replicas": 2, "global_batch": 16, "steps": 20, "seed": 3},
        lanes=CURRENT,
    ),
    Case(
        "08_tpu_readiness.ipynb",
        {"global_batch": 6},
        "ParameterError",
        "global_batch=6 does not divide across 4 replicas",
    ),
    Case(
        "08_tpu_readiness.ipynb",
        {"steps": 1},
        "ParameterError",
        "steps=1 (int): expected an integer from 2 to 1000",
    ),
    # 07 starts a process per worker (a TensorFlow import each, a minute a run): its defaults
    # run under nbval in the reference lane and here in the Colab lane; three workers in the
    # reference lane, two with other parameters in the current lane.
    Case("07_multi_worker.ipynb", lanes=COLAB),
    Case(
        "07_multi_worker.ipynb", {"num_workers": 3, "global_batch": 12, "steps": 6}, lanes=REFERENCE
    ),
    Case("07_multi_worker.ipynb", {"global_batch": 16, "steps": 6, "seed": 7}, lanes=CURRENT),
    Case(
        "07_multi_worker.ipynb",
        {"global_batch": 9},
        "ParameterError",
        "global_batch=9 does not divide across 2 replicas",
    ),
    Case("06_preemption.ipynb", lanes=COLAB),
    # 06 at its defaults trains both paths (fit and the custom loop) under nbval and in the
    # Colab lane; tests/test_preemption.py kills each path at other steps in both full lanes.
    Case(
        "06_preemption.ipynb",
        {"steps": 12, "checkpoint_interval": 4, "kill_step": 8},
        lanes=REFERENCE,
    ),
    Case(
        "06_preemption.ipynb",
        {"path": "loop", "steps": 10, "checkpoint_interval": 5, "kill_step": 3, "seed": 7},
        lanes=CURRENT,
    ),
    Case(
        "06_preemption.ipynb",
        {"kill_step": 30},
        "ParameterError",
        "kill_step=30 (int): expected an integer from 1 to 28",
    ),
    Case(
        "06_preemption.ipynb",
        {"checkpoint_interval": 7},
        "ParameterError",
        "checkpoint_interval=7 (int): expected one of 1, 2, 3, 5, 6, 10, 15, 30",
    ),
]


def stored_run_cases(
    notebook: str,
    live_tf1: dict[str, Any] | None = None,
    current_replicas: int = 2,
    keras_2_one_replica: bool = False,
) -> list[Case]:
    """The cases of a notebook that compares itself with a stored TPUEstimator run (09, 10, 12,
    13, 14, 15, 16): its defaults (4 replicas; 10 and 16: 2) in the Colab lane; 1 replica in the
    current lane, 8 in the reference lane and 2 in the current one (10 and 16: 4); a replica count
    its global batch does not allow, and a `compare_stored` that is not a bool, both stopped by
    the validation cell.

    One replica runs in Keras 3 only: these notebooks' TensorFlow 1 cells run `TPUEstimator`
    with `use_tpu=False`, on one device whatever `virtual_replicas` is, so the reference lane's
    nbval and 8-replica runs already run them as a 1-replica run would, and the TF2 cells take
    the one-replica path (the default strategy) in the current lane. `keras_2_one_replica`
    runs it in the reference lane too (notebook 16: its port must pass the synchronized
    comparison at 1, 2 and 8 replicas in both Keras generations).

    `live_tf1`: other parameters for the reference lane's 8-replica run, the one lane where
    the TensorFlow 1 cells run live (another seed changes their run; elsewhere the stored
    run stands in, and the seed would change nothing). `current_replicas`: the current lane's
    count, 4 where the defaults are 2 (notebooks 10 and 16)."""
    other = live_tf1 or {}
    one_replica_lanes = ("reference", "current") if keras_2_one_replica else CURRENT
    return [
        Case(notebook, lanes=COLAB),
        Case(notebook, {"virtual_replicas": 1}, lanes=one_replica_lanes),
        Case(notebook, {"virtual_replicas": 8, **other}, lanes=REFERENCE),
        Case(notebook, {"virtual_replicas": current_replicas}, lanes=CURRENT),
        Case(
            notebook,
            {"virtual_replicas": 3},
            "ParameterError",
            "virtual_replicas=3 (int): expected one of 1, 2, 4, 8",
        ),
        Case(notebook, {"compare_stored": "yes"}, "ParameterError", "compare_stored='yes' (str)"),
    ]


from notebook_cases_04 import CASES_04  # noqa: E402 (uses Case from this module)
from notebook_cases_05 import CASES_05  # noqa: E402
from notebook_cases_09 import CASES_09  # noqa: E402
from notebook_cases_10 import CASES_10  # noqa: E402
from notebook_cases_11 import CASES_11  # noqa: E402
from notebook_cases_12 import CASES_12  # noqa: E402
from notebook_cases_13 import CASES_13  # noqa: E402
from notebook_cases_14 import CASES_14  # noqa: E402
from notebook_cases_15 import CASES_15  # noqa: E402
from notebook_cases_16 import CASES_16  # noqa: E402

CASES += (
    CASES_04
    + CASES_05
    + CASES_09
    + CASES_10
    + CASES_11
    + CASES_12
    + CASES_13
    + CASES_14
    + CASES_15
    + CASES_16
)
