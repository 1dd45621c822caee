"""Fixtures shared by the tests; the plain helpers they use live in `support.py`."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import FakeMachine


@pytest.fixture
def machine(tmp_path: Path) -> FakeMachine:
    return FakeMachine(tmp_path / "machine")
