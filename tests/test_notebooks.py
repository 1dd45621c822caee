"""Run the notebooks with papermill as Colab's "Run all" would, under the lane's parameters.

Every run ignores the `raises-exception` tag and stops at the first error (tools.nbexec): a
good case passes only when no cell ended in an error; a bad case must stop with exactly one
error, the expected one. The nbval run (reference lane) covers the defaults there.

A bad parameter that the validation cell refuses is checked in one kernel per notebook
(`tools.nbexec.parameter_errors`: the imports once, then each case's parameters and the
validation cell), not in a kernel of its own: each kernel imports TensorFlow, seconds apiece.
A bad case that the validation cell lets through (a batch that does not divide across the
replicas is found once the strategy exists) runs the whole notebook with papermill.
"""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from importlib.metadata import version

import nbformat
import pytest
from notebook_cases import CASES, REFERENCE, Case
from support import LANE

from tools.nbexec import CellError, execute, parameter_errors
from tools.project import NOTEBOOKS, ROOT, notebook_paths, recording_lane

pytestmark = pytest.mark.notebook
LANE_CASES = [case for case in CASES if LANE in case.lanes]
VALIDATION_ERRORS: dict[str, list[CellError]] = {}  # case id: what the validation cell raised
COMPAT_RECORDS = ROOT / "build" / "compat" / f"{LANE}.jsonl"


@pytest.fixture(scope="module")
def compat_records():
    """Where each run is recorded for the compatibility table (tools.compat_table)."""
    COMPAT_RECORDS.parent.mkdir(parents=True, exist_ok=True)
    COMPAT_RECORDS.write_text("")
    return COMPAT_RECORDS


def machine_kind() -> str:
    """The runtime `auto` finds on this machine, for runs that stop before printing theirs."""
    from pathlib import Path

    from helpers.environment import Probe, find_tpu

    if find_tpu(Probe()):
        return "TPU"
    return "GPU" if Path("/dev/nvidia0").exists() else "CPU"


def record(path, case: Case, runtime_line: str, passed: bool) -> None:
    kind = re.match(r"Runtime: (TPU|GPU|CPU)\b", runtime_line)
    replicas = re.search(r" with (\d+) replica", runtime_line)
    entry = {
        "notebook": case.notebook,
        "lane": LANE,
        "kind": kind.group(1) if kind else machine_kind(),
        "replicas": int(replicas.group(1)) if replicas else None,
        "expected_error": case.error,
        "passed": passed,
        "tensorflow": version("tensorflow"),
        "keras": version("keras"),
    }
    with path.open("a") as file:
        file.write(json.dumps(entry) + "\n")


def parameter_defaults(path) -> dict:
    """The values in a notebook's `parameters` cell (the defaults nbval and Colab run with)."""
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    tree = ast.parse(cell.source)
    return {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }


DEFAULT_REPLICAS = 4  # a v4-8 or v5e-4 slice: several replicas, at half the cost of eight
# Notebook 10 traces every training's batch norm once per replica (MirroredStrategy runs the
# step in a thread per replica), six trainings at 4 replicas took 70 s of its run: 2 replicas
# show what each replica's statistics cost as well as 4, and its Keras 3 lane runs 4 instead.
# Notebooks 04 and 16 train a dozen models or more each on the strategy, each traced once per
# replica: 2 replicas show their mistakes' costs and verdicts as 4 do; 02's lessons (the
# callbacks, resuming, evaluation, saving) do not depend on the count either.
DEFAULTS_OF = {
    "02_keras_fit.ipynb": 2,
    "04_verify_migration.ipynb": 2,
    "10_conv_batch_norm.ipynb": 2,
    "16_migrate_your_own_model.ipynb": 2,
}
# Replica counts a notebook runs in Keras 3 beyond 1, 2 and 4: notebook 16's port must pass
# the synchronized comparison at 1, 2 and 8 replicas in both Keras generations.
KERAS_3_ALSO = {"16_migrate_your_own_model.ipynb": [8]}
# The stored-run notebooks (a `compare_stored` parameter) run 1 replica in Keras 3 only
# (notebook_cases.stored_run_cases says why), except 16, for the same reason as above.
ONE_REPLICA_IN_BOTH = {"16_migrate_your_own_model.ipynb"}


def good_runs(lanes: tuple[str, ...], notebook: str, defaults: dict) -> list[int]:
    """The replica counts of the good papermill cases in these lanes, one entry per run."""
    return [
        case.parameters.get("virtual_replicas", defaults["virtual_replicas"])
        for case in CASES
        if case.notebook == notebook and case.error is None and set(case.lanes) & set(lanes)
    ]


@pytest.mark.reference_only
def test_every_notebook_has_other_parameters_bad_ones_replica_counts_1_2_4_8_and_another_seed():
    """The defaults are 4 replicas (notebooks 02, 04, 10 and 16: 2), run by nbval (Keras 2) and
    the Colab lane (Keras 3). Keras 3 runs 1 replica too, and so does Keras 2 but in the
    stored-run notebooks (`ONE_REPLICA_IN_BOTH` excepted), and between them 2 and 8: 8 in
    Keras 2 (papermill in the reference lane) and 2 in Keras 3 (the current lane; for the
    notebooks whose default is 2, 4 there), so that 1, 2, 4 and 8 all run and no count runs
    twice in one generation; `KERAS_3_ALSO` adds counts to Keras 3 (notebook 16: 8). A
    notebook recorded in the current lane (Keras 3 on JAX) runs all four there, nbval at the
    defaults. A notebook with a `seed` parameter runs with another seed in at least one good
    case."""
    good: dict[str, int] = defaultdict(int)
    bad: dict[str, int] = defaultdict(int)
    for case in CASES:
        if case.error is None and case.parameters and recording_lane(case.notebook) in case.lanes:
            good[case.notebook] += 1
        elif case.error is not None and "reference" in case.lanes:
            bad[case.notebook] += 1
    for path in notebook_paths():
        assert good[path.name] >= 1 and bad[path.name] >= 1, path.name
        defaults = parameter_defaults(path)
        default = DEFAULTS_OF.get(path.name, DEFAULT_REPLICAS)
        if "virtual_replicas" in defaults:
            assert defaults["virtual_replicas"] == default, path.name
        if recording_lane(path) == "current":
            ran = [*good_runs(("current",), path.name, defaults), default]  # nbval
            assert sorted(ran) == [1, 2, 4, 8], (path.name, ran)
        elif "virtual_replicas" in defaults:
            keras_2 = [*good_runs(REFERENCE, path.name, defaults), default]  # nbval
            keras_3 = good_runs(("current", "colab"), path.name, defaults)
            one = "compare_stored" not in defaults or path.name in ONE_REPLICA_IN_BOTH
            expected_keras_2 = {default, 8} | ({1} if one else set())
            assert sorted(keras_2) == sorted(expected_keras_2), (path.name, keras_2)
            also = KERAS_3_ALSO.get(path.name, [])
            assert sorted(keras_3) == sorted([1, 2, 4, *also]), (path.name, keras_3)
            assert set(keras_2) | set(keras_3) == {1, 2, 4, 8}, path.name
        if "seed" in defaults:
            seeds = {
                case.parameters.get("seed", defaults["seed"])
                for case in CASES
                if case.notebook == path.name and case.error is None
            }
            assert seeds - {defaults["seed"]}, f"{path.name}: no good case with another seed"


@pytest.mark.reference_only
def test_the_colab_lane_runs_every_notebook_once_at_its_defaults():
    colab = [case for case in CASES if "colab" in case.lanes]
    assert sorted(case.notebook for case in colab) == [path.name for path in notebook_paths()]
    assert all(case.parameters == {} for case in colab)


def validation_errors(case: Case, tmp_path) -> list[CellError]:
    """What the validation cell raised for `case`, checked with its notebook's other bad
    parameters in one kernel the first time one of them is asked for."""
    if case.id not in VALIDATION_ERRORS:
        cases = [c for c in LANE_CASES if c.notebook == case.notebook and c.error == case.error]
        found = parameter_errors(NOTEBOOKS / case.notebook, [c.parameters for c in cases], tmp_path)
        VALIDATION_ERRORS.update({c.id: errors for c, errors in zip(cases, found, strict=True)})
    return VALIDATION_ERRORS[case.id]


def expected(case: Case, errors: list[CellError]) -> bool:
    return len(errors) == 1 and errors[0].ename == case.error and case.message in errors[0].evalue


@pytest.mark.parametrize("case", LANE_CASES, ids=[case.id for case in LANE_CASES])
def test_papermill_run(case: Case, tmp_path, compat_records, monkeypatch):
    """The run's kernel (and the processes it starts) gets a temporary directory of its own,
    which must be empty when a good run ends: a notebook removes what it created."""
    kernel_tmp = tmp_path / "kernel_tmp"
    kernel_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(kernel_tmp))
    if case.error == "ParameterError":
        errors = validation_errors(case, tmp_path)
        if errors:  # refused by the validation cell, as the one-line message must be
            passed = expected(case, errors)
            record(compat_records, case, "", passed)
            assert passed, errors[0].one_line()
            return
    outcome = execute(NOTEBOOKS / case.notebook, tmp_path / case.notebook, case.parameters)
    if case.error is None:
        passed = outcome.passed and (
            "virtual_replicas" not in case.parameters
            or f"with {case.parameters['virtual_replicas']} replica" in outcome.runtime_line
        )
    else:
        passed = expected(case, outcome.errors)
    record(compat_records, case, outcome.runtime_line, passed)
    assert passed, outcome.summary()
    if case.error is None:
        # TensorFlow's autograph writes a module per converted function into TMPDIR and
        # removes it at exit; a process the notebook kills on purpose (06's preempted
        # trainer) cannot, so those files are TensorFlow's, not the notebook's.
        left = sorted(
            path.name
            for path in kernel_tmp.iterdir()
            if not path.name.startswith("__autograph_generated_file")
        )
        assert not left, f"{case.notebook} left {len(left)} entries in its TMPDIR: {left[:5]}"


def test_bad_parameter_errors_render_as_one_line_not_a_stack_trace(tmp_path):
    output = tmp_path / "bad.ipynb"
    execute(NOTEBOOKS / "00_setup.ipynb", output, {"virtual_replicas": "eight"})
    nb = nbformat.read(output, as_version=4)
    errors = [
        out for cell in nb.cells for out in cell.get("outputs", []) if out.output_type == "error"
    ]
    bad = [out for out in errors if out.ename == "ParameterError"]
    assert len(bad) == 1
    (rendered,) = bad[0].traceback  # one entry: the message alone, no stack frames
    first_line, *rest = rendered.splitlines()
    assert first_line.startswith("ParameterError: ")
    for fragment in ("virtual_replicas", "'eight'", "from 1 to 64", "papermill -p"):
        assert fragment in rendered, fragment
    assert len(rest) <= 2, rendered
