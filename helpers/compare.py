"""Compare a migrated run with its reference: per-step losses and named weights.

"Both ran" is not "the migration kept the results". Comparing the loss of every step and the
final weights of the TF1 run and its TF2 port, with an explicit tolerance, is. A failed
comparison raises `MismatchError` (an AssertionError, so it also fails a test) whose message
is a small table: the first divergent step or weight, the largest difference and where it is.

    compare.assert_losses_close(tf1_losses, tf2_losses, atol=1e-6, names=("TF1", "TF2"))
    compare.assert_weights_close({"dense/kernel": k1}, {"dense/kernel": k2}, atol=1e-6)

A value is within tolerance when |actual - expected| <= atol + rtol * |expected| (the rule
of `numpy.isclose`); NaN is never within tolerance. `atol=0, rtol=0` asks for bit-identical
numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from helpers.errors import FriendlyError


class MismatchError(FriendlyError, AssertionError):
    """Two runs that should agree do not; the message is a table saying where and by how much."""


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with columns padded to their widest cell."""
    cells = [[str(cell) for cell in headers], *[[str(cell) for cell in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in cells
    ]
    return "\n".join(line.rstrip() for line in lines)


def format_difference(value: float) -> str:
    """0 for exactly equal, else three significant digits (1.49e-08); NaN says so."""
    if np.isnan(value):
        return "nan"
    return "0" if value == 0 else f"{value:.2e}"


def format_value(value: float) -> str:
    """Enough digits to tell float32 numbers apart (9 significant digits)."""
    return f"{float(value):.9g}"


def _tolerance_words(atol: float, rtol: float, expected_name: str) -> str:
    if atol == 0 and rtol == 0:
        return "bit-identical"
    if rtol == 0:
        return f"|diff| <= {atol:g}"
    return f"|diff| <= {atol:g} + {rtol:g} * |{expected_name}|"


def _title(subject: str, comparison: Any, detail: str = "") -> str:
    """First line of a report: "<subject> agree|differ: A vs B (<detail>tolerance: ...)"."""
    expected_name, actual_name = comparison.names
    verdict = "agree" if comparison.passed else "differ"
    tolerance = _tolerance_words(comparison.atol, comparison.rtol, expected_name)
    return f"{subject} {verdict}: {expected_name} vs {actual_name} ({detail}tolerance: {tolerance})"


def _within(expected: np.ndarray, actual: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.abs(actual - expected) <= atol + rtol * np.abs(expected)


def _largest(differences: np.ndarray) -> tuple[float, int | None]:
    """Largest difference and its flat index; NaN counts as the largest."""
    if differences.size == 0:
        return 0.0, None
    nan = np.flatnonzero(np.isnan(differences))
    if nan.size:
        return float("nan"), int(nan[0])
    index = int(np.argmax(differences))
    return float(differences[index]), index


@dataclass(frozen=True)
class LossComparison:
    """Two loss trajectories, step by step (step 0 is the first batch)."""

    expected: tuple[float, ...]
    actual: tuple[float, ...]
    atol: float = 0.0
    rtol: float = 0.0
    names: tuple[str, str] = ("expected", "actual")

    @property
    def steps_compared(self) -> int:
        return min(len(self.expected), len(self.actual))

    @property
    def differences(self) -> np.ndarray:
        n = self.steps_compared
        expected = np.asarray(self.expected[:n], dtype=np.float64)
        return np.abs(np.asarray(self.actual[:n], dtype=np.float64) - expected)

    @property
    def largest_difference(self) -> float:
        return _largest(self.differences)[0]

    @property
    def largest_step(self) -> int | None:
        return _largest(self.differences)[1]

    @property
    def first_divergent_step(self) -> int | None:
        """The first step outside the tolerance, or where the shorter run ended; None if none."""
        n = self.steps_compared
        within = _within(
            np.asarray(self.expected[:n], dtype=np.float64),
            np.asarray(self.actual[:n], dtype=np.float64),
            self.atol,
            self.rtol,
        )
        outside = np.flatnonzero(~within)
        if outside.size:
            return int(outside[0])
        return n if len(self.expected) != len(self.actual) else None

    @property
    def steps_outside(self) -> int:
        n = self.steps_compared
        within = _within(
            np.asarray(self.expected[:n], dtype=np.float64),
            np.asarray(self.actual[:n], dtype=np.float64),
            self.atol,
            self.rtol,
        )
        return int(np.count_nonzero(~within))

    @property
    def passed(self) -> bool:
        return self.first_divergent_step is None

    def report(self) -> str:
        expected_name, actual_name = self.names
        title = _title("Loss trajectories", self, f"{self.steps_compared} steps compared; ")
        rows = []
        first = self.first_divergent_step
        if first is not None and first < self.steps_compared:
            rows.append(self._row("first divergent", first))
        if self.largest_step is not None:
            rows.append(self._row("largest |diff|", self.largest_step))
        table = format_table(["", "step", expected_name, actual_name, "|diff|"], rows)
        lines = [title, table]
        if len(self.expected) != len(self.actual):
            lines.append(
                f"{expected_name} has {len(self.expected)} steps, {actual_name} has "
                f"{len(self.actual)}: the runs did not take the same number of steps."
            )
        if self.steps_outside:
            lines.append(
                f"{self.steps_outside} of {self.steps_compared} steps are outside the tolerance."
            )
        return "\n".join(lines)

    def _row(self, label: str, step: int) -> list[str]:
        expected, actual = self.expected[step], self.actual[step]
        return [
            label,
            str(step),
            format_value(expected),
            format_value(actual),
            format_difference(float(self.differences[step])),
        ]

    def check(self) -> LossComparison:
        """Return self when the trajectories agree, else raise MismatchError with the report."""
        if not self.passed:
            raise MismatchError(self.report())
        return self


@dataclass(frozen=True)
class WeightDifference:
    """One named weight in both runs."""

    name: str
    shape: tuple[int, ...] | None  # None when the two shapes differ
    largest: float
    index: tuple[int, ...] | None
    expected_value: float | None
    actual_value: float | None
    within: bool
    problem: str = ""  # "missing from ...", "shape (2, 1) vs (1, 2)"


@dataclass(frozen=True)
class WeightComparison:
    """Two sets of named weights, weight by weight and element by element."""

    rows: tuple[WeightDifference, ...]
    atol: float = 0.0
    rtol: float = 0.0
    names: tuple[str, str] = ("expected", "actual")
    what: str = "Weights"  # the title's first word: "Predictions agree: ..."

    @property
    def largest_difference(self) -> float:
        values = [row.largest for row in self.rows if not row.problem]
        if any(np.isnan(values)):
            return float("nan")
        return max(values, default=0.0)

    @property
    def first_divergent(self) -> str | None:
        """Name of the first weight (in sorted order) outside the tolerance, or None."""
        return next((row.name for row in self.rows if not row.within), None)

    @property
    def passed(self) -> bool:
        return self.first_divergent is None

    def report(self) -> str:
        expected_name, actual_name = self.names
        title = _title(self.what, self)
        rows = []
        for row in self.rows:
            if row.problem:
                rows.append([row.name, row.problem, "", "", "", "", "NO"])
                continue
            rows.append(
                [
                    row.name,
                    str(row.shape),
                    format_difference(row.largest),
                    "" if row.index is None else str(list(row.index)),
                    "" if row.expected_value is None else format_value(row.expected_value),
                    "" if row.actual_value is None else format_value(row.actual_value),
                    "yes" if row.within else "NO",
                ]
            )
        headers = ["name", "shape", "largest |diff|", "at", expected_name, actual_name, "within"]
        return title + "\n" + format_table(headers, rows)

    def check(self) -> WeightComparison:
        """Return self when every weight agrees, else raise MismatchError with the report."""
        if not self.passed:
            raise MismatchError(self.report())
        return self


def compare_losses(
    expected: Sequence[float],
    actual: Sequence[float],
    *,
    atol: float = 0.0,
    rtol: float = 0.0,
    names: tuple[str, str] = ("expected", "actual"),
) -> LossComparison:
    """Compare two loss trajectories step by step; see `LossComparison`."""
    as_floats = [float(value) for value in np.asarray(expected, dtype=np.float64).ravel()]
    actual_floats = [float(value) for value in np.asarray(actual, dtype=np.float64).ravel()]
    return LossComparison(tuple(as_floats), tuple(actual_floats), atol, rtol, names)


def compare_weights(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    atol: float = 0.0,
    rtol: float = 0.0,
    names: tuple[str, str] = ("expected", "actual"),
    what: str = "Weights",
) -> WeightComparison:
    """Compare two {name: array} mappings; names missing on either side fail the comparison.

    `what` names the arrays in the report's title ("Predictions agree: ...").
    """
    rows = []
    for name in sorted(set(expected) | set(actual)):
        if name not in actual or name not in expected:
            missing_from = names[1] if name not in actual else names[0]
            rows.append(
                WeightDifference(
                    name,
                    None,
                    float("nan"),
                    None,
                    None,
                    None,
                    False,
                    f"missing from {missing_from}",
                )
            )
            continue
        want = np.asarray(expected[name], dtype=np.float64)
        got = np.asarray(actual[name], dtype=np.float64)
        if want.shape != got.shape:
            rows.append(
                WeightDifference(
                    name,
                    None,
                    float("nan"),
                    None,
                    None,
                    None,
                    False,
                    f"shape {want.shape} vs {got.shape}",
                )
            )
            continue
        differences = np.abs(got - want)
        largest, flat = _largest(differences.ravel())
        index = None if flat is None else tuple(int(i) for i in np.unravel_index(flat, want.shape))
        rows.append(
            WeightDifference(
                name=name,
                shape=tuple(want.shape),
                largest=largest,
                index=index,
                expected_value=None if index is None else float(want[index]),
                actual_value=None if index is None else float(got[index]),
                within=bool(np.all(_within(want, got, atol, rtol))),
            )
        )
    return WeightComparison(tuple(rows), atol, rtol, names, what)


def assert_losses_close(
    expected: Sequence[float],
    actual: Sequence[float],
    *,
    atol: float = 0.0,
    rtol: float = 0.0,
    names: tuple[str, str] = ("expected", "actual"),
) -> LossComparison:
    """Compare two loss trajectories; raise MismatchError (a table) unless they agree."""
    return compare_losses(expected, actual, atol=atol, rtol=rtol, names=names).check()


def assert_weights_close(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    atol: float = 0.0,
    rtol: float = 0.0,
    names: tuple[str, str] = ("expected", "actual"),
    what: str = "Weights",
) -> WeightComparison:
    """Compare two sets of named arrays; raise MismatchError (a table) unless they agree."""
    return compare_weights(expected, actual, atol=atol, rtol=rtol, names=names, what=what).check()
