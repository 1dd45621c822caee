"""Numbers laid out for a reader: plain-text tables and differences with their bounds.

The workbench prints its reports with these, and the notebooks' cells print their
comparisons with the same functions (`helpers.compare` imports them from here), so a table
reads the same on the site, in Colab and in a terminal. Ten lines of padding do not justify
a dependency (`tabulate`) in the reader's own TF1 environment, where the workbench is
installed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: columns padded to their widest cell, two spaces apart, and a rule
    of dashes as wide as each column under the header and after the last row.

        setting  max |diff|
        -------  ------------------
        epsilon  3.35e-08 (≤ 1e-06)
        -------  ------------------

    Jupyter and Colab print it as it is. The site (tools/output_tables.py) shows every block
    of this shape in a stream output as an HTML table: the header line, the rule, the rows and
    the same rule again, which is where the table ends and any text printed after it starts.
    A cell is one line (a line break in a cell raises ValueError: it would break the layout).
    """
    cells = [[str(cell) for cell in headers], *[[str(cell) for cell in row] for row in rows]]
    if any("\n" in cell or "\r" in cell for row in cells for cell in row):
        raise ValueError("format_table: a cell holds one line; this one has a line break")
    widths = [max(1, *(len(row[i]) for row in cells)) for i in range(len(headers))]
    rule = "  ".join("-" * width for width in widths)
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    return "\n".join([lines[0], rule, *lines[1:], rule])


def format_difference(
    value: float, bound: float | None = None, at_least: float | None = None
) -> str:
    """0 for exactly equal, else three significant digits (1.49e-08); NaN says so.

    With `bound`, the bound the cell asserts follows in brackets: `1.49e-08 (≤ 1e-06)`. A
    difference that small moves with the hardware (another CPU does; a GPU or a TPU may), so
    the test suite compares such a number with its bound, not digit by digit
    (tools/output_compare.py); the reader sees how far inside the bound it is. `at_least` is
    the floor a cell asserts instead, `2.73e-03 (≥ 0.0001)`: a difference shown growing past
    a bound, by an amount the hardware moves.
    """
    if math.isnan(value):
        return "nan"
    text = "0" if value == 0 else f"{value:.2e}"
    if at_least is not None:
        if bound is not None:
            raise ValueError("format_difference: give a bound or a floor (at_least), not both")
        return f"{text} (≥ {at_least:g})"
    return text if bound is None else f"{text} (≤ {bound:g})"
