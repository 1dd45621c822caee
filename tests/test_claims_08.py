"""Pins on the TensorFlow, estimator and Keras source that notebook 08 quotes but cannot run.

What only a TPU would show (outside compilation, padding under `TPUStrategy`, TPU precision,
`TPUEstimator`'s own checks) the notebook says "according to" a source file; these tests read
each quoted sentence or line in the installed file, without starting TensorFlow, so that a
release that changes one fails with the quote. What the notebook runs, its cells assert in
every lane. The one exception is `tf.py_function`'s docstring, whose sentence appears in three
docstrings of `script_ops.py`: the object is read, in a subprocess that starts TensorFlow.
"""

from __future__ import annotations

import pytest
from support import KERAS_MAJOR, installed_source, run_python_json

TF_QUOTES = [
    ("python/framework/config.py", "TensorFloat-32 is enabled by default"),
    ("python/framework/config.py", "from 23 bits of precision to 10 bits"),
    (
        "python/framework/config.py",
        "TPUs also run certain float32 ops, like matrix multiplications and convolutions",
    ),
    ("python/framework/config.py", "with lower precision by default"),
    ("python/framework/config.py", "potentially has a large performance cost"),
    (
        "python/distribute/distribute_lib.py",
        "batch_size: Boolean. Only applies to TPUStrategy. Default to True",
    ),
    ("python/distribute/distribute_lib.py", "to reduce XLA recompilation"),
    ("python/tpu/tpu.py", "Automatic outside compilation is enabled"),
    ("python/tpu/tpu.py", "def _pad_all_input("),
    ("python/distribute/tpu_strategy.py", "device_util.get_host_for_device(tpu_device)"),
    # tpu_run: tpu.replicate is given the bound, and TPUStrategy.run always traces the step.
    ("python/distribute/tpu_strategy.py", "maximum_shapes=maximum_shapes"),
    ("python/distribute/tpu_strategy.py", "def_function.function(tpu_function)"),
]

ESTIMATOR_QUOTES = [
    "executed on the CPU on every step",
    "must have static shape",
    "dynamic shape (should be static)",
    "Pads out the batch dimension",
    "all evaluation steps and all batches should have the same size",
]


@pytest.mark.parametrize(("path", "quote"), TF_QUOTES)
def test_tensorflow_source_holds_what_the_notebook_quotes(path: str, quote: str) -> None:
    assert quote in installed_source("tensorflow", *path.split("/"))


@pytest.mark.reference_only
@pytest.mark.parametrize("quote", ESTIMATOR_QUOTES)
def test_tpu_estimator_source_holds_what_the_notebook_quotes(quote: str) -> None:
    source = installed_source(
        "tensorflow_estimator", "python", "estimator", "tpu", "tpu_estimator.py"
    )
    assert quote.lower() in source.lower(), quote


@pytest.mark.skipif(KERAS_MAJOR != 3, reason="the notebook cites the Keras 3 `Loss` docstring")
def test_keras3_loss_docstring_divides_by_the_sample_size() -> None:
    source = installed_source("keras", "src", "losses", "loss.py")
    assert '`"sum_over_batch_size"` and `"mean"` sum the loss and divide by the sample size' in (
        source
    )
    assert 'reduction="sum_over_batch_size"' in source


@pytest.mark.tensorflow  # reads the docstring of the object itself
def test_py_function_docstring_keeps_it_in_the_python_process() -> None:
    facts = run_python_json(
        "import json\n"
        "from helpers.quiet import quiet_logs\n"
        "quiet_logs()\n"
        "import tensorflow as tf\n"
        "print(json.dumps({'doc': ' '.join(tf.py_function.__doc__.split())}))\n"
    )
    assert "must run in the same address space as the Python program" in facts["doc"]
