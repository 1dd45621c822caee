"""papermill cases for 16_migrate_your_own_model (same `Case` as notebook_cases.CASES).

Every good run asserts, inside the notebook, that the workbench's baseline shows the clip acting
on some steps and not others; that `Model.fit`, started from the baseline's `model.ckpt-0`
through `map_checkpoint` with TF1's dropout masks, is within tolerance of the baseline on every
step and the final weights, from Python and from `python -m workbench compare` (exit code 0);
that the port compared one step at a time from TF1's state (`compare_synchronized`) passes every
step; that each of eight broken migrations parts from it with its cause among `likely_causes`
and no difference found to be amplified rounding (the per-replica batch and the per-replica clip
change nothing on one replica, and are asserted to; at 8 replicas Keras 3's `fit` refuses the
per-replica batch, as asserted); that the five mistakes of the step, one step at a time, part at
the step where each acts (step 1 for the schedule, step 0 for the others), with the named cause
first; and that a run logged once per call of two steps is refused in one line, as are four bad
inputs (six where TPUEstimator records), nothing written or assigned. In the reference lane the
baseline is recorded live and checked against the stored one (fixtures/workbench_tabular).
"""

from __future__ import annotations

from notebook_cases import CURRENT, Case, stored_run_cases

NOTEBOOK = "16_migrate_your_own_model.ipynb"

# The defaults are 2 replicas (nbval in Keras 2, the Colab lane in Keras 3); the port passes
# the synchronized comparison at 1, 2 and 8 replicas in both Keras generations, and 4 runs
# in the current lane.
CASES_16 = [
    *stored_run_cases(NOTEBOOK, current_replicas=4, keras_2_one_replica=True),
    Case(NOTEBOOK, {"virtual_replicas": 8}, lanes=CURRENT),
]
