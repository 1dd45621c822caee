"""Sphinx configuration of the rendered collection (`make docs`).

The notebooks are committed *executed* in <repo>/notebooks/; the site renders their stored
outputs and never runs them (nb_execution_mode = "off"). At every build the notebooks are
copied into docs/notebooks/ (a build artefact, git-ignored) so that Sphinx sees them inside
its source directory.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

# -- Paths -------------------------------------------------------------------------------
DOCS_DIR = Path(__file__).resolve().parent
# The repository's root, for the extension in tools/ (`python -m sphinx` from the root has it
# on sys.path already; another working directory does not).
if str(DOCS_DIR.parent) not in sys.path:
    sys.path.insert(0, str(DOCS_DIR.parent))
NOTEBOOKS_SRC = DOCS_DIR.parent / "notebooks"
NOTEBOOKS_DST = DOCS_DIR / "notebooks"
# The one configured repository (pyproject.toml, [tool.tpu_migration]): Colab and GitHub links.
SETTINGS = tomllib.loads((DOCS_DIR.parent / "pyproject.toml").read_text())["tool"]["tpu_migration"]


def _committed_notebooks() -> list[Path]:
    """The notebooks that git tracks in NOTEBOOKS_SRC (untracked drafts, which may not be
    executed yet, stay out of the site).  DOCS_NOTEBOOKS=all, or no git, takes every file."""
    every = sorted(NOTEBOOKS_SRC.glob("*.ipynb"))
    if os.environ.get("DOCS_NOTEBOOKS") == "all":
        return every
    try:
        out = subprocess.run(
            ["git", "-C", str(NOTEBOOKS_SRC), "ls-files", "-z", "--", "*.ipynb"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return every
    tracked = {NOTEBOOKS_SRC / Path(name).name for name in out.split("\0") if name}
    return [p for p in every if p in tracked]


def _sync_notebooks() -> list[str]:
    """Mirror the committed notebooks into docs/notebooks/ (copy2 keeps mtimes, so
    incremental builds only re-read notebooks that changed).  Returns the names of
    notebooks that look unexecuted (code cells but no execution count or output)."""
    NOTEBOOKS_DST.mkdir(exist_ok=True)
    sources = _committed_notebooks()
    if not sources:
        raise RuntimeError(f"no notebooks found in {NOTEBOOKS_SRC}")
    wanted = {p.name for p in sources}
    for stale in NOTEBOOKS_DST.glob("*.ipynb"):
        if stale.name not in wanted:
            stale.unlink()
    unexecuted = []
    for src in sources:
        dst = NOTEBOOKS_DST / src.name
        if not dst.exists() or src.read_bytes() != dst.read_bytes():
            shutil.copy2(src, dst)
        code = [c for c in json.loads(src.read_text())["cells"] if c["cell_type"] == "code"]
        if code and not any(c.get("execution_count") or c.get("outputs") for c in code):
            unexecuted.append(src.name)
    return unexecuted


UNEXECUTED_NOTEBOOKS = _sync_notebooks()

# -- Project -----------------------------------------------------------------------------
project = "From TPUEstimator to TPUStrategy"
author = "The collection's authors"
copyright = "the collection's authors, Apache License 2.0"

# -- General -----------------------------------------------------------------------------
extensions = [
    "myst_nb",  # also loads myst_parser; do not list both
    "sphinx_copybutton",
    # The result tables that cells print (helpers.compare.format_table) as HTML tables.
    "tools.output_tables",
]
exclude_patterns = ["_build", "build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
# The notebooks are Python notebooks; their language_info says pygments_lexer "ipython3",
# a lexer provided by the ipython_pygments_lexers package (installed with IPython >= 9).
highlight_language = "python3"

# -- MyST / MyST-NB ----------------------------------------------------------------------
nb_execution_mode = "off"  # render the committed outputs, never execute
myst_heading_anchors = 3  # "#tpu-initialisation" style slugs for h1-h3
myst_enable_extensions = ["colon_fence", "deflist"]
nb_merge_streams = True  # one block per stream instead of one per write()
# No committed cell ends in an error (pitfall cells catch and print theirs); ANSI codes in
# stream outputs go through myst-nb's "myst-ansi" lexer.

# -- HTML / sphinx-book-theme ------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = project
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "repository_url": f"https://github.com/{SETTINGS['repository']}",
    "repository_branch": SETTINGS["branch"],
    # Folder of this Sphinx project inside the repository (used by the edit/source buttons).
    # The notebooks are NOT under docs/ in the repository; see _fix_notebook_repo_paths.
    "path_to_docs": "docs",
    "use_repository_button": True,
    "use_source_button": True,
    "use_issues_button": False,
    "use_edit_page_button": False,
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "home_page_in_toc": True,
    "show_toc_level": 2,
}
# Without a default_mode, pydata-sphinx-theme's inline script stores mode "" and its JS logs
# "Got invalid theme mode: . Resetting to auto." to the console on a first visit.
html_context = {"default_mode": "auto"}

# sphinx-copybutton: a button on every code block and code cell, none on cell outputs
# (its default selector "div.highlight pre" also matches myst-nb's stream/traceback outputs).
copybutton_selector = "div.highlight pre:not(.cell_output pre)"
copybutton_prompt_text = r">>> |\.\.\. |\$ |In \[\d*\]: | {2,5}\.\.\.: "
copybutton_prompt_is_regexp = True


# -- Hooks -------------------------------------------------------------------------------
def _fix_notebook_repo_paths(app, pagename, templatename, context, doctree):
    """Notebook pages are built from docs/notebooks/X.ipynb, a copy of the repository's
    notebooks/X.ipynb.  sphinx-book-theme builds every repository link (Colab launch
    button, "show source") as <path_to_docs>/<pagename>.ipynb, i.e. docs/notebooks/X.ipynb,
    which does not exist in the repository.  Rewrite those URLs to notebooks/X.ipynb.
    Runs after the theme's handlers (priority 501)."""
    if not pagename.startswith("notebooks/"):
        return
    wrong = f"/{html_theme_options['path_to_docs'].strip('/')}/{pagename}"
    right = f"/{pagename}"

    def fix(buttons):
        for b in buttons:
            if "url" in b:
                b["url"] = b["url"].replace(wrong, right)
            fix(b.get("buttons", []))

    fix(context.get("header_buttons", []))


COLAB_BADGE_REMOTE = "https://colab.research.google.com/assets/colab-badge.svg"
COLAB_BADGE_LOCAL = "/_static/colab-badge.svg"  # leading "/" = relative to the docs folder


def _localise_colab_badges(app, doctree):
    """The notebooks' first cell shows an "Open In Colab" badge whose image is loaded from
    colab.research.google.com: the only network request the pages would make.  Point the
    image at a local copy instead (the notebooks themselves are untouched; the badge's
    link, to the notebook on Colab, stays as committed).  Runs on doctree-read before
    Sphinx's image collector (priority 500) so the local file is copied into _images/."""
    from docutils import nodes

    for img in doctree.findall(nodes.image):
        if img.get("uri") == COLAB_BADGE_REMOTE:
            img["uri"] = COLAB_BADGE_LOCAL
            img["candidates"] = {"*": COLAB_BADGE_LOCAL.lstrip("/")}


def _warn_unexecuted(app):
    """nb_execution_mode is "off": an unexecuted notebook would be published without any
    output.  Make that a (fatal under -W) warning."""
    from sphinx.util import logging

    for name in UNEXECUTED_NOTEBOOKS:
        logging.getLogger(__name__).warning(
            "notebook %s has no outputs: execute it (make record) before publishing", name
        )


# Inline code in tables (the cheat sheet, the surface page, the notebooks' paired TF1/TF2
# tables): Sphinx writes each space-separated piece of a literal as <span class="pre">, which
# basic.css keeps on one line, so a long call such as
# `tf.config.experimental_connect_to_cluster(resolver)` made its column as wide as itself and
# the table wider than the page.  _add_table_code_breaks gives those pieces break
# opportunities (<wbr>, which adds no character to copied or searched text) at punctuation
# only: before a dot followed by a name (not in 0.1), after an opening bracket, a comma, "="
# or "/", and between the words of a snake_case name of TABLE_CODE_LONG_NAME characters or
# more.  No word is ever broken (tests/site_browser.py checks it).
TABLE_CODE_LONG_NAME = 24
_TABLE = re.compile(r"<table\b.*?</table>", re.S)
_PRE_SPAN = re.compile(r'(<span class="pre">)([^<]*)(</span>)')
_PUNCTUATION_BREAK = re.compile(r"(?<=[(\[{,=/])(?=[^\s)\]},])|(?<=[\w)\]])(?=\.[^\W\d])")
_LONG_NAME = re.compile(rf"\w{{{TABLE_CODE_LONG_NAME},}}")
_SNAKE_BREAK = re.compile(r"(?<=[^\W_])_(?=[^\W_])")


def add_table_code_breaks(html: str) -> str:
    """`html` with <wbr> at the break points above, inside the tables' inline code only.
    The text between tags is HTML-escaped, and no character entity holds the punctuation
    matched (`&quot;` and `&#39;` are letters, digits, `#` and `;`)."""

    def piece(match: re.Match) -> str:
        start, text, end = match.groups()
        text = _LONG_NAME.sub(lambda name: _SNAKE_BREAK.sub("_<wbr>", name.group(0)), text)
        return start + _PUNCTUATION_BREAK.sub("<wbr>", text) + end

    return _TABLE.sub(lambda table: _PRE_SPAN.sub(piece, table.group(0)), html)


def _add_table_code_breaks(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = add_table_code_breaks(context["body"])


def setup(app):
    app.connect("builder-inited", _warn_unexecuted)
    app.connect("html-page-context", _fix_notebook_repo_paths, priority=900)
    app.connect("doctree-read", _localise_colab_badges, priority=400)
    app.connect("html-page-context", _add_table_code_breaks)
