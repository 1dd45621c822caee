"""`make compat`: the compatibility table in CONTRIBUTING.md, generated from what the tests ran.

tests/test_notebooks.py records every papermill run of a notebook (lane, runtime kind,
replicas, whether it passed or stopped with its expected message, the TensorFlow and Keras
versions) in build/compat/LANE.jsonl, and conftest.py nbval's runs in
build/compat/LANE-nbval.jsonl. This turns those records into the notebooks x lanes x
runtimes table between the markers in CONTRIBUTING.md (a column per lane, each cell naming the
runtimes), with a legend that names each lane's versions. Runtimes no test ran on are marked
as not verified, never assumed.

    python -m tools.compat_table          # rewrite the table in CONTRIBUTING.md
    python -m tools.compat_table --check  # fail if CONTRIBUTING.md disagrees with the records
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from helpers.colab import TENSORFLOW_VERSION as COLAB_TENSORFLOW
from tools.project import ROOT, notebook_paths

RECORDS = ROOT / "build" / "compat"
# Runs on an accelerator machine no test lane has (tools.device_run, e.g. notebook 11 on a lent
# GPU), committed: build/compat is made again by every `make test`, these are not.
DEVICE_RECORDS = ROOT / "compat" / "device_runs.jsonl"
TABLE_FILE = ROOT / "CONTRIBUTING.md"
START = "<!-- compatibility-table:start -->"
END = "<!-- compatibility-table:end -->"
# Column names, short enough for the site's page width; the legend says what each one is.
LANES = {
    "reference": "TF 2.15",
    "colab": "TF {} (Colab)".format(".".join(COLAB_TENSORFLOW.split(".")[:2])),
    "current": "newest TF",
}
KINDS = ("CPU", "GPU", "TPU")
# The errors with which a notebook stops at once in a lane that cannot run it: no
# tf.estimator (TF 2.16 on), or no Keras 3 with JAX.
CLEAR_STOPS = ("EstimatorUnavailableError", "BackendUnavailableError")
# `make test-nbval` and `make test-nbval-current` run nbval in these lanes, each over the
# notebooks recorded there (conftest.py records the runs).
NBVAL_LANES = ("reference", "current")


def read_records(folder: Path = RECORDS, device: Path = DEVICE_RECORDS) -> list[dict]:
    """The papermill runs of every lane (LANE.jsonl), nbval's (LANE-nbval.jsonl) and the
    committed runs on accelerator machines (`device`), if any."""
    records = []
    if device.exists():
        records += [json.loads(line) for line in device.read_text().splitlines() if line]
    for name in [*LANES, *(f"{lane}-nbval" for lane in NBVAL_LANES)]:
        path = folder / f"{name}.jsonl"
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: run `make test` (every lane) before generating the table"
            )
        records += [json.loads(line) for line in path.read_text().splitlines() if line]
    return records


def cell(runs: list[dict]) -> str:
    """One table cell: what the runs of one notebook on one lane and runtime showed."""
    if not runs:
        return "not verified"
    good = [run for run in runs if run["expected_error"] is None]
    stops = [run for run in runs if run["expected_error"] in CLEAR_STOPS]
    failed = [run for run in runs if not run["passed"]]
    if failed:
        return f"fails ({len(failed)} of {len(runs)} runs)"
    if good:
        replicas = sorted({run["replicas"] for run in good if run["replicas"]})
        noun = "replica" if replicas == [1] else "replicas"
        counts = f" ({', '.join(map(str, replicas))} {noun})" if replicas else ""
        return f"runs{counts}"
    if stops:
        return "stops with a clear message"
    return "only bad parameters tested"


def versions(records: list[dict], lane: str) -> str:
    """The versions a lane's runs recorded, e.g. "TensorFlow 2.20.0, Keras 3.15.1"."""
    lane_runs = [r for r in records if r["lane"] == lane and r.get("runner") != "tools.device_run"]
    found = sorted({(r.get("tensorflow"), r.get("keras")) for r in lane_runs})
    named = [f"TensorFlow {tf}, Keras {keras}" for tf, keras in found if tf and keras]
    return "; ".join(named) or "versions not recorded"


def device_note(records: list[dict]) -> list[str]:
    """A sentence for each accelerator that tools.device_run ran a notebook on."""
    runs = [r for r in records if r.get("runner") == "tools.device_run"]
    return [
        f"- {r['kind']} in the {LANES[r['lane']]} column: `{r['notebook']}` run by "
        f"`tools/device_run.py` on {r.get('machine') or 'a lent machine'} on {r['date']}, with "
        f"JAX {r['jax']} and Keras {r['keras']}, "
        + (f"TensorFlow {r['tensorflow']}" if r.get("tensorflow") else "without TensorFlow")
        + (", passed" if r["passed"] else ", failed")
        + "."
        for r in runs
    ]


def legend(records: list[dict]) -> str:
    reference, colab, current = (versions(records, lane) for lane in LANES)
    return "\n".join(
        [
            f"- **{LANES['reference']}**: the reference lane ({reference}, with `tf.estimator`).",
            f"- **{LANES['colab']}**: the Colab lane ({colab}), the release that `helpers.colab` "
            "installs on a Colab TPU runtime and that Colab's CPU/GPU images ship, tested with "
            "its CPU build on Python 3.11 (Colab's Python is newer).",
            f"- **{LANES['current']}**: the current lane, the newest release ({current} at the "
            "last run).",
            "",
            "Without `tf.estimator` (TensorFlow 2.16 and newer) notebook 01 stops at once and "
            "says why; without JAX and Keras 3 (only the current lane has both) notebook 11 "
            "does. CPU runs use virtual devices standing in for TPU cores. A runtime no test "
            'has run on is marked "not verified".',
            *device_note(records),
        ]
    )


def lane_cell(runs: dict[tuple[str, str, str], list[dict]], notebook: str, lane: str) -> str:
    """One notebook on one lane, runtime by runtime; runtimes with the same verdict share it:
    "CPU: runs (1, 2, 8 replicas); GPU, TPU: not verified"."""
    kinds_by_verdict: dict[str, list[str]] = defaultdict(list)
    for kind in KINDS:
        kinds_by_verdict[cell(runs[(notebook, lane, kind)])].append(kind)
    return "; ".join(
        f"{', '.join(kinds)}: {verdict}" for verdict, kinds in kinds_by_verdict.items()
    )


def table(records: list[dict]) -> str:
    """One column per lane (few enough columns to fit the site's page), each cell naming every
    runtime of that lane."""
    runs: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for record in records:
        runs[(record["notebook"], record["lane"], record["kind"])].append(record)
    header = ["notebook", *LANES.values()]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for path in notebook_paths():
        row = [path.stem] + [lane_cell(runs, path.name, lane) for lane in LANES]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n\n" + legend(records)


def with_table(text: str, rendered: str) -> str:
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    return f"{before}{START}\n{rendered}\n{END}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    current = TABLE_FILE.read_text()
    updated = with_table(current, table(read_records()))
    if args.check:
        if updated != current:
            print(
                "CONTRIBUTING.md's compatibility table does not match what the tests just ran. "
                "Run `make compat` and commit CONTRIBUTING.md.",
                file=sys.stderr,
            )
            return 1
        print("compatibility table: CONTRIBUTING.md matches the test results")
        return 0
    TABLE_FILE.write_text(updated)
    print("CONTRIBUTING.md: compatibility table updated from", RECORDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
