"""Stored runs under `fixtures/`, found in a checkout or downloaded and verified.

Notebook 04 compares its TensorFlow 2 runs with notebook 01's TPUEstimator run, stored in
`fixtures/tf1_reference` by `python -m tools.make_tf1_fixture` (TPUEstimator is gone from
TensorFlow 2.16 on). In a checkout it sits beside the `helpers` package; Colab installs the
package alone, so there the files listed in its manifest are downloaded and each is checked
against its sha256.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import urllib.request
from pathlib import Path

from helpers.errors import FriendlyError


class FixtureUnavailableError(FriendlyError, FileNotFoundError):
    """A stored reference run is neither in this checkout nor downloadable."""


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MANIFEST = "manifest.json"  # {"files": {relative path: sha256}} in every fixture folder


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fixture_dir(name: str, download_from: str | None = None, cache: Path | None = None) -> Path:
    """The folder `fixtures/<name>` of this checkout, else a verified download of it.

    In a checkout (or an editable install) the fixture sits beside the `helpers` package.
    Colab installs the package alone, so there the files listed in the fixture's manifest are
    fetched from `download_from` (the fixture folder's URL) into a cache folder, each checked
    against its sha256.
    """
    local = FIXTURES / name
    if (local / MANIFEST).is_file():
        return local
    if not download_from:
        raise FixtureUnavailableError(
            f"The stored run {name!r} is not at {local} and no download address was given. Run "
            "from a checkout of the repository (pip install -e .)."
        )
    target = (cache or Path(tempfile.gettempdir()) / "tpu-migration-fixtures") / name
    base = download_from.rstrip("/")
    try:
        manifest = json.loads(_fetch(f"{base}/{MANIFEST}"))
        for relative, digest in manifest["files"].items():
            path = target / relative
            if path.is_file() and file_digest(path) == digest:
                continue
            content = _fetch(f"{base}/{relative}")
            if hashlib.sha256(content).hexdigest() != digest:
                raise ValueError(f"{relative} does not match its sha256 in the manifest")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    except (OSError, ValueError, KeyError) as error:
        raise FixtureUnavailableError(
            f"The stored run {name!r} is not in this checkout and could not be downloaded from "
            f"{base}: {type(error).__name__}: {error}"
        ) from None
    (target / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return target


def _fetch(url: str, timeout_s: float = 30.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return bytes(response.read())


def load_tf1_run(directory: Path) -> dict:
    """Notebook 01's `tf1_run.json` in `directory`: weights and predictions as float32 arrays,
    `checkpoint` and `saved_model` as paths under `directory`."""
    import numpy as np

    run = json.loads((Path(directory) / "tf1_run.json").read_text())
    for key in ("weights", "continued_weights"):
        run[key] = {name: np.array(value, np.float32) for name, value in run[key].items()}
    run["predictions"] = np.array(run["predictions"], np.float32)
    for key in ("checkpoint", "saved_model"):
        run[key] = str(Path(directory) / run[key])
    return run
