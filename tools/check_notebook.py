"""`make check-notebook NB=15`: what a change to one notebook needs, in minutes, not `make test`.

For one notebook (named by its number, `15`, or its file name) this runs, one after another:

1. nbval of the notebook in the lane it is recorded in, on the other-CPU stand-in that
   `make test-nbval` uses (its committed outputs against a fresh run);
2. its papermill cases (tests/notebook_cases*.py) in the reference and the current lane, with
   the bad parameters of the reference lane, and with `--colab` its Colab-lane run too;
3. its claim tests (tests/test_claims_NN.py), in both lanes, where it has any;
4. the notebook conventions and the papermill matrix's own checks (seconds).

It prints one line per part (the command's exit code and its minutes) and exits 1 when any
part failed. `make test` runs all of this and the rest; this is the loop before it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tools.project import LANE_VENVS, ROOT, notebook_paths, recording_lane

# The other-CPU stand-ins of `make test-nbval` and `make test-nbval-current` (the Makefile's
# OTHER_CPU and OTHER_CPU_CURRENT).
OTHER_CPU = {
    "reference": {"TF_ENABLE_ONEDNN_OPTS": "0"},
    "current": {"TF_ENABLE_ONEDNN_OPTS": "0", "XLA_FLAGS": "--xla_cpu_max_isa=AVX2"},
}
VENVS = {**LANE_VENVS, "colab": ROOT / ".venv-colab"}
PYTEST = ["-m", "pytest", "-p", "no:cacheprovider", "-q"]


class NotebookNotFound(ValueError):
    """The name given matches no notebook, or more than one."""


@dataclass(frozen=True)
class Part:
    """One command of the check: what it is, the lane's Python, its arguments and env."""

    title: str
    lane: str
    arguments: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    def command(self) -> list[str]:
        return [str(VENVS[self.lane] / "bin" / "python"), *self.arguments]

    def shown(self) -> str:
        prefix = " ".join(f"{k}={v}" for k, v in self.env)
        return (prefix + " " if prefix else "") + shlex.join(self.command())


def find_notebook(name: str) -> Path:
    """`15`, `15_transformer_classifier` or a path -> the notebook's path."""
    wanted = Path(name).name.removesuffix(".ipynb")
    found = [path for path in notebook_paths() if path.stem.startswith(wanted)]
    if len(found) != 1:
        known = ", ".join(path.stem[:2] for path in notebook_paths())
        what = "no notebook" if not found else f"{len(found)} notebooks"
        raise NotebookNotFound(f"NB={name!r} names {what}: give its number ({known})")
    return found[0]


def parts(notebook: Path, colab: bool = False) -> list[Part]:
    """The commands that check `notebook`, in the order they run."""
    stem, number = notebook.stem, notebook.stem[:2]
    lane = recording_lane(notebook)
    nbval = Part(
        f"nbval ({lane} lane, other-CPU stand-in)",
        lane,
        (*PYTEST, f"notebooks/{notebook.name}", "--nbval", "--nbval-current-env",
         "--nbval-sanitize-with", "tests/nbval_sanitize.cfg"),
        tuple({**OTHER_CPU[lane], "TPU_MIGRATION_LANE": lane}.items()),
    )  # fmt: skip
    found = [nbval]
    claims = ROOT / "tests" / f"test_claims_{number}.py"
    for papermill_lane in ("reference", "current", *(("colab",) if colab else ())):
        selected = ["tests/test_notebooks.py", "-k", f"test_papermill_run and {stem}"]
        if papermill_lane != "colab" and claims.is_file():
            selected.insert(1, str(claims.relative_to(ROOT)))
        what = "papermill cases" + (" and claim tests" if len(selected) > 4 else "")
        marker = ["-m", "not reference_only"] if papermill_lane != "reference" else []
        found.append(
            Part(
                f"{what} ({papermill_lane} lane)",
                papermill_lane,
                (*PYTEST, *selected, *marker),
                (("TPU_MIGRATION_LANE", papermill_lane),),
            )
        )
    checks = ["tests/test_notebook_conventions.py", "tests/test_notebooks.py"]
    chosen = f"{notebook.name} or every_notebook_has or colab_lane_runs_every"
    found.append(
        Part(
            "conventions and the papermill matrix's checks (reference lane)",
            "reference",
            (*PYTEST, *checks, "-k", chosen),
            (("TPU_MIGRATION_LANE", "reference"),),
        )
    )
    return found


def run(part: Part) -> tuple[int, float]:
    started = time.monotonic()
    env = {**os.environ, **dict(part.env)}
    done = subprocess.run(part.command(), cwd=ROOT, env=env)
    return done.returncode, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", help="its number (15) or file name")
    parser.add_argument("--colab", action="store_true", help="also its Colab-lane run")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    try:
        notebook = find_notebook(args.notebook)
    except NotebookNotFound as error:
        print(error, file=sys.stderr)
        return 2
    results = []
    for part in parts(notebook, colab=args.colab):
        print(f"== {part.title}: {part.shown()}", flush=True)
        if args.dry_run:
            continue
        code, seconds = run(part)
        results.append((part.title, code, seconds))
    for title, code, seconds in results:
        print(f"{'PASS' if code == 0 else 'FAIL'} {seconds / 60:5.1f} min  {title}")
    return 1 if any(code for _, code, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
