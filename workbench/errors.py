"""The workbench's one-line errors, and the base class the notebooks' helpers share.

A reader who passes a bad file or flag needs to know what was wrong and how to fix it, not a
traceback through TensorFlow. IPython asks an exception for `_render_traceback_()` before
formatting a traceback, so these errors render as their message alone in Jupyter, Colab and
papermill; the command line prints them as one line on stderr. The workbench is installed
into the reader's own TF1 environment, so this module imports nothing (the notebooks'
`helpers.errors` builds its errors on this class).
"""

from __future__ import annotations


def first_line(error: BaseException) -> str:
    """`Type: first line of the message`: what a one-line refusal quotes of an error below it."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class FriendlyError(Exception):
    """Base class: the message says what went wrong and what to do about it."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]
