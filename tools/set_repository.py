"""`make set-repository SLUG=owner/name`: point the collection at another GitHub repository.

The slug in pyproject.toml ([tool.tpu_migration] repository) is the one source: Colab links
and the Colab set-up cells of the notebooks are derived from it. This rewrites all of them
together (a fork needs only this), and the convention tests fail if any disagree.
"""

from __future__ import annotations

import re
import sys

from tools.project import ROOT, notebook_paths, repository

SLUG = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def rewrite(text: str, old: str, new: str) -> str:
    """Replace `github.com/OLD` (Colab links and pip URLs) where OLD is the whole slug."""
    return re.sub(rf"(github\.com/|github/){re.escape(old)}(?=[/@\"')\s]|$)", rf"\g<1>{new}", text)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not SLUG.match(argv[0]):
        print("usage: make set-repository SLUG=owner/name", file=sys.stderr)
        return 2
    old, new = repository(), argv[0]
    files = [ROOT / "pyproject.toml", ROOT / "README.md", *notebook_paths()]
    for path in files:
        text = path.read_text()
        updated = text.replace(f'repository = "{old}"', f'repository = "{new}"')
        updated = rewrite(updated, old, new)
        if updated != text:
            path.write_text(updated)
            print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
