"""papermill cases for 04_verify_migration (same `Case` as notebook_cases.CASES).

Every good run asserts, inside the notebook, that Model.fit and the custom loop agree with
notebook 01's stored TPUEstimator run (within 1e-6 on a CPU, one replica or several), that a
checkpoint carried over with its optimizer slots continues within that tolerance (mapped by
hand and by the workbench, whose likely causes name the optimizer's settings for the run
without its slots), and that
the two SavedModels serve the same predictions. The TensorFlow 1 side is the stored run in
every environment, so no case needs TPUEstimator.
"""

from __future__ import annotations

from notebook_cases import COLAB, CURRENT, REFERENCE, Case

NOTEBOOK = "04_verify_migration.ipynb"

CASES_04 = [
    Case(NOTEBOOK, lanes=COLAB),
    Case(NOTEBOOK, {"virtual_replicas": 1}),
    Case(NOTEBOOK, {"virtual_replicas": 8, "seed": 7}, lanes=REFERENCE),
    Case(NOTEBOOK, {"virtual_replicas": 4, "seed": 3}, lanes=CURRENT),
    Case(
        NOTEBOOK,
        {"virtual_replicas": 3},
        "ParameterError",
        "virtual_replicas=3 (int): expected one of 1, 2, 4, 8",
    ),
    Case(NOTEBOOK, {"seed": -1}, "ParameterError", "seed=-1 (int): expected"),
]
