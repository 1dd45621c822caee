"""`make lock`: one lock file per lane, compiled by `uv pip compile` from the lane's `.in` file.

Each lane's top-level requirements live in a small `.in` file (requirements.in for the
reference lane, requirements-LANE.in for the others); its lock (the same name with `.txt`)
pins every package. The lock's header repeats the `.in` file's comments, records the
SHA-256 of the `.in` file and the exact command that wrote it, so staleness is checked
offline: the hash must match and every top-level requirement must be pinned at a version
its specifier allows.

    python -m tools.lock --uv UV               # regenerate every lock, keeping pins that fit
    python -m tools.lock --uv UV --upgrade current   # re-resolve a lane to the newest releases
    python -m tools.lock --check               # fail if a lock is stale (no network)

Regenerating needs uv and the network; checking needs only `packaging`.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
from pathlib import Path

from tools.project import ROOT

# Lane -> file stem: requirements.in -> requirements.txt, requirements-colab.in -> ...
LANES = {
    "reference": "requirements",
    "colab": "requirements-colab",
    "current": "requirements-current",
    "docs": "requirements-docs",
}
# Every lane runs on Python 3.11 under Linux x86-64 (TensorFlow 2.15 has no newer wheels).
TARGET = ["--python-version", "3.11", "--python-platform", "x86_64-unknown-linux-gnu"]
HASH_LINE = re.compile(r"^# Input: (?P<name>\S+) sha256=(?P<digest>[0-9a-f]{64})$", re.M)
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)", re.M)


def paths(lane: str, root: Path = ROOT) -> tuple[Path, Path]:
    stem = LANES[lane]
    return root / f"{stem}.in", root / f"{stem}.txt"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compile_command(lane: str, upgrade: bool = False) -> list[str]:
    source, lock = (path.name for path in paths(lane))
    flags = ["--upgrade"] if upgrade else []
    return ["uv", "pip", "compile", source, "-o", lock, *TARGET, "--no-header", *flags]


def header(lane: str, root: Path = ROOT) -> str:
    source = paths(lane, root)[0]
    comments = [line for line in source.read_text().splitlines() if line.startswith("#")]
    command = " ".join(compile_command(lane))
    return "\n".join(
        [
            *comments,
            "#",
            f"# Lock file, compiled from {source.name}: every package pinned; do not edit by hand.",
            f"# Regenerate after changing {source.name}: `make lock`, which runs",
            f"#   {command}",
            f"# Input: {source.name} sha256={digest(source)}",
            "",
        ]
    )


def regenerate(lane: str, uv: str, upgrade: bool = False) -> None:
    """Compile the lane's lock with uv (which keeps the existing pins that still fit, unless
    `upgrade`), then put the header in front."""
    _, lock = paths(lane)
    command = [uv, *compile_command(lane, upgrade)[1:], "--quiet"]
    subprocess.run(command, cwd=ROOT, check=True)
    lock.write_text(header(lane) + lock.read_text())


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lock_text: str) -> dict[str, str]:
    return {canonical(m["name"]): m["version"] for m in PIN.finditer(lock_text)}


def problems(lane: str, root: Path = ROOT) -> list[str]:
    """Why the lane's lock is stale against its `.in` file (empty when it is current)."""
    from packaging.requirements import Requirement

    source, lock = paths(lane, root)
    if not lock.exists():
        return [f"{lock.name} is missing: run `make lock`"]
    text = lock.read_text()
    found = []
    recorded = HASH_LINE.search(text)
    if not recorded or recorded["name"] != source.name:
        found.append(f"{lock.name} records no hash of {source.name}: run `make lock`")
    elif recorded["digest"] != digest(source):
        found.append(f"{source.name} changed since {lock.name} was compiled: run `make lock`")
    unpinned = [
        line
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#") and not PIN.match(line)
    ]
    if unpinned:
        found.append(f"{lock.name} has lines that pin nothing: {unpinned}")
    pinned = pins(text)
    for line in source.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        requirement = Requirement(line)
        version = pinned.get(canonical(requirement.name))
        if version is None:
            found.append(f"{lock.name} does not pin {requirement.name} ({source.name})")
        elif not requirement.specifier.contains(version, prereleases=True):
            found.append(
                f"{lock.name} pins {requirement.name}=={version}, "
                f"outside {requirement} ({source.name})"
            )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lanes", nargs="*", help=f"of {', '.join(LANES)} (default: all)")
    parser.add_argument("--check", action="store_true", help="fail if a lock is stale")
    parser.add_argument("--upgrade", action="store_true", help="re-resolve to the newest")
    parser.add_argument("--uv", default="uv", help="the uv executable")
    args = parser.parse_args(argv)
    lanes = args.lanes or list(LANES)
    unknown = sorted(set(lanes) - set(LANES))
    if unknown:
        parser.error(f"unknown lanes {unknown}: choose from {', '.join(LANES)}")
    if args.check:
        found = [problem for lane in lanes for problem in problems(lane)]
        for problem in found:
            print(problem, file=sys.stderr)
        if not found:
            print(f"lock files: {', '.join(paths(lane)[1].name for lane in lanes)} are current")
        return 1 if found else 0
    for lane in lanes:
        regenerate(lane, args.uv, args.upgrade)
        print(f"{paths(lane)[1].name}: compiled from {paths(lane)[0].name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
