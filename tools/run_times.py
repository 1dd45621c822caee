"""`make run-times`: CONTRIBUTING.md's run-time table, written from the last `make run`.

`make run` (tools.run_notebooks) writes `build/run/run_times.json`: each notebook's seconds at
its defaults, whether it passed, and the machine it ran on (the CPU's model and instruction
sets, its cores, the load average before and after). This puts that run between the markers
in CONTRIBUTING.md, so the figures a contributor reads are a run's, with the machine named,
never typed. It is a benchmark's record, not a test: nothing fails because a machine is slow.

    python -m tools.run_times          # rewrite the table from build/run/run_times.json
    python -m tools.run_times --check  # fail if the table is not one this tool wrote for
                                       # today's notebooks (their names, not their times)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from tools.project import ROOT, notebook_paths

RECORD = ROOT / "build" / "run" / "run_times.json"
TABLE_FILE = ROOT / "CONTRIBUTING.md"
START = "<!-- run-times:start -->"
END = "<!-- run-times:end -->"
# The instruction sets that change which kernels oneDNN and XLA pick, so a reader of the
# table knows whether their CPU is comparable.
NOTED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def machine() -> dict[str, Any]:
    """This machine as the table names it: CPU model, noted instruction sets, cores, load."""
    model, flags = platform.processor() or platform.machine(), set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        text = cpuinfo.read_text()
        found = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
        model = found.group(1).strip() if found else model
        listed = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
        flags = set(listed.group(1).split()) if listed else set()
    return {
        "cpu": model,
        "flags": [flag for flag in NOTED_FLAGS if flag in flags],
        "cores": os.cpu_count(),
        "load": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def write_record(
    path: Path, outcomes: list[Any], before: dict[str, Any], wall: float, jobs: int = 1
) -> None:
    """What `make run` measured, for the table: each outcome's seconds and result, and how
    many notebooks ran at a time."""
    after = machine()
    record = {
        "machine": {**before, "load_after": after["load"]},
        "python": platform.python_version(),
        "jobs": jobs,
        "wall_seconds": round(wall, 1),
        "notebooks": [
            {"notebook": o.source.name, "seconds": round(o.seconds, 1), "passed": o.passed}
            for o in outcomes
        ],
    }
    path.write_text(json.dumps(record, indent=1) + "\n")


def describe(host: dict[str, Any]) -> str:
    flags = ", ".join(host["flags"]) or "none of " + ", ".join(NOTED_FLAGS)
    load = f"load average {host['load']} before the run, {host.get('load_after')} after"
    return f"{host['cpu']} ({flags}), {host['cores']} cores, {load}"


def table(record: dict[str, Any]) -> str:
    """The table, its machine line and the run's total, wall time and median."""
    rows = record["notebooks"]
    seconds = [row["seconds"] for row in rows]
    lines = [
        f"Measured by `make run RUN_JOBS=1` (one notebook at a time) on "
        f"{describe(record['machine'])}, Python {record['python']}:",
        "",
        "| notebook | seconds at its defaults | result |",
        "|---|---|---|",
    ]
    for row in rows:
        result = "passed" if row["passed"] else "**failed**"
        lines.append(f"| {Path(row['notebook']).stem} | {row['seconds']:.0f} | {result} |")
    lines += [
        "",
        f"{len(rows)} notebooks in {sum(seconds) / 60:.1f} minutes of notebook time "
        f"({record['wall_seconds'] / 60:.1f} minutes for that `make run`); median "
        f"{statistics.median(seconds):.0f} s, longest {max(seconds):.0f} s.",
    ]
    return "\n".join(lines)


def with_table(text: str, rendered: str) -> str:
    if START not in text or END not in text:
        raise ValueError(f"{TABLE_FILE.name} has no {START} ... {END} markers")
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    return f"{before}{START}\n{rendered}\n{END}{after}"


def listed_notebooks(text: str) -> list[str]:
    """The notebooks the table in `text` lists, in order."""
    block = text.split(START, 1)[1].split(END, 1)[0]
    return re.findall(r"^\| (\d\d_\w+) \| \d+ \|", block, re.M)


def check(text: str) -> str | None:
    """Why the table is not one this tool wrote for today's notebooks, or None."""
    if START not in text or END not in text:
        return f"{TABLE_FILE.name} has no run-time table markers"
    listed = listed_notebooks(text)
    expected = [path.stem for path in notebook_paths()]
    if listed != expected:
        missing = sorted(set(expected) - set(listed)) or sorted(set(listed) - set(expected))
        return (
            f"the run-time table lists other notebooks than notebooks/ holds ({missing[:3]}): "
            "run `make run`, then `make run-times`, and commit CONTRIBUTING.md"
        )
    if (
        "Measured by `make run RUN_JOBS=1` (one notebook at a time) on "
        not in text.split(START, 1)[1]
    ):
        return "the run-time table names no machine: regenerate it with `make run-times`"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check instead of writing")
    parser.add_argument("--record", type=Path, default=RECORD)
    args = parser.parse_args(argv)
    current = TABLE_FILE.read_text()
    if args.check:
        problem = check(current)
        if problem:
            print(problem, file=sys.stderr)
            return 1
        print("run-time table: lists every notebook, with the machine it was measured on")
        return 0
    if not args.record.is_file():
        print(f"{args.record} is missing: run `make run` first", file=sys.stderr)
        return 1
    record = json.loads(args.record.read_text())
    if record.get("jobs", 1) != 1:
        print(
            f"{args.record} is of a run of {record['jobs']} notebooks at a time, each sharing "
            "the machine: the table's per-notebook times need one at a time. Run "
            "`make run RUN_JOBS=1`, then `make run-times`.",
            file=sys.stderr,
        )
        return 1
    TABLE_FILE.write_text(with_table(current, table(record)))
    print(f"CONTRIBUTING.md: run-time table written from {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
