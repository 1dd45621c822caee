"""Plots the notebooks show; kept here so the cells stay about TensorFlow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


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
