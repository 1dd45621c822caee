"""Keras source that notebooks 03 and 05 quote, pinned per Keras generation.

Their prose names Keras functions and docstrings for what `steps_per_execution` changes and for
when an optimizer builds; a Keras release that changes one fails here with the quote, so the
sentence is revised with it. Each file is read without importing Keras (milliseconds).
"""

from __future__ import annotations

import pytest
from support import KERAS_MAJOR, installed_source

KERAS_2_QUOTES = [  # Keras 2.15 (the reference lane), under keras/src
    ("engine/training.py", 'If set to "auto", keras will automatically tune'),
    ("engine/training.py", "`Callback.on_batch_begin` and `Callback.on_batch_end` methods will"),
    ("utils/steps_per_execution_tuning.py", "class StepsPerExecutionTuner"),
    ("callbacks.py", "self._batches_count += 1 if self._batches_count >= self.save_freq:"),
]
KERAS_3_QUOTES = [  # Keras 3 (the current and Colab lanes), under keras/src
    ("trainers/trainer.py", "`Callback.on_batch_begin` and `Callback.on_batch_end` methods"),
    ("trainers/trainer.py", "self.optimizer.build(self.trainable_variables)"),
    ("backend/tensorflow/trainer.py", "def _maybe_symbolic_build(self, iterator=None,"),
    ("callbacks/backup_and_restore.py", "add_batches = batch - self._last_batch_seen"),
    (
        "callbacks/backup_and_restore.py",
        "if self._batches_seen_since_last_saving >= self.save_freq:",
    ),
]


@pytest.mark.skipif(KERAS_MAJOR != 2, reason="Keras 2 source")
@pytest.mark.parametrize(("path", "quote"), KERAS_2_QUOTES)
def test_keras_2_source_says_what_03_and_05_quote(path: str, quote: str) -> None:
    assert quote in installed_source("keras", "src", *path.split("/")), (path, quote)


@pytest.mark.skipif(KERAS_MAJOR != 3, reason="Keras 3 source")
@pytest.mark.parametrize(("path", "quote"), KERAS_3_QUOTES)
def test_keras_3_source_says_what_03_and_05_quote(path: str, quote: str) -> None:
    assert quote in installed_source("keras", "src", *path.split("/")), (path, quote)
