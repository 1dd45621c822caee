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
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tools.nbexec import execute
from tools.project import LANE_VENVS, ROOT, notebook_paths, recording_lane
from tools.run_times import machine, write_record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "run")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: all in notebooks/")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    sources = [path.resolve() for path in args.notebooks] or notebook_paths()
    outcomes = []
    host, started = machine(), time.monotonic()
    for number, source in enumerate(sources, start=1):
        print(f"[{number}/{len(sources)}] running {source.name} ...", flush=True)
        venv = LANE_VENVS[recording_lane(source)]
        outcome = execute(
            source, out / source.name, cwd=out / "work" / source.stem, kernel_venv=venv
        )
        print("      " + outcome.summary(), flush=True)
        outcomes.append(outcome)
    passed = sum(outcome.passed for outcome in outcomes)
    if not args.notebooks:  # the whole collection: what the run-time table shows
        write_record(out / "run_times.json", outcomes, host, time.monotonic() - started)
    print(f"\nExecuted notebooks are in {out}/")
    for outcome in outcomes:
        print("  " + outcome.summary())
    print(f"{passed} passed, {len(outcomes) - passed} failed")
    return 0 if passed == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
