"""Errors that notebooks show as one clear message instead of a stack trace.

A reader who passes a bad parameter or asks for a TPU that is not there needs to know what
was wrong and how to fix it. A 200-line traceback through TensorFlow hides that. IPython asks
an exception for `_render_traceback_()` before formatting a traceback, so these errors render
as their message alone, in Jupyter, in Colab and in papermill's error cells.
"""

from __future__ import annotations

from workbench.errors import FriendlyError, first_line

__all__ = ["FriendlyError", "ParameterError", "RuntimeUnavailableError", "first_line"]


class ParameterError(FriendlyError, ValueError):
    """A notebook parameter has a value the notebook cannot use."""


class RuntimeUnavailableError(FriendlyError, RuntimeError):
    """The requested accelerator is not present or does not answer."""
