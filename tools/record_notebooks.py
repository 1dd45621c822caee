"""`make record`: re-execute notebooks in place so their committed outputs are current.

The committed outputs are the regression reference that nbval compares against, so they must
come from a clean run of this command, never from hand edits. Each notebook runs in the kernel
of the lane its outputs come from (`tools.project.recording_lane`: the reference lane, or the
current lane for the Keras 3 on JAX notebook). A
notebook is only replaced when its run passed, which means every cell ran and none ended in
an error, whatever its tags (tools.nbexec runs it as Colab's "Run all" does), and when it
left no stderr output (log noise that nbval cannot compare); otherwise the committed version
is kept and the run is reported.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

from tools.nbexec import execute
from tools.project import LANE_VENVS, recording_lane

RUN_METADATA_KEYS = ("papermill", "execution")


def strip_run_metadata(path: Path) -> list[str]:
    """Drop papermill's timings from the notebook; return the stderr texts it recorded."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("papermill", None)
    stderr = []
    for cell in nb.cells:
        for key in RUN_METADATA_KEYS:
            cell.metadata.pop(key, None)
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                stderr.append(output.get("text", ""))
    nbformat.write(nb, path)
    return stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="record-") as scratch:
        for source in args.notebooks:
            source = source.resolve()
            executed = Path(scratch) / source.name
            print(f"recording {source.name} ...", flush=True)
            venv = LANE_VENVS[recording_lane(source)]
            outcome = execute(source, executed, cwd=Path(scratch) / source.stem, kernel_venv=venv)
            stderr = strip_run_metadata(executed) if executed.exists() else []
            if not outcome.passed or stderr:
                failures += 1
                print("  kept the committed version: " + outcome.summary())
                for text in stderr:
                    print("  stderr output: " + text.strip().splitlines()[0][:160])
                continue
            shutil.copyfile(executed, source)
            print("  " + outcome.summary())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
