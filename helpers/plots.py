"""Plots the notebooks show; kept here so the cells stay about TensorFlow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def plot_losses(curves: Mapping[str, Sequence[float]], title: str, log_scale: bool = True):
    """One line per training run: loss against step (step 0 is the first batch)."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 3.5), dpi=100)
    for label, losses in curves.items():
        axes.plot(range(len(losses)), losses, label=label, linewidth=1.5)
    axes.set_xlabel("training step")
    axes.set_ylabel("loss (mean squared error)")
    if log_scale:
        axes.set_yscale("log")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    plt.show()


def plot_differences(curves: Mapping[str, Sequence[float]], reference: str) -> None:
    """|loss - reference loss| per step for every other curve; zeros are said, not hidden."""
    import matplotlib.pyplot as plt

    base = np.asarray(curves[reference], dtype=np.float64)
    figure, axes = plt.subplots(figsize=(7, 3), dpi=100)
    differences = {}
    for label, values in curves.items():
        if label != reference:
            n = min(len(base), len(values))
            differences[label] = np.abs(np.asarray(values[:n], dtype=np.float64) - base[:n])
    nonzero = any(np.any(d > 0) for d in differences.values())
    markers = ("o", "x", "+", "s")  # distinct, so that coinciding curves stay visible
    for number, (label, difference) in enumerate(differences.items()):
        shown = np.where(difference > 0, difference, np.nan) if nonzero else difference
        marker = markers[number % len(markers)]
        axes.plot(
            range(len(difference)), shown, marker, markersize=5, fillstyle="none", label=label
        )
    if nonzero:
        axes.set_yscale("log")
        title = f"|loss - {reference} loss| per step (steps with no difference are not drawn)"
    else:
        title = f"|loss - {reference} loss| per step: zero at every step"
    axes.set_xlabel("training step")
    axes.set_ylabel("absolute difference")
    axes.set_title(title, fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    plt.show()
