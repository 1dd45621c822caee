"""Record nbval's runs for the README's compatibility table, beside the papermill runs.

nbval runs every notebook at its defaults in the reference lane and compares each output with
the committed one, so a notebook whose cells all pass ran as its committed outputs say: the
runtime line ("Runtime: CPU | MirroredStrategy with 8 replicas ...") tells on what, and with
how many replicas. The papermill cases therefore need not repeat the defaults, and the
table (tools.compat_table) still shows them. The records join the papermill ones in
build/compat/LANE.jsonl, replacing the previous nbval records of that lane.
"""

from __future__ import annotations

import json
import os
import re
from importlib.metadata import version
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent
NOTEBOOK_PASSED: dict[str, bool] = {}


def pytest_runtest_logreport(report) -> None:
    path = report.nodeid.split("::")[0]
    if not path.endswith(".ipynb"):
        return
    NOTEBOOK_PASSED[path] = NOTEBOOK_PASSED.get(path, True) and not report.failed


def committed_runtime_line(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            found = re.search(r"^Runtime: .*$", output.get("text", ""), flags=re.MULTILINE)
            if found:
                return found.group(0)
    return ""


def nbval_record(path: Path, passed: bool, lane: str) -> dict:
    line = committed_runtime_line(path)
    kind = re.match(r"Runtime: (TPU|GPU|CPU)\b", line)
    replicas = re.search(r" with (\d+) replica", line)
    return {
        "notebook": path.name,
        "lane": lane,
        "kind": kind.group(1) if kind else "CPU",
        "replicas": int(replicas.group(1)) if replicas else None,
        "expected_error": None,
        "passed": passed,
        "tensorflow": version("tensorflow"),
        "keras": version("keras"),
        "source": "nbval",
    }


def pytest_sessionfinish(session) -> None:
    if not NOTEBOOK_PASSED:
        return
    lane = os.environ.get("TPU_MIGRATION_LANE", "reference")
    records = ROOT / "build" / "compat" / f"{lane}.jsonl"
    records.parent.mkdir(parents=True, exist_ok=True)
    kept = []
    if records.exists():
        lines = [line for line in records.read_text().splitlines() if line]
        kept = [line for line in lines if json.loads(line).get("source") != "nbval"]
    ran = [
        json.dumps(nbval_record(ROOT / path, passed, lane))
        for path, passed in sorted(NOTEBOOK_PASSED.items())
    ]
    records.write_text("".join(f"{line}\n" for line in kept + ran))
