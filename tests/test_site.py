"""The rendered site: builds with warnings as errors, links resolve, pages render in Chromium.

Runs in the docs venv (`make test-docs`), which has Sphinx and Playwright; the notebook lanes
leave this file out.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from site_browser import check_in_browser
from site_links import check_site

from tools.project import ROOT, notebook_paths

SITE = ROOT / "build" / "site"
SHOTS = ROOT / "build" / "site-shots"
CHEAT_SHEET = ROOT / "docs" / "cheatsheet.md"
TF1_CONCEPTS = [
    "TPUEstimator(",
    "TPUEstimatorSpec",
    "RunConfig",
    "TPUConfig(iterations_per_loop",
    "use_tpu=False",
    "params['batch_size']",
    "input_fn",
    "model_fn` modes",
    "eval_metrics",
    "host_call",
    "predict",
    "export_saved_model",
    "CrossShardOptimizer",
    "model_dir",
    "train_batch_size",
    "eval_batch_size",
    "feature_column",
    "scaffold_fn",
    "warm_start_from",
    "export_outputs",
    "train_and_evaluate",
    "clip_by_global_norm",
    "AdamOptimizer",
    "LoggingTensorHook",
    "keep_checkpoint_max",
]


@pytest.fixture(scope="module")
def site() -> Path:
    shutil.rmtree(SITE, ignore_errors=True)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "docs",
            str(SITE),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    return SITE


def test_site_builds_with_warnings_as_errors_and_has_every_notebook(site):
    for page in ("index.html", "cheatsheet.html", "surface.html"):
        assert (site / page).is_file(), page
    for path in notebook_paths():
        assert (site / "notebooks" / f"{path.stem}.html").is_file(), path.name


def test_every_internal_link_and_anchor_resolves(site):
    report = check_site(site)
    assert report.broken == []
    assert report.anchors >= 30, "the cheat sheet alone links more notebook sections"


def test_pages_load_nothing_from_the_network(site):
    assert dict(check_site(site).external_loaded) == {}


def cheat_sheet_rows() -> list[list[str]]:
    lines = [line for line in CHEAT_SHEET.read_text().splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[1:]]


@pytest.mark.parametrize("concept", TF1_CONCEPTS)
def test_cheat_sheet_maps_each_tf1_concept_to_a_notebook_section(concept):
    rows = [row for row in cheat_sheet_rows() if concept in row[0]]
    assert rows, f"no cheat-sheet row for {concept}"
    links = re.findall(r"\]\((notebooks/[^)#]+\.ipynb)#([\w-]+)\)", rows[0][-1])
    assert links, f"the row for {concept} links no notebook section"
    for notebook, _ in links:
        assert (ROOT / notebook).is_file(), notebook


def test_pages_render_in_chromium(site):
    report = check_in_browser(site, SHOTS)
    assert report["failures"] == []
    assert report["external_requests_blocked"] == {}
    screenshots = list(SHOTS.glob("*.png"))
    assert len(screenshots) >= 3 + len(notebook_paths())
    assert all(shot.stat().st_size > 10_000 for shot in screenshots)
