"""The prepared check for a real accelerator: run the TF2 notebooks on this machine's GPU or TPU.

Every notebook chooses its runtime itself (`accelerator="auto"`: a TPU, else a GPU, else the
CPU), so this runs each one, as it is, with `tools.device_run` (no Jupyter needed) in a
process of its own with a time limit, and appends one compatibility-table record per notebook
to `OUT/device_runs.jsonl`; committed as `compat/device_runs.jsonl`, the records put the
runtime in CONTRIBUTING.md's table (`make compat`). What runs depends on what is installed:

- TensorFlow: every notebook that has an `accelerator` parameter, except 01 (TPUEstimator,
  which current TPUs cannot run: see the README);
- JAX without TensorFlow (the GPU machine some sessions are lent): notebook 11 alone, on JAX.

A machine without a GPU or a TPU has nothing to record: the check says so in one line and
exits 2, unless `--allow-cpu` asks it to run there (to try the check itself). The records
say lane "current" (`tools.device_run`): run the check with the current lane's packages. Usage:

    python -m tools.accelerator_check --out OUT [--notebook 02 ...] [--timeout 600]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from helpers.colab import installed
from helpers.environment import Probe, find_tpu, nvidia_gpus
from tools.project import ROOT, notebook_paths

TF1_ONLY = "01_tpu_estimator.ipynb"
JAX_NOTEBOOK = "11_keras3_jax.ipynb"
EXIT_NOTHING_TO_RECORD = 2


def has_accelerator_parameter(path: Path) -> bool:
    cells = json.loads(path.read_text())["cells"]
    return any(
        "parameters" in cell["metadata"].get("tags", [])
        and "accelerator = " in "".join(cell["source"])
        for cell in cells
    )


def notebooks_to_run(
    installed: Callable[[str], bool], paths: Sequence[Path] | None = None
) -> list[Path]:
    """The notebooks this machine's packages can run: all TF2 ones with TensorFlow, 11 with
    JAX alone, none with neither."""
    paths = list(paths or notebook_paths())
    if installed("tensorflow"):
        return [p for p in paths if p.name != TF1_ONLY and has_accelerator_parameter(p)]
    if installed("jax"):
        return [p for p in paths if p.name == JAX_NOTEBOOK]
    return []


def accelerator(probe: Probe | None = None, root: Path = Path("/")) -> str | None:
    """'TPU (...)' or 'GPU (...)' from the device files, without importing a framework."""
    tpu = find_tpu(probe or Probe())
    if tpu is not None:
        return f"TPU ({tpu.evidence})"
    gpus = nvidia_gpus(root)
    return f"GPU ({len(gpus)} NVIDIA device(s))" if gpus else None


def _select(names: Sequence[str], paths: list[Path]) -> list[Path]:
    chosen = [p for p in paths if not names or any(p.name.startswith(n) for n in names)]
    unknown = [n for n in names if not any(p.name.startswith(n) for p in paths)]
    if unknown:
        raise SystemExit(
            f"--notebook {unknown[0]}: not one this machine can run here "
            f"({', '.join(p.name[:2] for p in paths) or 'none'})"
        )
    return chosen


def run_one(path: Path, out: Path, timeout: int) -> tuple[bool, str]:
    """Run one notebook with tools.device_run; (passed, its last line). Past `timeout` it gets
    SIGTERM, on which device_run keeps what ran and still writes the notebook's record."""
    command = [sys.executable, "-m", "tools.device_run", "--notebook", str(path), "--out"]
    process = subprocess.Popen(
        [*command, str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        printed, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.terminate()
        printed, _ = process.communicate()
        return False, f"stopped after {timeout} s; the executed copy keeps what ran"
    lines = printed.strip().splitlines()
    summary = next((line for line in reversed(lines) if line.startswith(("passed", "FAILED"))), "")
    return process.returncode == 0, summary or (lines[-1] if lines else "no output")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the records")
    parser.add_argument("--notebook", action="append", default=[], metavar="NN")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per notebook (600)")
    parser.add_argument("--allow-cpu", action="store_true", help="run without an accelerator")
    args = parser.parse_args(argv)
    found = accelerator()
    if found is None and not args.allow_cpu:
        print(
            "no GPU or TPU on this machine: nothing to record (--allow-cpu runs the check on "
            "the CPU, to try it)"
        )
        return EXIT_NOTHING_TO_RECORD
    paths = _select(args.notebook, notebooks_to_run(installed))
    if not paths:
        print("neither TensorFlow nor JAX is installed: no notebook can run here")
        return EXIT_NOTHING_TO_RECORD
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{found or 'CPU (--allow-cpu)'}: {len(paths)} notebook(s), records in {args.out}")
    results = []
    for number, path in enumerate(paths, start=1):
        print(f"[{number}/{len(paths)}] {path.name} ...", flush=True)
        passed, line = run_one(path, args.out, args.timeout)
        print(f"      {line}", flush=True)
        results.append(passed)
    print(f"{sum(results)} of {len(results)} passed; records: {args.out / 'device_runs.jsonl'}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
