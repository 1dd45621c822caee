"""Plumbing for the TPUEstimator -> TPUStrategy migration notebooks.

The notebooks teach the TensorFlow APIs in their cells; this package carries only what a
reader would not copy: finding the runtime without initialising TensorFlow's devices,
checking papermill parameters, the Colab install, the shared regression data, the stored
TensorFlow 1 run, tables, plots, summary files, quiet logs and the launcher of notebook 07's
worker processes. Nothing here imports TensorFlow at import time, so `helpers.quiet` can
silence TensorFlow before its first import.
"""
