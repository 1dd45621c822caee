"""Offline internal-link check for a built Sphinx HTML site.

For every *.html under the site root it collects
  - <a href>, <link href>, <area href>            (navigation / stylesheets)
  - <img src>, <script src>, <source src>, <iframe src>, srcset candidates
and verifies that each *relative* target file exists inside the site and, when the URL has a
#fragment, that the target HTML page has an element with that id (or <a name=...>).

External URLs (http:, https:, mailto:, javascript:, data:, //host) are not fetched.  They are
listed in two groups: resources the browser would LOAD when showing a page (img/script/link
stylesheet... = network requests), and plain links a reader may click.

Usage: PYTHONPATH=. python tests/site_links.py [SITE_ROOT] [--verbose]
(default SITE_ROOT: build/site)
Exit code: 0 if no broken internal link, 1 otherwise. Standard library only.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# (tag, attribute) pairs whose URL is fetched by the browser when the page is shown
LOADED = {
    ("img", "src"),
    ("script", "src"),
    ("source", "src"),
    ("iframe", "src"),
    ("img", "srcset"),
    ("source", "srcset"),
    ("video", "src"),
    ("audio", "src"),
    ("embed", "src"),
    ("object", "data"),
    ("video", "poster"),
}
LINK_ATTRS = {("a", "href"), ("area", "href"), ("link", "href")}
# <link rel=...> values that make the browser fetch the href right away
LOADING_RELS = {
    "stylesheet",
    "icon",
    "preload",
    "modulepreload",
    "manifest",
    "apple-touch-icon",
    "shortcut",
}


class PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.urls: list[tuple[str, str, str, bool, int]] = []  # tag, attr, url, loaded, line

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        line = self.getpos()[0]
        for attr, value in attrs:
            if value is None:
                continue
            if (tag, attr) in LINK_ATTRS:
                loaded = tag == "link" and bool(
                    LOADING_RELS & set((a.get("rel") or "").lower().split())
                )
                self.urls.append((tag, attr, value.strip(), loaded, line))
            elif (tag, attr) in LOADED:
                if attr == "srcset":
                    for cand in value.split(","):
                        if cand.strip():
                            self.urls.append((tag, attr, cand.split()[0], True, line))
                else:
                    self.urls.append((tag, attr, value.strip(), True, line))

    handle_startendtag = handle_starttag


def is_external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme) or url.startswith("//")


@dataclass
class LinkReport:
    pages: int = 0
    checked: int = 0
    anchors: int = 0
    broken: list[str] = field(default_factory=list)
    external_loaded: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    external_links: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def check_site(root: Path) -> LinkReport:
    """Every relative link, image and script of every page, and every #anchor, resolved."""
    # _static/ holds the themes' Jinja template fragments (webpack-macros.html ...), copied
    # verbatim as static files: they are not pages and their {{ pathto(...) }} URLs are not
    # links. _sources/ holds the page sources for download.
    skip = {"_static", "_sources"}
    pages = sorted(p for p in root.rglob("*.html") if not skip & set(p.relative_to(root).parts[:1]))
    parsed: dict[Path, PageParser] = {}

    def parse(path: Path) -> PageParser:
        if path not in parsed:
            p = PageParser()
            p.feed(path.read_text(encoding="utf-8", errors="replace"))
            parsed[path] = p
        return parsed[path]

    report = LinkReport(pages=len(pages))
    broken = report.broken
    for page in pages:
        rel_page = page.relative_to(root)
        for tag, attr, url, loaded, line in parse(page).urls:
            if not url or url.startswith(("javascript:", "data:", "mailto:")):
                continue
            if is_external(url):
                external = report.external_loaded if loaded else report.external_links
                external[url].add(str(rel_page))
                continue
            report.checked += 1
            parts = urlsplit(url)
            where = f"{rel_page}:{line} <{tag} {attr}={url!r}>"
            if parts.path:
                target = (page.parent / unquote(parts.path)).resolve()
                if target.is_dir():
                    target = target / "index.html"
            else:
                target = page  # "#frag" or "?query" on the same page
            try:
                target.relative_to(root)
            except ValueError:
                broken.append(f"{where}: points outside the site ({target})")
                continue
            if not target.is_file():
                broken.append(f"{where}: missing file {target.relative_to(root)}")
                continue
            frag = unquote(parts.fragment)
            if frag and target.suffix == ".html":
                report.anchors += 1
                if frag not in parse(target).ids:
                    broken.append(f"{where}: no id {frag!r} in {target.relative_to(root)}")
    return report


def main(argv: list[str]) -> int:
    verbose = "--verbose" in argv
    args = [a for a in argv if not a.startswith("--")]
    root = Path(args[0] if args else "build/site").resolve()
    if not root.is_dir():
        print(f"no such site root: {root}", file=sys.stderr)
        return 2
    report = check_site(root)
    broken, checked, anchors, pages = report.broken, report.checked, report.anchors, report.pages
    external_loaded, external_links = report.external_loaded, report.external_links
    print(f"site: {root}")
    print(
        f"pages: {pages}, internal URLs checked: {checked} "
        f"(with #anchor: {anchors}), broken: {len(broken)}"
    )
    for b in broken:
        print("  BROKEN", b)
    print(f"external resources the pages would LOAD (network requests): {len(external_loaded)}")
    for url, where in sorted(external_loaded.items()):
        print(f"  {url}  <- {', '.join(sorted(where))}")
    print(f"external links (only followed on click): {len(external_links)}")
    if verbose:
        for url, where in sorted(external_links.items()):
            print(f"  {url}  <- {', '.join(sorted(where))}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
