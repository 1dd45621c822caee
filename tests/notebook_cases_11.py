"""papermill cases for 11_keras3_jax (same `Case` as notebook_cases.CASES).

The notebook needs Keras 3 and JAX, which only the current lane has; it is recorded there
(tools.project.recording_lane) and nbval runs its defaults (4 devices) there (`make
test-nbval-current`). Its good cases run in the current lane, on 1, 2 and 8 devices; every good
run asserts, inside the notebook, that `Model.fit` and the JAX custom loop agree with the
stored TPUEstimator run (every step's loss and the final weights within 1e-6), that the
model-parallel run agrees with the replicated one and, on more than one device, adds its split
product in one all-reduce, that the resumed run ends where TPUEstimator's resumed run ended,
and that the served predictions agree with TPUEstimator's SavedModel's. In the reference lane
(Keras 2, no JAX) and the Colab lane (TensorFlow's Keras 3, no JAX) it stops at the runtime
cell with one line saying what is missing. Bad parameters stop in the validation cell, before
that, so they run in the reference lane.
"""

from __future__ import annotations

from notebook_cases import CURRENT, Case

NOTEBOOK = "11_keras3_jax.ipynb"
NEEDS_JAX = "this notebook needs Keras 3 and JAX"

CASES_11 = [
    Case(NOTEBOOK, {}, "BackendUnavailableError", NEEDS_JAX, lanes=("reference", "colab")),
    Case(NOTEBOOK, {"virtual_replicas": 1, "steps_per_call": 100}, lanes=CURRENT),
    Case(NOTEBOOK, {"virtual_replicas": 2, "steps_per_call": 4, "seed": 7}, lanes=CURRENT),
    Case(NOTEBOOK, {"virtual_replicas": 8, "steps_per_call": 25, "seed": 3}, lanes=CURRENT),
    Case(
        NOTEBOOK,
        {"virtual_replicas": 3},
        "ParameterError",
        "virtual_replicas=3 (int): expected one of 1, 2, 4, 8",
    ),
    Case(
        NOTEBOOK,
        {"steps_per_call": 3},
        "ParameterError",
        "steps_per_call=3 (int): expected one of 1, 2, 4, 5, 10, 20, 25, 50, 100",
    ),
    Case(
        NOTEBOOK,
        {"accelerator": "tpu"},
        "RuntimeUnavailableError",
        "accelerator='tpu' was requested but this machine has no TPU",
    ),
]
