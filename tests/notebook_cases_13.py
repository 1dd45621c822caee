"""papermill cases for 13_export_and_serving (same `Case` as notebook_cases.CASES).

Every good run asserts, inside the notebook, that `fit` with an evaluation after every
`STEPS_PER_EVAL` steps matches the TPUEstimator run's evaluation losses within 1e-5, that the
exporting callback keeps the steps `BestExporter`, `LatestExporter` and `FinalExporter` kept,
that the TF2 export's `tf.Example` signatures serve the TF1 export's scores and regression
values within 1e-5, that the TF1 export's signatures carry the classify and regress method
names and the TF2 export's the predict one only, with the same input and output tensors, and
that predictions computed from `Model.predict` match `predict(predict_keys=...,
yield_single_examples=...)`: the keys, the dictionaries and the probabilities. In the reference
lane the TensorFlow 1 cells run too, and the notebook checks their run against the stored one
(fixtures/tf1_export).
"""

from __future__ import annotations

from notebook_cases import stored_run_cases

NOTEBOOK = "13_export_and_serving.ipynb"

CASES_13 = stored_run_cases(NOTEBOOK)
