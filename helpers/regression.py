"""The shared regression problem: the same numbers, in the same order, in every notebook.

To show that a migration kept the results, TF1 and TF2 must train on identical batches from
identical initial weights. The data is generated (nothing is downloaded), from a fixed seed,
and never shuffled: batch k of the training stream is examples [k*B, (k+1)*B) modulo the
set size in every notebook and every lane.
"""

from __future__ import annotations

import numpy as np

TRUE_KERNEL = np.array([[0.3], [-0.2]], dtype=np.float32)
TRUE_BIAS = np.float32(0.1)
# Deliberately far from the true weights, so training has visible work to do.
INITIAL_KERNEL = np.array([[0.5], [-0.5]], dtype=np.float32)
INITIAL_BIAS = np.array([0.0], dtype=np.float32)
TRAIN_EXAMPLES = 256
EVAL_EXAMPLES = 64


def regression_data(
    num_examples: int, seed: int, noise: float = 0.01
) -> tuple[np.ndarray, np.ndarray]:
    """Features (num_examples, 2) and labels (num_examples, 1) of a noisy linear model."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(num_examples, 2)).astype(np.float32)
    labels = features @ TRUE_KERNEL + TRUE_BIAS + noise * rng.normal(size=(num_examples, 1))
    return features, labels.astype(np.float32)


def train_and_eval_data(
    seed: int,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The training set and a held-out evaluation set, both derived from `seed`."""
    return regression_data(TRAIN_EXAMPLES, seed), regression_data(EVAL_EXAMPLES, seed + 1)
