"""The workbench: the collection's migration method applied to the reader's own model.

The notebooks teach why each step matters; this package is what a reader imports to do the
steps on their own `model_fn` and Keras model, with every decision reported:

- **Carry the checkpoint over** (`map_checkpoint`): match each variable of a TF1 checkpoint,
  optimizer slots included, to the Keras model by the reader's rules, by name, by creation
  order and by shape; `Mapping.report()` lists every TF1 and TF2 variable as matched,
  unmatched, ambiguous or skipped, and `Mapping.assign()` refuses in one line while anything
  is left unaccounted for. Start TF2 from TF1's `model.ckpt-0` so both runs start equal.
- **Compare step by step** (`compare_runs`): the first step where the runs part, the worst
  element of the final weights, and a verdict. A difference at step 0 is real (nothing had
  trained yet), unless the two sides multiply matrices at different precisions; a later one
  may be rounding that training amplified, which `amplified_rounding` (notebook 10's one-ulp
  check) tells apart. `likely_causes` ranks notebook 04's checklist by what was observed.
  Compare the model's weights alone with `mapping.tf2_values(weights_only=True)` against
  `read_checkpoint(tf1_final_checkpoint, names=mapping.weight_names())`.

The workbench does not record the TF1 baseline itself: log each step's loss, learning rate
and gradient norm in the TF1 run as notebooks 01 and 10 do, and pass them to `compare_runs`.
"""

from workbench.compare import (
    AMPLIFIED_ROUNDING,
    CHECKLIST,
    IDENTICAL,
    REAL,
    UNDECIDED,
    WITHIN,
    Cause,
    CompareError,
    Comparison,
    Parting,
    RoundingCheck,
    Worst,
    amplified_rounding,
    compare_runs,
    likely_causes,
)
from workbench.mapping import (
    AMBIGUOUS,
    MATCHED,
    SKIPPED,
    UNMATCHED,
    Mapping,
    MappingError,
    Row,
    map_checkpoint,
    read_checkpoint,
)

__all__ = [
    "AMBIGUOUS",
    "AMPLIFIED_ROUNDING",
    "CHECKLIST",
    "IDENTICAL",
    "MATCHED",
    "REAL",
    "SKIPPED",
    "UNDECIDED",
    "UNMATCHED",
    "WITHIN",
    "Cause",
    "CompareError",
    "Comparison",
    "Mapping",
    "MappingError",
    "Parting",
    "RoundingCheck",
    "Row",
    "Worst",
    "amplified_rounding",
    "compare_runs",
    "likely_causes",
    "map_checkpoint",
    "read_checkpoint",
]
