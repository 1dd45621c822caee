"""nbval's comparison made tolerant of the last bits, and its runs recorded for `make compat`.

**The comparison.** nbval compares each output with the committed one character for
character. The committed outputs come from one CPU; another CPU (oneDNN picks kernels by
instruction set) moves float results in their last bits, and a GPU or a TPU may (not run
here). So before nbval's own comparison, each pair of text outputs (a stream, or an execution
result's text/plain; other types stay exact) is compared by `tools.output_compare`: words and
integers exact, spaces aside, floating-point numbers within `RTOL`, measured differences
printed with their bound (`7.45e-09 (≤ 1e-06)`) within that bound. A pair that matches so is
handed to nbval as equal; one that does not is left to nbval, which fails the cell, and the
failure starts with what moved beyond the tolerance: the notebook, the cell (nbval's index of
code cells, from 0), the line, the old and the new text (the first line whose words differ,
or each number that moved too far). CONTRIBUTING.md says
why this design and not a sanitizer.

**The lanes.** Each notebook's outputs come from one lane (`tools.project.recording_lane`):
nbval in a lane collects only the notebooks recorded there, the others' (Keras 3 on JAX in the
current lane) are left to that lane's nbval run.

**The records.**
nbval runs every notebook at its defaults in the lane it was recorded in and compares each
output with the committed one, so a notebook whose cells all pass ran as its committed outputs
say: the
runtime line ("Runtime: CPU | MirroredStrategy with 4 replicas ...") tells on what, and with
how many replicas. The papermill cases therefore need not repeat the defaults, and the
table (tools.compat_table) still shows them. The records go to build/compat/LANE-nbval.jsonl,
replacing that lane's previous nbval records: a file of their own, because `make test` runs
nbval (`make test-nbval`) beside the lane's papermill cases, which write LANE.jsonl.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import tempfile
from importlib.metadata import version
from pathlib import Path

import nbformat

from tools.output_compare import compare_text
from tools.project import recording_lane

ROOT = Path(__file__).resolve().parent
NOTEBOOK_PASSED: dict[str, bool] = {}
_NBVAL_COMPARE_OUTPUTS = None  # nbval's own comparison, set in pytest_configure
_NBVAL_KERNEL_TMP: Path | None = None  # the TMPDIR of nbval's kernels, removed at the end


def _text_slots(outputs) -> dict[str, list[tuple[dict, str]]]:
    """Each output's text by nbval's comparison key (a stream's name, or text/plain), in order."""
    slots: dict[str, list[tuple[dict, str]]] = {}
    for output in outputs:
        if output.get("output_type") == "stream":
            slots.setdefault(output["name"], []).append((output, "text"))
        elif "text/plain" in output.get("data", {}):
            slots.setdefault("text/plain", []).append((output["data"], "text/plain"))
    return slots


def tolerant_compare_outputs(self, test, ref, skip_compare=None):
    """nbval's compare_outputs, after the numbers that moved within tolerance are aligned."""
    test = copy.deepcopy(test)
    ref_slots = _text_slots(ref)
    reports = []
    for key, test_slot in _text_slots(test).items():
        for (test_holder, field), (ref_holder, ref_field) in zip(
            test_slot, ref_slots.get(key, []), strict=False
        ):
            new, old = test_holder[field], ref_holder[ref_field]
            if new == old:
                continue
            mismatches = compare_text(self.sanitize(old), self.sanitize(new))
            if not mismatches:
                test_holder[field] = old
            notebook = Path(str(self.fspath)).name
            reports += [f"{notebook}, cell {self.cell_num}: {m.describe()}" for m in mismatches]
    equal = _NBVAL_COMPARE_OUTPUTS(self, test, ref, skip_compare)
    if not equal and reports:
        self.comparison_traceback[:0] = ["Numbers or text beyond the tolerance:", *reports]
    return equal


def pytest_configure(config) -> None:
    global _NBVAL_COMPARE_OUTPUTS, _NBVAL_KERNEL_TMP
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:  # a lane without nbval runs no notebook comparison
        return
    if config.getoption("nbval", False):
        # nbval ends each kernel with `shutdown_kernel(now=True)` (nbval/kernel.py), a kill, so
        # the removal a notebook registers for its temporary folders at exit never runs: the
        # kernels get a folder of their own for TMPDIR, removed when the session ends.
        _NBVAL_KERNEL_TMP = Path(tempfile.mkdtemp(prefix="nbval-kernels-"))
        os.environ["TMPDIR"] = str(_NBVAL_KERNEL_TMP)
    if IPyNbCell.compare_outputs is not tolerant_compare_outputs:
        _NBVAL_COMPARE_OUTPUTS = IPyNbCell.compare_outputs
        IPyNbCell.compare_outputs = tolerant_compare_outputs


def pytest_ignore_collect(collection_path, config) -> bool | None:
    """Under nbval, leave out the notebooks that another lane records (None: pytest decides)."""
    if not (config.getoption("nbval", False) and collection_path.suffix == ".ipynb"):
        return None
    lane = os.environ.get("TPU_MIGRATION_LANE", "reference")
    return True if recording_lane(collection_path) != lane else None


def pytest_runtest_logreport(report) -> None:
    path = report.nodeid.split("::")[0]
    if not (path.startswith("notebooks/") and path.endswith(".ipynb")):
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
    if _NBVAL_KERNEL_TMP is not None:
        shutil.rmtree(_NBVAL_KERNEL_TMP, ignore_errors=True)
    if not NOTEBOOK_PASSED or os.environ.get("TPU_MIGRATION_NBVAL_RECORDS") == "0":
        return
    lane = os.environ.get("TPU_MIGRATION_LANE", "reference")
    records = ROOT / "build" / "compat" / f"{lane}-nbval.jsonl"
    records.parent.mkdir(parents=True, exist_ok=True)
    ran = [
        json.dumps(nbval_record(ROOT / path, passed, lane))
        for path, passed in sorted(NOTEBOOK_PASSED.items())
    ]
    records.write_text("".join(f"{line}\n" for line in ran))
