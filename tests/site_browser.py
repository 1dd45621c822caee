"""Offline browser test of the built site: Python Playwright driving Debian's Chromium.

    PYTHONPATH=. python tests/site_browser.py [SITE_ROOT] [SHOTS_DIR]   (defaults: build/site, build/site-shots)

- serves SITE_ROOT on 127.0.0.1:<free port> from a thread (http.server),
- launches /usr/bin/chromium through Playwright's bundled driver (no browser download:
  `executable_path` is given, so `playwright install` is never needed),
- aborts and records every request that is not to the local server (= what the pages try
  to fetch from the network),
- loads the index, the cheat sheet, every notebook page and a search (and runs Sphinx's search
  for every TF1 name of the surface page, which must be among the results); checks code cells,
  outputs, tracebacks, tables, images (complete and naturalWidth > 0), copy buttons, the
  Colab launch link, heading anchors, console errors; the layout (at 1280 px): code keeps its
  lines (`white-space: pre`, as many rendered lines as text lines, so no continuation starts at
  column 0) and scrolls inside its own box when it must, a 100-character line fits a code cell,
  the article takes the page's width where there is no on-page contents, no word inside a
  table's inline code is broken across lines, nothing is wider than its box unless that box
  (or a wrapper around a table) scrolls, and the sidebar lists the notebooks by number in
  reading order; the result tables that cells print (helpers.compare.format_table) are HTML
  tables, as many as the committed outputs hold, with as many rows and their columns of
  numbers right-aligned, and no rule line of one is left in an output's text; saves full-page
  screenshots.
Exit code 0 when every check passes.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import sync_playwright

from tools.output_tables import Table, split_tables
from tools.project import NOTEBOOKS, ROOT, colab_url, notebook_toctree

# docs/conf.py lets a snake_case name of this many characters or more break between its words
# in a table (a <wbr> after each "_"); shorter names, and every word, stay on one line.
TABLE_CODE_LONG_NAME = int(
    re.search(r"^TABLE_CODE_LONG_NAME = (\d+)$", (ROOT / "docs" / "conf.py").read_text(), re.M)[1]
)
# ruff's line length: a line of code this long fits a code cell without scrolling at VIEWPORT.
CODE_LINE_LENGTH = 100
VIEWPORT = {"width": 1280, "height": 900}


def notebook_plots(notebook: dict) -> int:
    """How many images (plots) the committed notebook's outputs hold."""
    return sum(
        "image/png" in output.get("data", {})
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
    )


def notebook_tables(notebook: dict) -> dict:
    """The result tables in the committed notebook's stream outputs, as the site renders them
    (tools/output_tables.py, on each cell's stdout merged as myst-nb merges it): how many,
    their rows, their right-aligned (numeric) cells, header included; and whether a code cell
    calls format_table."""
    found = {"tables": 0, "rows": 0, "numeric_cells": 0, "calls_format_table": False}
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        found["calls_format_table"] |= "format_table(" in "".join(cell["source"])
        stdout = "".join(
            "".join(output["text"]).rstrip() + "\n"
            for output in cell.get("outputs", [])
            if output.get("output_type") == "stream" and output.get("name") == "stdout"
        )
        for table in split_tables(stdout):
            if isinstance(table, Table):
                found["tables"] += 1
                found["rows"] += len(table.rows)
                found["numeric_cells"] += sum(table.numeric) * (1 + len(table.rows))
    return found


def surface_names() -> list[str]:
    """Every TF1 name docs/surface.md has a row for (the first cell of its tables' rows)."""
    text = (ROOT / "docs" / "surface.md").read_text()
    return list(dict.fromkeys(re.findall(r"^\| `([^`]+)` \|", text, re.M)))  # once each


# Sphinx lists one result every 5 ms and writes its summary line after the last, whether it
# found pages or none (_finishSearch in searchtools.js): the list is read after that line.
SEARCH_DONE_JS = """() => {
  const summary = document.querySelector('#search-results p.search-summary');
  return !!summary && summary.innerText !== '';
}"""

# Sphinx's own search (searchtools.js: the query parsed and stemmed, then run on the index);
# the names whose results do not include the surface page
UNFOUND_NAMES_JS = """(names) => names.filter(name => {
  const results = Search._performSearch(...Search._parseQuery(name));
  return !results.some(result => result[0] === 'surface');
})"""

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
COLAB_PREFIX = colab_url("")  # every notebook page must launch its own notebook in Colab

PAGE_STATS_JS = """(longName) => {
  const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  const longestLine = e => (e.innerText || '').split('\\n')
    .reduce((a, b) => b.length > a.length ? b : a, '').slice(0, 80);
  const codeBoxes = () => [...document.querySelectorAll('article div.highlight pre')]
    .filter(pre => !pre.closest('div.cell_output'));
  const canvas = document.createElement('canvas').getContext('2d');
  const charWidth = e => { const s = getComputedStyle(e);
    canvas.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    return canvas.measureText('x'.repeat(100)).width / 100; };
  const imgs = [...document.querySelectorAll('article img, .bd-article img')];
  return {
    title: document.title,
    h1: (document.querySelector('article h1') || {}).textContent || null,
    cells: document.querySelectorAll('div.cell').length,
    code_inputs: document.querySelectorAll('div.cell_input').length,
    outputs: document.querySelectorAll('div.cell_output').length,
    stream_outputs: document.querySelectorAll('div.cell_output .output.stream, div.cell_output .output.text_plain').length,
    tracebacks: document.querySelectorAll('div.cell_output .output.traceback').length,
    raw_ansi_escapes: document.body.innerHTML.includes('\\u001b['),
    highlighted_tokens: document.querySelectorAll('div.cell_input .highlight span.k, div.cell_input .highlight span.n').length,
    tables: document.querySelectorAll('article table').length,
    table_rows: document.querySelectorAll('article table tbody tr').length,
    // the result tables of the outputs (tools/output_tables.py), their rows, their cells of
    // numbers and those not right-aligned, and the rule lines (dashes and spaces only) left in
    // an output's text, where a table was not turned into an HTML table
    output_tables: document.querySelectorAll('div.cell_output table').length,
    output_table_rows: document.querySelectorAll('div.cell_output table tbody tr').length,
    numeric_cells: document.querySelectorAll('div.cell_output table .numeric').length,
    numeric_cells_not_right: [...document.querySelectorAll('div.cell_output table .numeric')]
      .filter(c => getComputedStyle(c).textAlign !== 'right').map(c => c.innerText).slice(0, 5),
    output_rule_lines: [...document.querySelectorAll('div.cell_output pre')]
      .flatMap(pre => pre.innerText.split('\\n')).filter(l => /^-+( +-+)*$/.test(l)),
    images: imgs.map(i => ({src: i.getAttribute('src'), complete: i.complete,
                            w: i.naturalWidth, h: i.naturalHeight})),
    copy_buttons: document.querySelectorAll('div.cell_input button.copybtn').length,
    output_copy_buttons: document.querySelectorAll('div.cell_output button.copybtn').length,
    colab_links: [...document.querySelectorAll('a[href*="colab.research.google.com"]')].map(a => a.href),
    launch_button_visible: (() => { const b = document.querySelector('.dropdown-launch-buttons button');
                                    return !!b && b.offsetWidth > 0 && b.offsetHeight > 0; })(),
    stylesheets_applied: getComputedStyle(document.body).fontFamily,
    overflowing_x: document.documentElement.scrollWidth > document.documentElement.clientWidth,
    // content wider than its box where the box does not scroll: cut off at the right edge or
    // sticking out of it (a box that scrolls sideways on purpose, overflow-x auto or scroll,
    // is allowed), each with its longest line
    cut_off: [...document.querySelectorAll(
        'article.bd-article, article pre, article div.highlight, div.cell_output, article table, ' +
        'article .pst-scrollable-table-container')]
      .filter(e => e.scrollWidth > e.clientWidth + 1 && !scrolls(e))
      .map(e => `${e.tagName.toLowerCase()}.${e.classList[0] || ''} ${e.scrollWidth}px in ` +
                `${e.clientWidth}px: ${longestLine(e)}`),
    // tables wider than the box they sit in, unless a wrapper between them and the article
    // scrolls sideways
    wide_tables: [...document.querySelectorAll('article table')]
      .filter(t => t.getBoundingClientRect().width > t.parentElement.clientWidth + 1)
      .filter(t => { for (let e = t.parentElement; e && e.tagName !== 'ARTICLE'; e = e.parentElement)
                       if (scrolls(e)) return false;
                     return true; })
      .map(t => `${Math.round(t.getBoundingClientRect().width)}px in ` +
                `${t.parentElement.clientWidth}px: ${(t.innerText || '').slice(0, 60)}`),
    // code boxes (cell inputs, code blocks) that wrap: white-space other than pre, or more
    // rendered lines than the code has (a continuation starting at column 0)
    wrapped_code: codeBoxes().filter(pre => {
        const s = getComputedStyle(pre);
        const lines = pre.innerText.replace(/\\n$/, '').split('\\n').length;
        const rendered = Math.round((pre.clientHeight - parseFloat(s.paddingTop)
                                     - parseFloat(s.paddingBottom)) / parseFloat(s.lineHeight));
        return s.whiteSpace !== 'pre' || rendered > lines;
      }).map(pre => `${getComputedStyle(pre).whiteSpace}: ${longestLine(pre)}`),
    // the narrowest code cell, in characters of its font
    code_box_chars: [...document.querySelectorAll('div.cell_input pre')].map(pre => {
        const s = getComputedStyle(pre);
        const inner = pre.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
        return Math.floor(inner / charWidth(pre));
      }).reduce((a, b) => a === null || b < a ? b : a, null),
    // words of a table's inline code (letters and digits between punctuation; a name shorter
    // than longName characters counts as one word) rendered on more than one line. A code
    // element's text is split into several text nodes by conf.py's <wbr>s: words are found in
    // the whole text, and a word's lines are the distinct tops of its rectangles.
    broken_words: [...document.querySelectorAll('article table code')].flatMap(code => {
        const nodes = [], walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
        let text = '';
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          nodes.push([node, text.length]);
          text += node.data;
        }
        const at = i => { const [node, start] = nodes.findLast(([, start]) => start <= i);
                          return [node, i - start]; };
        const lines = rects => rects.filter(r => r.width > 0).reduce((tops, r) =>
          tops.some(top => Math.abs(top - r.top) < r.height / 2) ? tops : [...tops, r.top], []).length;
        const broken = [];
        for (const name of text.matchAll(/\\w+/g)) {
          const words = name[0].length < longName ? [name]
            : [...name[0].matchAll(/[^\\W_]+/g)].map(w => ({0: w[0], index: name.index + w.index}));
          for (const word of words) {
            const range = document.createRange(), [last, offset] = at(word.index + word[0].length - 1);
            range.setStart(...at(word.index));
            range.setEnd(last, offset + 1);
            if (lines([...range.getClientRects()]) > 1) broken.push(name[0]);
          }
        }
        return broken;
      }),
    content_width: Math.round((document.querySelector('.bd-content') || {clientWidth: 0}).clientWidth),
    article_width: Math.round((document.querySelector('.bd-article-container') || {clientWidth: 0}).clientWidth),
    secondary_sidebar: !!document.querySelector('.bd-sidebar-secondary'),
    sidebar_titles: [...document.querySelectorAll('.bd-sidebar-primary a.reference')]
      .map(a => a.textContent.trim()),
    sidebar_links: document.querySelectorAll('.bd-sidebar-primary a.reference').length,
  };
}"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output readable
        pass


def serve(root: Path):
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def check_in_browser(root: Path, shots: Path) -> dict:
    """Load every page in Chromium, check what it renders, save screenshots; the report."""
    root, shots = root.resolve(), shots.resolve()
    shots.mkdir(parents=True, exist_ok=True)
    notebooks = sorted((root / "notebooks").glob("*.html"))
    t0 = time.perf_counter()
    httpd, base = serve(root)
    failures: list[str] = []
    external: dict[str, set[str]] = {}
    results = {}

    def check(cond: bool, msg: str):
        if not cond:
            failures.append(msg)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        t_launch = time.perf_counter() - t0
        context = browser.new_context(viewport=VIEWPORT)
        current = {"page": ""}

        def route(r):
            url = r.request.url
            if url.startswith(base) or url.startswith(("data:", "blob:", "about:")):
                r.continue_()
            else:
                external.setdefault(url, set()).add(current["page"])
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        console_errors: list[str] = []
        page.on(
            "console",
            lambda m: m.type == "error" and console_errors.append(f"{current['page']}: {m.text}"),
        )
        page.on("pageerror", lambda e: console_errors.append(f"{current['page']}: {e}"))
        failed_local: list[str] = []
        page.on("requestfailed", lambda r: r.url.startswith(base) and failed_local.append(r.url))
        page.on(
            "response",
            lambda r: (
                r.url.startswith(base)
                and r.status >= 400
                and failed_local.append(f"{r.status} {r.url}")
            ),
        )

        targets = ["index.html", "finder.html", "cheatsheet.html", "surface.html"] + [
            f"notebooks/{p.name}" for p in notebooks
        ]
        for rel in targets:
            current["page"] = rel
            t = time.perf_counter()
            page.goto(base + rel, wait_until="load")
            page.wait_for_load_state("networkidle")
            stats = page.evaluate(PAGE_STATS_JS, TABLE_CODE_LONG_NAME)
            shot = shots / (rel.replace("/", "__").replace(".html", "") + ".png")
            page.screenshot(path=str(shot), full_page=True)
            stats["seconds"] = round(time.perf_counter() - t, 2)
            stats["screenshot"] = str(shot)
            results[rel] = stats

            check(stats["sidebar_links"] > 0, f"{rel}: no navigation sidebar")
            check(not stats["cut_off"], f"{rel}: cut off at the right edge: {stats['cut_off'][:3]}")
            check(not stats["overflowing_x"], f"{rel}: the page scrolls sideways")
            check(
                not stats["wide_tables"],
                f"{rel}: table wider than its box, with no scrolling wrapper: "
                f"{stats['wide_tables'][:3]}",
            )
            check(not stats["wrapped_code"], f"{rel}: code wraps: {stats['wrapped_code'][:3]}")
            check(
                not stats["broken_words"],
                f"{rel}: table code broken inside a word: {stats['broken_words'][:5]}",
            )
            check(
                stats["secondary_sidebar"] or stats["article_width"] >= stats["content_width"] - 1,
                f"{rel}: the article is {stats['article_width']}px of {stats['content_width']}px",
            )
            check(
                "sans" in stats["stylesheets_applied"].lower()
                or "apple-system" in stats["stylesheets_applied"],
                f"{rel}: theme CSS not applied ({stats['stylesheets_applied']})",
            )
            for img in stats["images"]:
                check(img["complete"] and img["w"] > 0, f"{rel}: image not rendered: {img['src']}")
            if rel.startswith("notebooks/"):
                name = rel.split("/")[1].replace(".html", ".ipynb")
                notebook = json.loads((NOTEBOOKS / name).read_text())  # the committed one
                check(stats["cells"] > 0 and stats["code_inputs"] > 0, f"{rel}: no code cells")
                check(stats["outputs"] > 0, f"{rel}: no cell outputs")
                check(stats["highlighted_tokens"] > 0, f"{rel}: code not syntax highlighted")
                check(not stats["raw_ansi_escapes"], f"{rel}: raw ANSI escape codes in page")
                check(
                    stats["copy_buttons"] == stats["code_inputs"]
                    and stats["output_copy_buttons"] == 0,
                    f"{rel}: {stats['copy_buttons']} copy buttons for "
                    f"{stats['code_inputs']} code cells, {stats['output_copy_buttons']} on outputs",
                )
                check(
                    COLAB_PREFIX + name in stats["colab_links"],
                    f"{rel}: no Colab launch link to {COLAB_PREFIX + name}: {stats['colab_links']}",
                )
                check(stats["launch_button_visible"], f"{rel}: launch (rocket) button hidden")
                check(
                    (stats["code_box_chars"] or 0) >= CODE_LINE_LENGTH,
                    f"{rel}: a code cell shows {stats['code_box_chars']} characters a line, "
                    f"not {CODE_LINE_LENGTH}, at {VIEWPORT['width']}px",
                )
                tables = notebook_tables(notebook)
                check(
                    tables["tables"] > 0 or not tables["calls_format_table"],
                    f"{rel}: {name} prints result tables (format_table) but its committed "
                    "outputs hold none in format_table's layout (a header, a rule of dashes, "
                    "the rows, the rule again): re-record it",
                )
                check(
                    (stats["output_tables"], stats["output_table_rows"], stats["numeric_cells"])
                    == (tables["tables"], tables["rows"], tables["numeric_cells"]),
                    f"{rel}: {stats['output_tables']} HTML tables of {stats['output_table_rows']}"
                    f" rows and {stats['numeric_cells']} numeric cells in the outputs, the "
                    f"notebook's outputs print {tables['tables']} of {tables['rows']} rows and "
                    f"{tables['numeric_cells']} numeric cells",
                )
                check(
                    not stats["output_rule_lines"],
                    f"{rel}: a table's rule line left in an output's text (not an HTML table): "
                    f"{stats['output_rule_lines'][:3]}",
                )
                check(
                    not stats["numeric_cells_not_right"],
                    f"{rel}: numbers in an output's table not right-aligned: "
                    f"{stats['numeric_cells_not_right']}",
                )
                plots = [i for i in stats["images"] if "colab-badge" not in (i["src"] or "")]
                plot_count = notebook_plots(notebook)
                check(
                    len(plots) >= plot_count,
                    f"{rel}: {len(plots)} images rendered, the notebook has {plot_count} plots",
                )
            else:
                check(stats["tables"] > 0, f"{rel}: no table rendered")
            if rel == "index.html":  # the titles docs/index.md gives (test_site checks them)
                numbered = [t for t in stats["sidebar_titles"] if re.match(r"\d\d ", t)]
                check(
                    numbered == [title for title, _ in notebook_toctree()],
                    f"{rel}: the sidebar's notebook titles are not the index's, in its order: "
                    f"{stats['sidebar_titles']}",
                )

        # The launch dropdown opens and shows the Colab entry.
        current["page"] = "notebooks/00_setup.html (launch menu)"
        page.goto(base + "notebooks/00_setup.html", wait_until="load")
        page.click(".dropdown-launch-buttons button")
        colab = page.locator(".dropdown-launch-buttons a.dropdown-item", has_text="Colab")
        colab.wait_for(state="visible", timeout=5000)
        results["launch_menu"] = {"colab_href": colab.get_attribute("href")}
        page.screenshot(
            path=str(shots / "launch_menu.png"), clip={"x": 0, "y": 0, "width": 1280, "height": 400}
        )

        # The copy button of the first code cell puts the cell's code on the clipboard.
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base.rstrip("/"))
        page.hover("div.cell_input pre")
        page.click("div.cell_input button.copybtn")
        copied = page.evaluate("navigator.clipboard.readText()")
        expected = page.inner_text("div.cell_input pre")
        results["copy_button"] = {"copied_chars": len(copied), "first_line": copied.splitlines()[0]}
        check(copied.strip() == expected.strip(), f"copy button copied {copied[:80]!r}")

        # A heading anchor from the cheat sheet lands on the heading.
        current["page"] = "cheatsheet.html -> anchor"
        page.goto(base + "cheatsheet.html", wait_until="load")
        page.click('a[href="notebooks/00_setup.html#tpu-initialisation"]')
        page.wait_for_load_state("load")
        urlp = urlsplit(page.url)
        in_view = page.evaluate("""() => { const e = document.getElementById('tpu-initialisation');
            if (!e) return null; const r = e.getBoundingClientRect();
            return {top: r.top, inView: r.top >= -5 && r.top < window.innerHeight}; }""")
        results["anchor"] = {"url": urlp.path + "#" + urlp.fragment, "heading": in_view}
        check(
            bool(in_view) and in_view["inView"],
            f"anchor #tpu-initialisation not scrolled into view: {in_view}",
        )

        # Search (searchindex.js is local).
        current["page"] = "search.html"
        page.goto(base + "search.html?q=TPUClusterResolver", wait_until="load")
        page.wait_for_function(SEARCH_DONE_JS, timeout=15000)
        hits = page.eval_on_selector_all(
            "#search-results ul.search li a", "els => els.map(e => e.getAttribute('href'))"
        )
        results["search"] = {"query": "TPUClusterResolver", "hits": hits}
        check(any("00_setup" in h for h in hits), f"search found no 00_setup hit: {hits}")
        names = surface_names()
        unfound = page.evaluate(UNFOUND_NAMES_JS, names)
        results["search"]["surface_names"] = {"searched": len(names), "unfound": unfound}
        check(
            len(names) > 100 and not unfound, f"search does not find on the surface page: {unfound}"
        )
        page.screenshot(path=str(shots / "search.png"), full_page=True)

        browser.close()
    httpd.shutdown()
    total = time.perf_counter() - t0

    check(not failed_local, f"local requests failed: {failed_local}")
    check(not console_errors, f"console errors: {console_errors}")
    report = {
        "chromium": CHROMIUM,
        "launch_seconds": round(t_launch, 2),
        "total_seconds": round(total, 2),
        "pages": results,
        "external_requests_blocked": {u: sorted(p) for u, p in external.items()},
        "console_errors": console_errors,
        "failures": failures,
    }
    (shots / "results.json").write_text(json.dumps(report, indent=2))
    return report


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else "build/site")
    shots = Path(argv[1] if len(argv) > 1 else "build/site-shots")
    report = check_in_browser(root, shots)
    for failure in report["failures"]:
        print("FAIL", failure)
    print(f"browser check: {len(report['failures'])} failure(s), {report['total_seconds']} s")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
