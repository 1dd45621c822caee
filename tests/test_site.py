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

import nbformat
import pytest
from site_browser import check_in_browser
from site_links import check_site

from helpers.compare import format_difference, format_table
from tools.project import ROOT, notebook_paths, notebook_toctree

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
    "build_parsing_serving_input_receiver_fn",
    "ClassificationOutput",
    "exporters=",
    "predict_keys",
    "tf.contrib",
    "AdamWeightDecayOptimizer",
    "layer_norm",
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
    for page in ("index.html", "finder.html", "cheatsheet.html", "surface.html"):
        assert (site / page).is_file(), page
    for path in notebook_paths():
        assert (site / "notebooks" / f"{path.stem}.html").is_file(), path.name


def test_every_internal_link_and_anchor_resolves(site):
    report = check_site(site)
    assert report.broken == []
    assert report.anchors >= 30, "the cheat sheet alone links more notebook sections"


def test_pages_load_nothing_from_the_network(site):
    assert dict(check_site(site).external_loaded) == {}


CHEAT_SHEET_GROUPS = [  # where a name appears in TensorFlow 1 code
    "`TPUEstimator(...)` and where it runs",
    "`RunConfig` and `TPUConfig`",
    "`model_fn` and `TPUEstimatorSpec`",
    "`input_fn`",
    "Hooks and training progress",
    "Checkpoints",
    "Export, serving and prediction",
    "`train_and_evaluate` and several machines",
    "`tf.contrib` and BERT-style code",
]


def cheat_sheet_groups() -> dict[str, list[list[str]]]:
    """Each `## ` section of the cheat sheet: its table's rows, without the header."""
    groups: dict[str, list[list[str]]] = {}
    for line in CHEAT_SHEET.read_text().splitlines():
        if line.startswith("## "):
            rows = groups.setdefault(line[3:].strip(), [])
        elif line.startswith("| ") and not line.startswith("| TensorFlow 1 |"):
            rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return groups


def cheat_sheet_rows() -> list[list[str]]:
    return [row for rows in cheat_sheet_groups().values() for row in rows]


def test_cheat_sheet_is_grouped_by_where_the_name_appears():
    groups = cheat_sheet_groups()
    assert list(groups) == CHEAT_SHEET_GROUPS
    assert all(groups.values()), [name for name, rows in groups.items() if not rows]
    text = CHEAT_SHEET.read_text()
    assert text.count("| TensorFlow 1 |") == len(CHEAT_SHEET_GROUPS)  # one table per group
    assert not re.search(r"^\| ", text.split("\n## ", 1)[0], re.M)  # no row before the first group


def test_the_sidebar_lists_every_notebook_with_a_numbered_short_title():
    """An explicit entry per notebook (not a glob), so that the sidebar shows "02 Model.fit"
    rather than the notebook's long title: a new notebook needs its line here."""
    entries = notebook_toctree()
    assert [stem for _, stem in entries] == [path.stem for path in notebook_paths()]
    for title, stem in entries:
        assert title.startswith(stem[:2] + " "), f"{title!r} is not numbered as {stem}"
        assert len(title.split()) <= 5, f"{title!r}: a short title, five words at most"


def test_the_finder_page_links_every_notebook(site):
    page = (site / "finder.html").read_text()
    for path in notebook_paths():
        assert f'href="notebooks/{path.stem}.html' in page, path.name


@pytest.mark.parametrize("concept", TF1_CONCEPTS)
def test_cheat_sheet_maps_each_tf1_concept_to_a_notebook_section(concept):
    rows = [row for row in cheat_sheet_rows() if concept in row[0]]
    assert rows, f"no cheat-sheet row for {concept}"
    links = re.findall(r"\]\((notebooks/[^)#]+\.ipynb)#([\w-]+)\)", rows[0][-1])
    assert links, f"the row for {concept} links no notebook section"
    for notebook, _ in links:
        assert (ROOT / notebook).is_file(), notebook


def test_a_table_printed_in_an_output_becomes_an_html_table(tmp_path):
    """tools/output_tables.py on a notebook of its own, in a Sphinx project of its own (with
    this site's myst-nb settings): the table between two lines of text in one stream output,
    printed in two writes, is an HTML table between two preformatted blocks."""
    table = format_table(
        ["setting", "max |diff|", "same"],
        [
            ["epsilon", format_difference(3.35e-08, 1e-06), True],
            ["order", format_difference(0.239), False],
        ],
    )
    notebook = nbformat.v4.new_notebook(metadata={"language_info": {"name": "python"}})
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# Tables"),
        nbformat.v4.new_code_cell("print(table)", execution_count=1),
    ]
    notebook.cells[1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=f"before\n{table}\n"),
        nbformat.v4.new_output("stream", name="stdout", text="after\n"),
    ]
    source, site = tmp_path / "src", tmp_path / "site"  # myst-nb writes next to site too
    source.mkdir()
    nbformat.write(notebook, source / "tables.ipynb")
    (source / "conf.py").write_text(
        'extensions = ["myst_nb", "tools.output_tables"]\n'
        'nb_execution_mode = "off"\nnb_merge_streams = True\nhtml_theme = "basic"\n'
        'root_doc = "tables"\n'
    )
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(source), str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    html = (site / "tables.html").read_text()
    output = html[html.index('<div class="cell_output') :]
    assert re.search(r"<pre>(<span></span>)?before\s*</pre>", output), output[:2000]
    assert re.search(r"<pre>(<span></span>)?after\s*</pre>", output), output[:2000]
    assert output.index("before") < output.index("<table") < output.index("after")
    assert output.count("<table") == 1 and "---" not in output
    assert re.search(r'<th class="head numeric"><p>max \|diff\|</p></th>', output)
    assert re.search(r'<td class="numeric"><p>3.35e-08 \(≤ 1e-06\)</p></td>', output)
    assert re.search(r"<td><p>False</p></td>", output)  # True/False: not a column of numbers
    assert len(re.findall(r"<tr", output)) == 3


def test_pages_render_in_chromium(site):
    report = check_in_browser(site, SHOTS)
    assert report["failures"] == []
    assert report["external_requests_blocked"] == {}
    screenshots = list(SHOTS.glob("*.png"))
    assert len(screenshots) >= 3 + len(notebook_paths())
    assert all(shot.stat().st_size > 10_000 for shot in screenshots)
