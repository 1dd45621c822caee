"""`make run`: execute every notebook with papermill into a build folder and summarise.

Each notebook runs with its own default parameters in a fresh kernel, in its own working
folder, so files a notebook writes (checkpoints, exported models) land in the build folder.
A notebook runs as Colab's "Run all" runs it (tools.nbexec): tags are ignored, it stops at
the first cell that ends in an error, and it passes only when every cell ran without one.
Every notebook runs even when an earlier one fails; the exit status says whether all passed.
Each runs in the kernel of the lane its committed outputs come from
(`tools.project.recording_lane`): the reference lane's, or for the Keras 3 on JAX notebook the
current lane's. The times and the machine go to OUT/run_times.json, which `make run-times`
(tools.run_times) writes into CONTRIBUTING.md's run-time table when every notebook ran.

`--jobs 2` (make run's default, RUN_JOBS) runs two notebooks at a time, the longest of the
last run first: a notebook's time is mostly Python tracing its functions on one core, so two
at a time finish the collection in about 60% of the time on a 2-core machine. Each notebook
then shares the machine, so its own time is longer: the run-time table takes its
per-notebook figures from a run of one at a time (`make run RUN_JOBS=1`).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tools.nbexec import execute
from tools.project import LANE_VENVS, ROOT, notebook_paths, recording_lane
from tools.run_times import machine, write_record


def longest_first(sources: list[Path], record: Path) -> list[Path]:
    """`sources` by their seconds in the last run's record, longest first (unknown first of
    all, in their order), so that two at a time do not end with the longest alone."""
    try:
        last = {
            row["notebook"]: row["seconds"] for row in json.loads(record.read_text())["notebooks"]
        }
    except (OSError, ValueError, KeyError, TypeError):
        last = {}
    return sorted(sources, key=lambda source: -last.get(source.name, float("inf")))


def run_one(source: Path, out: Path):
    """One notebook in the kernel of its recording lane (a process of its own when in a pool:
    kernel_of sets JUPYTER_PATH for the run)."""
    venv = LANE_VENVS[recording_lane(source)]
    return execute(source, out / source.name, cwd=out / "work" / source.stem, kernel_venv=venv)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "run")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks at a time (default 1)")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: all in notebooks/")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give 1 or more notebooks at a time")
    out = args.out.resolve()
    sources = [path.resolve() for path in args.notebooks] or notebook_paths()
    host, started = machine(), time.monotonic()
    outcomes = {}
    if args.jobs == 1:
        for number, source in enumerate(sources, start=1):
            print(f"[{number}/{len(sources)}] running {source.name} ...", flush=True)
            outcomes[source] = run_one(source, out)
            print("      " + outcomes[source].summary(), flush=True)
    else:
        order = longest_first(sources, out / "run_times.json")
        print(f"running {len(sources)} notebooks, {args.jobs} at a time ...", flush=True)
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.jobs, mp_context=spawn) as pool:
            running = {pool.submit(run_one, source, out): source for source in order}
            for number, done in enumerate(as_completed(running), start=1):
                outcomes[running[done]] = done.result()
                print(f"[{number}/{len(sources)}] " + outcomes[running[done]].summary(), flush=True)
    in_order = [outcomes[source] for source in sources]
    passed = sum(outcome.passed for outcome in in_order)
    if not args.notebooks:  # the whole collection: what the run-time table shows
        wall = time.monotonic() - started
        write_record(out / "run_times.json", in_order, host, wall, jobs=args.jobs)
    print(f"\nExecuted notebooks are in {out}/")
    for outcome in in_order:
        print("  " + outcome.summary())
    print(f"{passed} passed, {len(in_order) - passed} failed")
    return 0 if passed == len(in_order) else 1


if __name__ == "__main__":
    sys.exit(main())
