"""papermill cases for 05_performance (same `Case` as notebook_cases.CASES).

Every good run measures each path with a few short repeats and asserts only wide margins
(100 steps per call at least 1.25 times the steps/s of one on a CPU, for the custom loop, and for
Model.fit where Keras runs it); the TPUEstimator rows, and the check that it runs one step
per session.run off a TPU, need TensorFlow 2.15 (the reference lane). Cases keep steps at
the minimum of 100 so the lanes stay quick; nbval covers the defaults (4 replicas).
"""

from __future__ import annotations

from notebook_cases import COLAB, CURRENT, REFERENCE, Case

NOTEBOOK = "05_performance.ipynb"

CASES_05 = [
    Case(NOTEBOOK, lanes=COLAB),
    Case(NOTEBOOK, {"virtual_replicas": 1, "steps": 100}),
    Case(NOTEBOOK, {"virtual_replicas": 8, "steps": 100, "repeats": 2}, lanes=REFERENCE),
    Case(NOTEBOOK, {"virtual_replicas": 2, "steps": 100, "repeats": 2, "seed": 7}, lanes=CURRENT),
    Case(
        NOTEBOOK,
        {"steps": 150},
        "ParameterError",
        "steps=150 (int): expected a multiple of 100 from 100 to 100000",
    ),
    Case(
        NOTEBOOK,
        {"global_batch": 6},
        "ParameterError",
        "global_batch=6 does not divide across 4 replicas",
    ),
]
