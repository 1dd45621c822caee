"""papermill cases for 10_conv_batch_norm (same `Case` as notebook_cases.CASES).

Every good run asserts, inside the notebook, that `Model.fit` and the custom loop, started
from the TPUEstimator run's `model.ckpt-0`, agree with it (every step's loss within 1e-5,
the weights and their moving averages within 1e-4, the batch-norm moving statistics within
1e-4 relative, the evaluation within 1e-5 and the served probabilities within 1e-4), that
the swapped-layer mapping is caught, and that each mismatch it measures (per-replica and
synchronized batch norm, Keras' momentum) costs what it says; the workbench's mapping equals
the hand-made one, its swap check confirms it, and its likely causes name the momentum rule
and the batch-norm statistics for those two changes. In the reference lane the
TensorFlow 1 cells run too, and the notebook checks their run against the stored one
(fixtures/tf1_conv).
"""

from __future__ import annotations

from notebook_cases import stored_run_cases

NOTEBOOK = "10_conv_batch_norm.ipynb"

# The reference lane's 8-replica run takes another seed: its live TF1 run starts from other
# initial weights (not compared with the stored run, made at 42), and every parity bound and
# demonstration must hold there too. The defaults are 2 replicas (tests/test_notebooks.py,
# DEFAULTS_OF), so the current lane runs 4.
CASES_10 = stored_run_cases(NOTEBOOK, live_tf1={"seed": 7}, current_replicas=4)
