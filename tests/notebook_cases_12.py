"""papermill cases for 12_clipping_and_hooks (same `Case` as notebook_cases.CASES).

Every good run asserts, inside the notebook, that a `train_step` clipping the summed gradient
agrees with the TPUEstimator run (every step's loss within 1e-5, the weights within 1e-4) on
any number of replicas; that `global_clipnorm` agrees with it only in Keras 2 or on one
replica, and that clipping each replica's gradient agrees with `global_clipnorm` only in Keras
3 or on one replica; that Keras' default epsilon moves the losses past their bound; that the
logging callback logs at `LoggingTensorHook`'s steps, `TerminateOnNaN` stops at the step where
TPUEstimator raised, and `CheckpointManager(max_to_keep)` keeps the checkpoints
`keep_checkpoint_max` kept, a resumed `fit` saving first at the step it starts from. In the
reference lane the TensorFlow 1 cells run too, and the notebook checks their run against the
stored one (fixtures/tf1_clipping).
"""

from __future__ import annotations

from notebook_cases import stored_run_cases

NOTEBOOK = "12_clipping_and_hooks.ipynb"

CASES_12 = stored_run_cases(NOTEBOOK)
