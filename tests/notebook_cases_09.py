"""papermill cases for 09_real_model_fn (same `Case` as notebook_cases.CASES).

Every good run asserts, inside the notebook, that the Keras preprocessing layers give the
dense inputs of the feature columns, that `Model.fit` with the `train_step` / `test_step`
override agrees with the stored TPUEstimator run (every step's loss, the evaluations every 20
steps, the final weights, within 1e-6 on a CPU with one replica or several), that the model
warm-started from the TF1 checkpoint continues as the TF1 warm start did, and that the two
SavedModels serve the same predictions on raw features. In the reference lane the
TensorFlow 1 cells run too, and the notebook checks their run against the stored one.
"""

from __future__ import annotations

from notebook_cases import stored_run_cases

NOTEBOOK = "09_real_model_fn.ipynb"

CASES_09 = stored_run_cases(NOTEBOOK, live_tf1={"seed": 7})
