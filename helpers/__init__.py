"""Plumbing for the TPUEstimator -> TPUStrategy migration notebooks.

The notebooks teach the TensorFlow APIs; this package only carries what would distract from
them: choosing and building a distribution strategy for the machine at hand, checking
papermill parameters, reproducibility and log hygiene. Nothing here imports TensorFlow at
import time, so `helpers.quiet` can silence TensorFlow before it is first imported.
"""

__all__ = ["environment", "errors", "params", "quiet", "reproducibility", "runtime"]
