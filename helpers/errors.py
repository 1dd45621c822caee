"""Errors that notebooks show as one clear message instead of a stack trace.

A reader who passes a bad parameter or asks for a TPU that is not there needs to know what
was wrong and how to fix it. A 200-line traceback through TensorFlow hides that. IPython asks
an exception for `_render_traceback_()` before formatting a traceback, so these errors render
as their message alone, in Jupyter, in Colab and in papermill's error cells.
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


class ParameterError(FriendlyError, ValueError):
    """A notebook parameter has a value the notebook cannot use."""


class RuntimeUnavailableError(FriendlyError, RuntimeError):
    """The requested accelerator is not present or does not answer."""
