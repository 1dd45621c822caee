"""Project settings read from pyproject.toml, and what is derived from them."""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


@cache
def settings() -> dict[str, str]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["tool"]["tpu_migration"]


def repository() -> str:
    return settings()["repository"]


def branch() -> str:
    return settings()["branch"]


def colab_url(notebook_name: str, slug: str | None = None) -> str:
    """The Open-in-Colab address of a notebook in the configured repository."""
    return (
        f"https://colab.research.google.com/github/{slug or repository()}/blob/"
        f"{branch()}/notebooks/{notebook_name}"
    )


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def notebook_toctree() -> list[tuple[str, str]]:
    """The index's "Notebooks" toctree: (title, notebook stem) for each entry, in order."""
    text = (ROOT / "docs" / "index.md").read_text()
    block = re.search(r"```\{toctree\}\n(?:[^`]*\n)?:caption: Notebooks\n(.*?)```", text, re.S)
    if not block:
        raise ValueError("docs/index.md has no toctree captioned Notebooks")
    lines = [line.strip() for line in block[1].splitlines()]
    entries = [line for line in lines if line and not line.startswith(":")]  # not an option
    pairs = [re.fullmatch(r"(.+) <notebooks/(\w+)>", entry) for entry in entries]
    if not all(pairs):
        raise ValueError(f"docs/index.md: a notebook entry without an explicit title: {entries}")
    return [(pair[1], pair[2]) for pair in pairs]


# The lane each notebook's committed outputs come from, and that `make run` runs it in: the
# reference lane (TF 2.15, Keras 2), except the notebooks that need what only the current
# lane has (Keras 3 with JAX).
CURRENT_LANE_NOTEBOOKS = ("11_keras3_jax.ipynb",)
LANE_VENVS = {"reference": ROOT / ".venv", "current": ROOT / ".venv-current"}


def recording_lane(notebook: Path | str) -> str:
    """'current' for the notebooks recorded in the current lane, else 'reference'."""
    return "current" if Path(notebook).name in CURRENT_LANE_NOTEBOOKS else "reference"
