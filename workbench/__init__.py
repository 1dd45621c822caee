"""The workbench: the collection's migration method applied to the reader's own model.

The notebooks teach why each step matters; this package is what a reader imports to do the
steps on their own `model_fn` and Keras model, with every decision reported (from a shell:
`tpu-workbench record|map|compare --help`, or `python -m workbench`). It imports nothing of
the notebooks' `helpers` and needs no package beyond the TensorFlow already installed, so it
installs into the reader's own TF1 environment (docs/workbench.md):

- **Record the TF1 baseline** (`record_baseline`, TensorFlow 2.15 with tensorflow-estimator):
  train the `model_fn` with `TPUEstimator(use_tpu=False)` and keep each step's loss, learning
  rate and gradient norm (found in the graph: no `host_call` needed), the batches, the seeds
  of its dropout ops, `model.ckpt-0` and the last checkpoint, in a folder that
  `load_baseline` reads in any lane. `Baseline.run()` is the baseline as `compare_runs`
  takes it; `TF1Dropout` and `TF1DropConnect` draw the baseline's masks
  (`Baseline.dropout_seeds()`) in the Keras model, so that runs with them on compare.
- **Carry the checkpoint over** (`map_checkpoint`): match each variable of a TF1 checkpoint,
  optimizer slots included, to the Keras model by the reader's rules, by name, by creation
  order and by shape; `Mapping.report()` lists every TF1 and TF2 variable as matched,
  unmatched, ambiguous or skipped, and `Mapping.assign()` refuses in one line while anything
  is left unaccounted for. Start TF2 from TF1's `model.ckpt-0` so both runs start equal.
- **Catch swapped same-shape layers** (`check_swaps`): names and shapes accept two 3x3x8x8
  convolutions either way round; the loss of the first batch at `model.ckpt-0` does not. It
  tries the mapping and each exchange of two same-shape layers (or every way to resolve the
  ambiguous ones), keeps the one assignment that reproduces TF1's first loss, and says so.
- **Compare one step at a time** (`compare_synchronized`): each TF2 step starts from TF1's
  state after the steps before it (the baseline keeps it), so no difference compounds: a
  correct port stays within one step's rounding however chaotic the model, and a mistake
  shows at the first step where it acts, with the variables that part there.
- **Compare step by step** (`compare_runs`): the first step where the runs part, the worst
  element of the final weights, and a verdict. A difference at step 0 is real (nothing had
  trained yet), unless the two sides multiply matrices at different precisions; a later one
  may be rounding that training amplified, which `amplified_rounding` (notebook 10's one-ulp
  check) tells apart. `likely_causes` lists the causes of notebook 04's checklist whose
  observation applies, in the checklist's fixed order.
  Compare the model's weights alone with `mapping.tf2_values(weights_only=True)` against
  `read_checkpoint(tf1_final_checkpoint, names=mapping.weight_names())`.
"""

import importlib
from typing import Any

# Name -> the module that defines it. They are imported when first used (PEP 562), so that
# `import workbench.errors` (which the notebooks' helpers do) needs no numpy or TensorFlow.
_EXPORTS = {
    "AMPLIFIED_ROUNDING": "compare",
    "CHECKLIST": "compare",
    "IDENTICAL": "compare",
    "REAL": "compare",
    "UNDECIDED": "compare",
    "WITHIN": "compare",
    "Cause": "compare",
    "CompareError": "compare",
    "Comparison": "compare",
    "Parting": "compare",
    "RoundingCheck": "compare",
    "Worst": "compare",
    "amplified_rounding": "compare",
    "compare_runs": "compare",
    "likely_causes": "compare",
    "AMBIGUOUS": "mapping",
    "MATCHED": "mapping",
    "SKIPPED": "mapping",
    "UNMATCHED": "mapping",
    "Mapping": "mapping",
    "MappingError": "mapping",
    "Row": "mapping",
    "map_checkpoint": "mapping",
    "read_checkpoint": "mapping",
    "Baseline": "record",
    "RecordError": "record",
    "load_baseline": "record",
    "per_replica_batch": "record",
    "record_baseline": "record",
    "CONFIRMED": "swaps",
    "NO_MATCH": "swaps",
    "RESOLVED": "swaps",
    "SWAPPED": "swaps",
    "UNDECIDED_ORDER": "swaps",
    "SwapCheck": "swaps",
    "Trial": "swaps",
    "check_swaps": "swaps",
    "Synchronized": "synchronized",
    "SynchronizedError": "synchronized",
    "compare_synchronized": "synchronized",
    "gradient_bound": "synchronized",
    "one_step_bound": "synchronized",
    "TF1Dropout": "dropout",
    "TF1DropConnect": "dropout",
    "tf1_uniform_rows": "dropout",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"workbench.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "AMBIGUOUS",
    "AMPLIFIED_ROUNDING",
    "CHECKLIST",
    "CONFIRMED",
    "IDENTICAL",
    "MATCHED",
    "NO_MATCH",
    "REAL",
    "RESOLVED",
    "SKIPPED",
    "SWAPPED",
    "UNDECIDED",
    "UNDECIDED_ORDER",
    "UNMATCHED",
    "WITHIN",
    "Baseline",
    "Cause",
    "CompareError",
    "Comparison",
    "Mapping",
    "MappingError",
    "Parting",
    "RecordError",
    "RoundingCheck",
    "Row",
    "SwapCheck",
    "Synchronized",
    "SynchronizedError",
    "TF1DropConnect",
    "TF1Dropout",
    "Trial",
    "Worst",
    "amplified_rounding",
    "check_swaps",
    "compare_runs",
    "compare_synchronized",
    "gradient_bound",
    "likely_causes",
    "load_baseline",
    "map_checkpoint",
    "one_step_bound",
    "per_replica_batch",
    "read_checkpoint",
    "record_baseline",
    "tf1_uniform_rows",
]
