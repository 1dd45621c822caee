"""Tables for the comparisons that the notebooks run in their cells.

The comparison itself (`np.testing.assert_allclose`, the largest absolute difference and
where it is) stays in the cells, where a reader can copy it; this module only lays the
numbers out, with the functions the workbench prints its reports with (`workbench.text`),
so that a table reads the same in a notebook and in the workbench's reports.
"""

from __future__ import annotations

from workbench.text import format_difference, format_table

__all__ = ["format_difference", "format_table"]
