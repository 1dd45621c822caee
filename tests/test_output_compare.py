"""The comparison of committed outputs with new runs: words exact, numbers within a tolerance.

Unit tests of tools/output_compare.py, then nbval itself on a small notebook, through the
repository's conftest.py, so that what `make test` runs is what is tested here.
"""

from __future__ import annotations

import subprocess
import sys

import nbformat
import numpy as np
import pytest

from helpers.compare import format_difference, format_table
from tools.output_compare import RTOL, compare_text
from tools.project import ROOT


def one_float32_spacing_up(value: float) -> float:
    return float(np.nextafter(np.float32(value), np.float32(np.inf)))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("epoch 2: loss 0.00042163  mae 0.01568945", "epoch 2: loss 0.00042163  mae 0.01568944"),
        ("{'loss': 3.0823874473571777}", "{'loss': 3.082387685775757}"),
        ("kernel: [ 0.3008131  -0.20124502]", "kernel: [ 0.3008131  -0.20124501]"),
        ("loss per epoch: [0.02808056, 0.00084138]", "loss per epoch: [0.02808056, 0.00084139]"),
    ],
)
def test_numbers_that_moved_in_their_last_bits_match(old, new):
    assert compare_text(old, new) == []


@pytest.mark.parametrize("value", [0.01568945, 3.0823874473571777, -0.20124502, 0.00084138])
def test_a_value_one_float32_spacing_away_matches_and_one_thousandth_away_does_not(value):
    moved = one_float32_spacing_up(value)
    for printed in (lambda v: f"{v:.8f}", repr):
        assert compare_text(f"loss {printed(value)}", f"loss {printed(moved)}") == []
        (mismatch,) = compare_text(f"loss {printed(value)}", f"loss {printed(value * 1.001)}")
        assert mismatch.line == 1 and "relative" in mismatch.reason
        assert mismatch.old == printed(value) and mismatch.new == printed(value * 1.001)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "first predictions: [0.03939969 0.4624437  0.28330225]",
            "first predictions: [0.03939969 0.46244374 0.28330225]",
        ),  # NumPy re-pads the array
        (
            "1 (CPU)   fit  0 (≤ 1e-06)         0 (≤ 1e-06)\n8 (CPU)   fit  7.45e-09 (≤ 1e-06)  0",
            "1 (CPU)   fit  4.97e-09 (≤ 1e-06)  0 (≤ 1e-06)\n8 (CPU)   fit  7.45e-09 (≤ 1e-06)  0",
        ),
    ],
)
def test_the_padding_of_arrays_and_tables_is_not_compared(old, new):
    assert compare_text(old, new) == []
    word = next(w for w in new.split() if w.isalpha())  # a word changed still fails
    (mismatch,) = compare_text(old, new.replace(word, word.upper(), 1))
    assert mismatch.reason == "the text differs"


def test_a_bound_printed_as_an_integer_is_still_a_bound():
    """format_difference prints its bound with `:g`, so a bound of 1 reads `(≤ 1)`."""
    old, new = format_difference(0.25, 1), format_difference(0.5, 1)
    assert old.endswith("(≤ 1)") and compare_text(old, new) == []
    (mismatch,) = compare_text(old, format_difference(2.0, 1))
    assert "crossed its bound" in mismatch.reason


def test_a_tables_rules_follow_its_widest_cell_and_their_width_is_not_compared():
    """format_table's rule lines are as wide as each column, so a number that gains a digit
    (or becomes 0) widens or narrows them, as it re-pads the rows."""
    old = format_table(["setting", "loss"], [["epsilon", "0.0156894"], ["rate", "0.1"]])
    new = format_table(["setting", "loss"], [["epsilon", "0.01568945"], ["rate", "0.1"]])
    assert old.splitlines()[1] != new.splitlines()[1]  # the rule is one dash wider
    assert compare_text(f"before\n{old}\nafter", f"before\n{new}\nafter") == []
    bounded = [["1 (CPU)", format_difference(0.0, 1e-6)]]
    wider = [["1 (CPU)", format_difference(7.45e-09, 1e-6)]]
    assert compare_text(format_table(["a", "b"], bounded), format_table(["a", "b"], wider)) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("x  y\n-  ---\n1  0.5\n-  ---", "x  y\n-----\n1  0.5\n-----"),  # a column less
        ("x  y\n-  ---\n1  0.5\n-  ---", "x  y\n-  ---\n1  0.5"),  # no closing rule
        ("x  y\n-  ---\n1  0.5\n-  ---", "x  y\n-  ===\n1  0.5\n-  ---"),  # not dashes
        ("a --- b", "a ---- b"),  # dashes in a line of words
    ],
)
def test_a_rule_must_keep_its_columns_and_a_line_of_words_its_dashes(old, new):
    (mismatch,) = compare_text(old, new)
    assert mismatch.reason == "the text differs"


def test_the_tolerance_is_stated_and_a_change_of_1e_4_relative_fails():
    assert RTOL == 1e-5
    assert compare_text("x 1.2345678", "x 1.2346912") != []  # 1e-4 relative


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("epoch 1: loss 0.976068", "Epoch 1: loss 0.976068"),  # a word
        ("step    4: loss 0.05631258", "step    5: loss 0.05631258"),  # an integer
        ("TensorFlow 2.15.1, Keras 2.15.0", "TensorFlow 2.15.2, Keras 2.15.0"),  # a version
        ("shape (256, 2)", "shape (256, 3)"),
        ("float32, shape (None, 2)", "float64, shape (None, 2)"),
        ("a 0.5 b", "a 0.5 b\nc"),  # a line more
        ("largest |diff| 0", "largest |diff| 7.45e-09"),  # exact 0 is not a float
    ],
)
def test_text_and_integers_must_be_equal(old, new):
    (mismatch,) = compare_text(old, new)
    assert mismatch.reason == "the text differs"


def test_a_measured_difference_is_compared_with_its_bound_not_digit_by_digit():
    committed = f"largest |diff| {format_difference(7.45e-09, 1e-6)} at the end"
    assert committed == "largest |diff| 7.45e-09 (≤ 1e-06) at the end"
    for still_under in (0.0, 4.97e-09, 9.9e-07, 1e-6):
        new = f"largest |diff| {format_difference(still_under, 1e-6)} at the end"
        assert compare_text(committed, new) == [], new
    crossed = f"largest |diff| {format_difference(1.2e-06, 1e-6)} at the end"
    (mismatch,) = compare_text(committed, crossed)
    assert mismatch.reason == "the measured difference crossed its bound 1e-06"
    loosened = f"largest |diff| {format_difference(7.45e-09, 1e-5)} at the end"
    (mismatch,) = compare_text(committed, loosened)
    assert "the bound changed" in mismatch.reason
    (mismatch,) = compare_text(committed, "largest |diff| 7.45e-09 at the end")
    assert mismatch.reason == "one is printed with a bound, one without"


def test_a_difference_shown_growing_past_a_bound_must_stay_past_it():
    committed = f"weights {format_difference(2.73e-03, at_least=1e-4)} apart"
    assert committed == "weights 2.73e-03 (≥ 0.0001) apart"
    for still_over in (1e-4, 9.1e-04, 0.5):
        new = f"weights {format_difference(still_over, at_least=1e-4)} apart"
        assert compare_text(committed, new) == [], new
    (mismatch,) = compare_text(committed, f"weights {format_difference(9e-5, at_least=1e-4)} apart")
    assert mismatch.reason == "the measured difference fell below its floor 0.0001"
    (mismatch,) = compare_text(committed, f"weights {format_difference(2.73e-03, 1e-4)} apart")
    assert mismatch.reason == "the bound changed from ≥ 0.0001 to ≤ 0.0001"


def test_a_failure_names_the_line_and_both_values():
    old = "epoch 1: loss 0.97606800\nepoch 2: loss 0.27316300"
    new = "epoch 1: loss 0.97606800\nepoch 2: loss 0.27416300"
    (mismatch,) = compare_text(old, new)
    assert mismatch.describe().startswith("line 2: '0.27316300' became '0.27416300' (differs by")


NOTEBOOK_CELLS = [
    ("print('loss', 0.01568945)", "loss 0.01568944\n"),  # last digit moved
    ("print('loss', 0.01578945)", "loss 0.01568945\n"),  # moved by 6e-3 relative
    ("print('Loss', 0.01568945)", "loss 0.01568945\n"),  # a word changed
    ("print('diff', '3.0e-07 (≤ 1e-06)')", "diff 7.5e-09 (≤ 1e-06)\n"),  # within its bound
    ("print('diff', '3.0e-06 (≤ 1e-06)')", "diff 7.5e-09 (≤ 1e-06)\n"),  # crossed its bound
    (  # a table whose number lost a digit: its rules are one dash narrower
        "from helpers.compare import format_table\nprint(format_table(['x'], [[0.0156894]]))",
        "x\n----------\n0.01568945\n----------\n",
    ),
]


@pytest.mark.notebook
@pytest.mark.reference_only  # the lane where nbval runs
def test_nbval_through_the_repository_conftest():
    folder = ROOT / "build" / "output-compare-test"
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    for count, (source, committed) in enumerate(NOTEBOOK_CELLS, start=1):
        cell = nbformat.v4.new_code_cell(source, execution_count=count)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=committed)]
        nb.cells.append(cell)
    path = folder / "numbers.ipynb"
    nbformat.write(nb, path)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(path),
            "--nbval",
            "--nbval-current-env",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--rootdir={ROOT}",
            "--color=no",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    out = result.stdout
    assert "3 failed, 3 passed" in out, out[-3000:]
    assert "numbers.ipynb, cell 1: line 1: '0.01568945' became '0.01578945'" in out
    assert "numbers.ipynb, cell 2: line 1: 'loss 0.01568945' became 'Loss 0.01568945'" in out
    assert "numbers.ipynb, cell 4: line 1: '7.5e-09 (≤ 1e-06)' became '3.0e-06 (≤ 1e-06)'" in out
