"""The site shows the result tables that cells print as HTML tables (a Sphinx extension).

The notebooks print their result tables as text (`helpers.compare.format_table`), which
Jupyter and Colab show as it is and the test suite compares number by number
(tools/output_compare.py):

    replicas  vs TPUEstimator  max |loss diff|
    --------  ---------------  ------------------
    1 (CPU)   Model.fit        7.45e-09 (≤ 1e-06)
    8 (CPU)   custom loop      0 (≤ 1e-06)
    --------  ---------------  ------------------
    all within their tolerance

On the site (docs/conf.py lists this module as an extension), each block of that shape in a
stream output becomes an HTML table; the text before and after it in the same output stays
preformatted text, as before. The shape is strict, so that no other output is taken for a
table: a rule line (runs of dashes, one per column, spaces between them), the header line
right above it, the rows, and the same rule line again, which ends the table. Every line of
the block keeps to the rule's columns: nothing in the spaces between two runs, nothing past
the last. A block that does not keep to it stays text. A column whose cells are all numbers
(a number with the bound it is checked against, `7.45e-09 (≤ 1e-06)`, included; "-", "nan"
and an empty cell for a missing one) is right-aligned (docs/_static/custom.css, class
`numeric`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools.output_compare import NUMBER, RULE  # the patterns the output comparison reads

MISSING = {"", "-", "nan"}  # a cell of a numeric column with no number in it


@dataclass(frozen=True)
class Table:
    """A table found in an output: its header, its rows and which columns hold numbers."""

    header: list[str]
    rows: list[list[str]]

    @property
    def numeric(self) -> list[bool]:
        """For each column: are its cells numbers (or missing), at least one a number?"""
        columns = list(zip(*self.rows, strict=True)) or [()] * len(self.header)
        return [
            all(cell in MISSING or NUMBER.fullmatch(cell) for cell in column)
            and any(NUMBER.fullmatch(cell) for cell in column)
            for column in columns
        ]


def _columns(rule: str) -> list[tuple[int, int]]:
    """Where each column starts and ends in a rule line."""
    return [match.span() for match in re.finditer(r"-+", rule)]


def _cells(line: str, columns: list[tuple[int, int]]) -> list[str] | None:
    """The cells of a line that keeps to the columns; None for a line that does not."""
    if len(line) > columns[-1][1]:
        return None
    gaps = zip([end for _, end in columns], [start for start, _ in columns[1:]], strict=False)
    if any(line[end:start].strip() for end, start in gaps):
        return None
    return [line[start:end].strip() for start, end in columns]


def split_tables(text: str) -> list[str | Table]:
    """`text` as a list of text pieces and tables, in order (no empty piece); a text without a
    table is one piece, itself. A text piece keeps its lines as they are, line breaks too."""
    lines = text.splitlines(keepends=True)
    pieces: list[str | Table] = []
    start = index = 0  # the first line not yet in a piece; the line looked at
    while index < len(lines):
        rule = lines[index].rstrip("\r\n")
        table = _table_at(lines, index) if index > start and RULE.fullmatch(rule) else None
        if table is None:
            index += 1
            continue
        found, end = table
        if index - 1 > start:
            pieces.append("".join(lines[start : index - 1]))
        pieces.append(found)
        start = index = end
    if start < len(lines):
        pieces.append("".join(lines[start:]))
    return pieces


def _table_at(lines: list[str], index: int) -> tuple[Table, int] | None:
    """The table whose rule line is lines[index] and the index of the line after its closing
    rule; None if the lines there are not a table."""
    rule = lines[index].rstrip("\r\n")
    columns = _columns(rule)
    header = _cells(lines[index - 1].rstrip("\r\n"), columns)
    if header is None or not any(header):
        return None
    rows = []
    for end in range(index + 1, len(lines)):
        line = lines[end].rstrip("\r\n")
        if line == rule:
            return Table(header, rows), end + 1
        cells = _cells(line, columns)
        if cells is None:
            return None
        rows.append(cells)
    return None


# -- The Sphinx extension ------------------------------------------------------------------


def _table_node(table: Table):
    from docutils import nodes

    numeric = table.numeric
    tgroup = nodes.tgroup(cols=len(table.header))
    for _ in table.header:
        tgroup += nodes.colspec(colwidth=1)

    def row(cells: list[str]) -> nodes.row:
        node = nodes.row()
        for cell, is_number in zip(cells, numeric, strict=True):
            entry = nodes.entry(classes=["numeric"] if is_number else [])
            if cell:
                entry += nodes.paragraph(cell, cell)
            node += entry
        return node

    tgroup += nodes.thead("", row(table.header))
    tgroup += nodes.tbody("", *(row(cells) for cells in table.rows))
    return nodes.table("", tgroup, classes=["colwidths-auto", "output-table"])


def tables_from_outputs(app, doctree) -> None:
    """Replace each stream output (myst-nb's literal block with classes "output" and "stream")
    that holds a table by its pieces: literal blocks for the text, a table for each table."""
    from docutils import nodes

    for block in list(doctree.findall(nodes.literal_block)):
        if not {"output", "stream"} <= set(block["classes"]):
            continue
        pieces = split_tables(block.astext())
        if not any(isinstance(piece, Table) for piece in pieces):
            continue
        replacement = []
        for piece in pieces:
            if isinstance(piece, Table):
                box = nodes.container(classes=["output", "output-table"])
                box += _table_node(piece)
                replacement.append(box)
            elif piece.strip():
                text = piece.strip("\r\n")
                node = block.copy()  # its attributes (classes, language), not its text
                node.rawsource = text
                node += nodes.Text(text)
                replacement.append(node)
        # Not replace_self, which gives the first new node the block's classes and ids.
        parent = block.parent
        index = parent.index(block)
        parent[index : index + 1] = replacement


def setup(app):
    # After myst-nb has turned the outputs into nodes (while parsing), before the doctree is
    # stored: an incremental build keeps the tables.
    app.connect("doctree-read", tables_from_outputs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
