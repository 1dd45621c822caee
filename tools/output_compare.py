"""Compare a committed notebook output with a new run's: words exact, numbers within a tolerance.

The committed outputs were recorded on one CPU; oneDNN picks its kernels by the instruction
set of the CPU it runs on (AVX2, AVX-512, AMX), so a reader's machine or CI's moves float
results in their last bits. A digit-by-digit comparison then fails on every machine
but the recorder's, and says nothing about what changed. This comparison splits both texts
into words and numbers:

- Everything that is not a floating-point number (words, table headings, shapes, dtypes,
  integers such as step numbers and counts, version strings, line breaks) must be equal
  character for character, except spaces: NumPy arrays and table columns pad to the width of
  their numbers, so a number that gains a digit, or becomes 0, re-pads its line. For the same
  reason the width of a rule line (dashes and spaces only: the lines under a table's header
  and after its last row, `helpers.compare.format_table`) is not compared, only its number of
  runs of dashes (the table's columns).
- A floating-point number (it has a decimal point or an exponent) matches when the two
  printed values differ by at most `RTOL` of the larger one, plus what rounding the last
  printed digit can add: half a unit in that digit on each side, when both are printed in the
  same format (fixed or exponent, the same number of decimals) with at least two significant
  digits. A value that moved by 1e-7 can flip its last printed digit and passes; a number
  printed with six or more significant digits that moved by 1e-4 relative fails (with fewer
  digits, one unit in the last printed digit is all the comparison can tell).
- A measured difference printed with the bound its cell asserts, `7.45e-09 (≤ 1e-06)` (see
  `helpers.compare.format_difference`), matches when the bound is the same text and the new
  value is still within it: such a difference is noise from the hardware, and its digits say
  nothing, but crossing the bound does. A floor, `2.73e-03 (≥ 0.0001)`, is the same check the
  other way: a difference the cell shows growing past a bound (a last-bit change amplified by
  training) must still be past it, by however much the hardware makes it.

Each mismatch names the line, the old and the new text and why they differ, so a failing
comparison says which number moved and by how much.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

# Relative tolerance for printed floating-point numbers: about 80 float32 spacings, so the
# last bits that another CPU moves pass, and a change of 1e-4 relative fails wherever the
# number is printed with six or more significant digits.
RTOL = 1e-5
# A float: digits with a decimal point and/or an exponent, not part of a word, a version
# string (2.15.1), an address (127.0.0.1) or a file name (epoch-01.weights.h5).
_FLOAT = r"-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)"
_INT = r"-?\d+"
_FLOAT_TOKEN = rf"(?<![\w.]){_FLOAT}(?![\w]|\.\d)"
# format_difference's `value (≤ bound)`; `:g` prints a bound of 1 as `1`, hence an int too
_BOUNDED_TOKEN = rf"(?<![\w.])(?:{_FLOAT}|{_INT}) \([≤≥] (?:{_FLOAT}|{_INT})\)"
TOKEN = re.compile(rf"({_BOUNDED_TOKEN}|{_FLOAT_TOKEN})")  # one group: re.split keeps them
BOUNDED = re.compile(rf"(?P<value>{_FLOAT}|{_INT}) \((?P<side>[≤≥]) (?P<bound>{_FLOAT}|{_INT})\)")
# A table cell that is a number, bounded or not (tools/output_tables.py right-aligns them)
NUMBER = re.compile(rf"(?:{_FLOAT}|{_INT})(?: \([≤≥] (?:{_FLOAT}|{_INT})\))?")
# format_table's rule line: one run of dashes per column, spaces between the runs
RULE = re.compile(r"-+(?: +-+)*")


@dataclass(frozen=True)
class Mismatch:
    """One place where the new output differs from the committed one beyond the tolerance."""

    line: int
    old: str
    new: str
    reason: str

    def describe(self) -> str:
        return f"line {self.line}: {self.old!r} became {self.new!r} ({self.reason})"


def _split(text: str) -> list[str]:
    """Alternating text and number tokens: even indices text, odd indices numbers."""
    return TOKEN.split(text)


def _unpadded(text: str) -> str:
    """Text without its spaces: the padding of arrays and tables follows their numbers."""
    return re.sub(r"[ \t]+", "", text)


_RULE_LINE = re.compile(rf"(?m)^{RULE.pattern}$")


def _unsized_rules(text: str) -> str:
    """Text with each rule line's runs of dashes one dash long: a table's rules are as wide as
    its columns, which follow their numbers as the padding does."""
    return _RULE_LINE.sub(lambda rule: re.sub(r"-+", "-", rule.group(0)), text)


def _line_of(text: str, tokens: list[str], index: int) -> int:
    return "".join(tokens[:index]).count("\n") + 1


def _format(number: str) -> tuple[bool, int]:
    """How a number is printed: with an exponent or not, and its number of decimals."""
    mantissa, _, _ = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return ("e" in number.lower(), decimals)


def _significant_digits(number: str) -> int:
    mantissa = number.lower().partition("e")[0].lstrip("-").replace(".", "")
    return len(mantissa.lstrip("0"))


def _last_digit_unit(number: str) -> Decimal:
    """One unit in the last printed digit: 1e-8 for 0.01568944, 1e-11 for 7.45e-09."""
    return Decimal(1).scaleb(Decimal(number).as_tuple().exponent)


def float_reason(old: str, new: str, rtol: float = RTOL) -> str | None:
    """None when two printed floats match; else why not."""
    try:
        a, b = Decimal(old), Decimal(new)
    except InvalidOperation:
        return "not a number"
    allowed = Decimal(str(rtol)) * max(abs(a), abs(b))
    same_format = _format(old) == _format(new)
    if same_format and min(_significant_digits(old), _significant_digits(new)) >= 2:
        allowed += (_last_digit_unit(old) + _last_digit_unit(new)) / 2
    difference = abs(a - b)
    if difference <= allowed:
        return None
    relative = difference / max(abs(a), abs(b))
    return (
        f"differs by {float(difference):.3g}, {float(relative):.3g} relative; "
        f"tolerance {rtol:g} relative"
    )


def bounded_reason(old: str, new: str) -> str | None:
    """None when a bounded difference stays within the same bound; else why not."""
    old_match, new_match = BOUNDED.fullmatch(old), BOUNDED.fullmatch(new)
    old_bound = f"{old_match['side']} {old_match['bound']}"
    new_bound = f"{new_match['side']} {new_match['bound']}"
    if old_bound != new_bound:
        return f"the bound changed from {old_bound} to {new_bound}"
    value, bound = abs(Decimal(new_match["value"])), Decimal(new_match["bound"])
    if new_match["side"] == "≤" and value > bound:
        return f"the measured difference crossed its bound {new_match['bound']}"
    if new_match["side"] == "≥" and value < bound:
        return f"the measured difference fell below its floor {new_match['bound']}"
    return None


def compare_text(old: str, new: str, rtol: float = RTOL) -> list[Mismatch]:
    """The mismatches between a committed text output and a new one (empty: they match)."""
    old_tokens, new_tokens = _split(_unsized_rules(old)), _split(_unsized_rules(new))
    if len(old_tokens) != len(new_tokens):
        return [_first_text_difference(old, new)]
    mismatches = []
    for index, (a, b) in enumerate(zip(old_tokens, new_tokens, strict=True)):
        if a == b:
            continue
        line = _line_of(old, old_tokens, index)
        if index % 2 == 0:
            if _unpadded(a) == _unpadded(b):
                continue
            return [_first_text_difference(old, new)]
        a_bounded, b_bounded = BOUNDED.fullmatch(a), BOUNDED.fullmatch(b)
        if bool(a_bounded) != bool(b_bounded):
            mismatches.append(Mismatch(line, a, b, "one is printed with a bound, one without"))
            continue
        reason = bounded_reason(a, b) if a_bounded else float_reason(a, b, rtol)
        if reason:
            mismatches.append(Mismatch(line, a, b, reason))
    return mismatches


def _first_text_difference(old: str, new: str) -> Mismatch:
    """The first line whose words differ (numbers masked), for a mismatch in the text itself."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    for number, (a, b) in enumerate(zip(old_lines, new_lines, strict=False), start=1):
        if _unpadded(TOKEN.sub("#", _unsized_rules(a))) != _unpadded(
            TOKEN.sub("#", _unsized_rules(b))
        ):
            return Mismatch(number, a, b, "the text differs")
    number = min(len(old_lines), len(new_lines)) + 1
    a = old_lines[number - 1] if number <= len(old_lines) else "<no line>"
    b = new_lines[number - 1] if number <= len(new_lines) else "<no line>"
    return Mismatch(number, a, b, "the text differs")
