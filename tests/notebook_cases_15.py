"""papermill cases for 15_transformer_classifier (same `Case` as notebook_cases.CASES).

Every good run asserts, inside the notebook, that `Model.fit` and a custom loop, started from
TF1's `model.ckpt-0` with dropout on (TF1's masks, cut per replica), agree with the
TPUEstimator run on every step's loss, learning rate and gradient norm, on the final weights
and `adam_m`/`adam_v` slots, and on the evaluation, on any number of replicas; that the
schedule reproduces the rates the TF1 hook recorded; that the clip acts on some steps and not
others; that the sparse gradient's norm over its rows differs from the dense gradient's; and
that Keras' default layer-norm epsilon, Keras `Dropout` and Keras `AdamW` move the losses past
their bound, and clipping each replica's gradient does so on several replicas only. In the
reference lane the TensorFlow 1 cells run too, and the notebook checks their run against the
stored one (fixtures/tf1_transformer).
"""

from __future__ import annotations

from notebook_cases import stored_run_cases

NOTEBOOK = "15_transformer_classifier.ipynb"

CASES_15 = stored_run_cases(NOTEBOOK)
