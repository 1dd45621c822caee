"""papermill cases for 04_verify_migration (same `Case` as notebook_cases.CASES).

Every good run asserts, inside the notebook, that TPUEstimator, Model.fit and the custom loop
agree (bit-identical on one CPU replica against the live TF1 run, within 1e-6 on several
replicas or against the recording), that a checkpoint carried over with its slots continues
within that tolerance, and that the two SavedModels serve the same predictions. In the
reference lane TensorFlow 1 trains live and must agree with the recorded fixture; in the
current and Colab lanes the fixture stands in for it, which only works for the recorded 100
steps.
"""

from __future__ import annotations

from notebook_cases import COLAB, CURRENT, REFERENCE, Case

NOTEBOOK = "04_verify_migration.ipynb"

CASES_04 = [
    Case(NOTEBOOK, lanes=COLAB),
    Case(NOTEBOOK, {"virtual_replicas": 1}),
    Case(NOTEBOOK, {"virtual_replicas": 2, "steps": 120, "seed": 7}, lanes=REFERENCE),
    Case(NOTEBOOK, {"virtual_replicas": 8}),
    Case(
        NOTEBOOK,
        {"virtual_replicas": 3},
        "ParameterError",
        "virtual_replicas=3 (int): expected one of 1, 2, 4, 8",
    ),
    Case(
        NOTEBOOK,
        {"steps": 0},
        "ParameterError",
        "steps=0 (int): expected an integer from 1 to 10000",
    ),
    Case(
        NOTEBOOK,
        {"steps": 50},
        "ParameterError",
        "steps=50: this TensorFlow has no TPUEstimator, so the TensorFlow 1 side is the "
        "recorded run, which has steps=100",
        lanes=CURRENT,
    ),
]
