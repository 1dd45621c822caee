# ruff: noqa: E501 - a table of cases reads best one case to a line
"""Every bad input to `python -m workbench` ends in one line and loses nothing of the reader's.

Each case runs the command line on a folder of the reader's own (a copy of the stored toy
baseline, fixtures/workbench_toy, a TF2 run of its port, and a module of functions that go
wrong in the ways a reader's do), and asserts: the exit code (1 refused, 2 usage; never 5, the
workbench's own failure), a last line on stderr that names the problem, no traceback, and
every file that was in the folder still there, unchanged, with nothing new beside it. The
`record` cases need TPUEstimator (the reference lane).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import workbench_toy as toy
from support import LANE, ROOT

from workbench import __main__ as cli
from workbench import load_baseline

pytestmark = pytest.mark.tensorflow
STORED = ROOT / "fixtures" / "workbench_toy"
USER_CODE = """
import tensorflow as tf
import workbench_toy

NOT_A_FUNCTION = 3


def raises():
    raise ValueError("the reader's own model fails to build")


def an_int():
    return 7


def three_things():
    return workbench_toy.build_model(), None, None


def no_arguments():
    return 0.5


def a_word(model, features, labels):
    return "low"


def loss_raises(model, features, labels):
    raise KeyError("x")


def tpu_only_model_fn(features, labels, mode, params):
    spec = workbench_toy.model_fn(features, labels, mode, params)
    total = tf.compat.v1.tpu.cross_replica_sum(spec.loss)
    return spec._replace(loss=total)
"""


def truncate(name: str) -> Callable[[Path], None]:
    def cut(folder: Path) -> None:
        path = folder / "baseline" / name
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    return cut


def flip_one_byte(name: str) -> Callable[[Path], None]:
    def flip(folder: Path) -> None:
        path = folder / "baseline" / name
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))

    return flip


def remove(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).unlink()


def write(name: str, content: str | bytes) -> Callable[[Path], None]:
    def put(folder: Path) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)

    return put


def edit_manifest(**changes: object) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / "baseline" / "baseline.json"
        data = json.loads(path.read_text())
        for key, value in changes.items():
            if value is None:
                data.pop(key)
            else:
                data[key] = value
        path.write_text(json.dumps(data))

    return edit


def edit_run(change: Callable[[list[dict]], object]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / "run.json"
        path.write_text(json.dumps(change(json.loads(path.read_text()))))

    return edit


def npy_as_npz(folder: Path) -> None:
    with (folder / "weights.npz").open("wb") as file:
        np.save(file, np.zeros(3))


def nothing(folder: Path) -> None:
    """No change: the case's bad input is on the command line."""


MAP = ["map", "--baseline", "baseline", "--model", "workbench_toy:build_model"]
COMPARE = ["compare", "--baseline", "baseline", "--run", "run.json", "--weights", "weights.npz"]
RECORD = ["record", "--model-fn", "workbench_toy:model_fn", "--input-fn",
          "workbench_toy:input_fn", "--batch-size", "8", "--steps", "2", "--out", "new"]  # fmt: skip
FIRST = [*MAP, "--first-loss"]

# (case, command line, what is done to the reader's folder first, exit code, expected text)
# fmt: off
CASES: list[tuple[str, list[str], Callable[[Path], None], int, str]] = [
    # The command line and the reader's functions.
    ("path missing", ["--path", "no/such/folder", *MAP], nothing, 1, "no such folder"),
    ("model without colon", [*MAP[:3], "--model", "build_model"], nothing, 1, "module:function"),
    (
        "model module missing",
        [*MAP[:3], "--model", "no_module:f"],
        nothing,
        1,
        "cannot be imported",
    ),
    ("model name missing", [*MAP[:3], "--model", "workbench_toy:nope"], nothing, 1, "has no nope"),
    (
        "model not callable",
        [*MAP[:3], "--model", "user:NOT_A_FUNCTION"],
        nothing,
        1,
        "not a function",
    ),
    ("model raises", [*MAP[:3], "--model", "user:raises"], nothing, 1, "raised ValueError"),
    ("model is an int", [*MAP[:3], "--model", "user:an_int"], nothing, 1, "int"),
    ("model is a triple", [*MAP[:3], "--model", "user:three_things"], nothing, 1, "tuple"),
    ("rule without =", [*MAP, "--rule", "hidden"], nothing, 1, "LEFT=RIGHT"),
    ("rule not a regex", [*MAP, "--rule", "hid(den=x"], nothing, 1, "hid(den"),
    ("slot without =", [*MAP, "--slot", "adam_m"], nothing, 1, "LEFT=RIGHT"),
    ("first step alone", [*MAP, "--first-step", "workbench_toy:first_step"], nothing, 1, "give both"),
    ("first step raises", [*FIRST, "workbench_toy:first_loss", "--first-step", "user:loss_raises"], nothing, 1, "--first-step user:loss_raises"),
    ("first step not recorded", [*FIRST, "workbench_toy:first_loss", "--first-step", "workbench_toy:first_step"], edit_manifest(states=None), 1, "no state after its first step"),
    ("new not a regex", [*MAP, "--new", "head("], nothing, 1, "new: 'head(' is not a regular expression"),
    (
        "first loss with final",
        [*FIRST, "workbench_toy:first_loss", "--final"],
        nothing,
        1,
        "--final",
    ),
    ("first loss no arguments", [*FIRST, "user:no_arguments"], nothing, 1, "raised TypeError"),
    ("first loss a word", [*FIRST, "user:a_word"], nothing, 1, "returned a str"),
    ("first loss raises", [*FIRST, "user:loss_raises"], nothing, 1, "raised KeyError"),
    ("first loss missing", [*FIRST, "workbench_toy:nope"], nothing, 1, "has no nope"),
    # The baseline folder.
    (
        "baseline missing",
        [*MAP[:1], "--baseline", "nowhere", *MAP[3:]],
        nothing,
        1,
        "no baseline.json",
    ),
    (
        "baseline is a file",
        [*MAP[:1], "--baseline", "run.json", *MAP[3:]],
        nothing,
        1,
        "not a workbench baseline",
    ),
    ("manifest not JSON", MAP, write("baseline/baseline.json", "{"), 1, "not valid JSON"),
    ("manifest truncated", MAP, truncate("baseline.json"), 1, "not valid JSON"),
    ("manifest binary", MAP, write("baseline/baseline.json", b"\x80\x81"), 1, "baseline.json"),
    ("manifest other format", MAP, edit_manifest(format="x"), 1, "not a workbench baseline"),
    ("manifest version 1", MAP, edit_manifest(version=1), 1, "version 1 of the baseline format"),
    ("manifest without files", MAP, edit_manifest(files=None), 1, "has no files"),
    ("manifest without steps", MAP, edit_manifest(steps=None), 1, "has no steps"),
    ("batches missing", MAP, remove("baseline/batches.npz"), 1, "batches.npz is missing"),
    ("batches truncated", MAP, truncate("batches.npz"), 1, "truncated or replaced"),
    ("batches one byte", MAP, flip_one_byte("batches.npz"), 1, "SHA-256 differs"),
    (
        "start index truncated",
        MAP,
        truncate("checkpoints/model.ckpt-0.index"),
        1,
        "model.ckpt-0.index",
    ),
    (
        "start data truncated",
        MAP,
        truncate("checkpoints/model.ckpt-0.data-00000-of-00001"),
        1,
        "truncated",
    ),
    (
        "final data truncated",
        [*MAP, "--final"],
        truncate("checkpoints/model.ckpt-4.data-00000-of-00001"),
        1,
        "truncated",
    ),
    (
        "final index missing",
        COMPARE,
        remove("baseline/checkpoints/model.ckpt-4.index"),
        1,
        "is missing",
    ),
    (
        "compare truncated start",
        COMPARE,
        truncate("checkpoints/model.ckpt-0.index"),
        1,
        "truncated",
    ),
    # The TF2 run.
    ("run missing", COMPARE, remove("run.json"), 1, "--run run.json: no such file"),
    ("run not JSON", COMPARE, write("run.json", "loss 0.5"), 1, "is not JSON"),
    ("run truncated", COMPARE, write("run.json", '[{"loss": 0.5'), 1, "is not JSON"),
    ("run binary", COMPARE, write("run.json", b"\xff\xfe\x00"), 1, "is not JSON"),
    ("run a number", COMPARE, write("run.json", "3"), 1, "holds a JSON int"),
    ("run a list of numbers", COMPARE, write("run.json", "[1, 2]"), 1, "step 0 is a int"),
    (
        "run unknown key",
        COMPARE,
        edit_run(lambda s: [{**x, "accuracy": 1} for x in s]),
        1,
        "'accuracy'",
    ),
    (
        "run steps of two lengths",
        COMPARE,
        write("run.json", '{"losses": [1, 2], "learning_rates": [1]}'),
        1,
        "different step counts",
    ),
    ("run more steps", COMPARE, edit_run(lambda s: s + s), 1, "the candidate 8"),
    ("run empty", COMPARE, write("run.json", "[]"), 1, "--run has none of"),
    ("model without step", [*COMPARE, "--model", "workbench_toy:build_port"], nothing, 1, "go together"),
    ("neither run nor step", ["compare", "--baseline", "baseline"], nothing, 1, "give --model and --step"),
    ("apply without step", [*COMPARE, "--apply", "workbench_toy:apply_gradients"], nothing, 1, "--apply goes with --model and --step"),
    ("step raises", ["compare", "--baseline", "baseline", "--model", "workbench_toy:build_port", "--step", "user:loss_raises"], nothing, 1, "--step user:loss_raises"),
    ("synchronized unmapped", ["compare", "--baseline", "baseline", "--model", "user:three_things", "--step", "workbench_toy:train_step"], nothing, 1, "tuple of 3"),
    ("weights missing", COMPARE, remove("weights.npz"), 1, "--weights weights.npz: no such file"),
    ("weights text", COMPARE, write("weights.npz", "not numbers"), 1, "cannot be read as .npz"),
    ("weights one array", COMPARE, npy_as_npz, 1, "holds one array"),
    ("weights truncated", COMPARE, truncate("../weights.npz"), 1, "weights.npz"),
    (
        "weights foreign names",
        COMPARE,
        lambda f: np.savez(f / "weights.npz", other=np.zeros(2)),
        1,
        "other",
    ),
    (
        "weights wrong shape",
        COMPARE,
        lambda f: np.savez(f / "weights.npz", **{"hidden/kernel": np.zeros(2)}),
        1,
        "shape",
    ),
    (
        "nudged missing",
        [*COMPARE, "--nudged", "nudged.json"],
        nothing,
        1,
        "--nudged nudged.json: no such file",
    ),
    ("nudged not JSON", [*COMPARE, "--nudged", "weights.npz"], nothing, 1, "is not JSON"),
    ("nudged a word", [*COMPARE, "--nudged", "word.json"], write("word.json", '"x"'), 1, "str"),
    # Usage: argparse's message, exit 2.
    ("no command", [], nothing, 2, "required"),
    ("map without baseline", ["map", "--model", "x:y"], nothing, 2, "--baseline"),
    ("unknown flag", [*COMPARE, "--fast"], nothing, 2, "--fast"),
    (
        "batch not a number",
        [*RECORD[:5], "--batch-size", "eight", *RECORD[7:]],
        nothing,
        2,
        "eight",
    ),
]
RECORD_CASES: list[tuple[str, list[str], Callable[[Path], None], int, str]] = [
    ("params not JSON", [*RECORD, "--params", "{bad"], nothing, 1, "--params is not JSON"),
    ("params a list", [*RECORD, "--params", "[1]"], nothing, 1, "JSON list"),
    ("tensor without =", [*RECORD, "--tensor", "rate"], nothing, 1, "LEFT=RIGHT"),
    ("tensor unknown", [*RECORD, "--tensor", "speed=x:0"], nothing, 1, "'speed' is not one of"),
    ("steps zero", [*RECORD[:7], "--steps", "0", *RECORD[9:]], nothing, 1, "at least 1"),
    ("batch zero", [*RECORD[:5], "--batch-size", "0", *RECORD[7:]], nothing, 1, "at least 1"),
    (
        "out is the reader's folder",
        [*RECORD[:-1], "mine"],
        write("mine/notes.txt", "x"),
        1,
        "is not a workbench baseline",
    ),
    ("out is a file", [*RECORD[:-1], "run.json"], nothing, 1, "is not a workbench baseline"),
    ("out a baseline, no replace", [*RECORD[:-1], "baseline"], nothing, 1, "--replace"),
    ("replace an unlisted baseline", [*RECORD[:-1], "baseline", "--replace"], edit_manifest(files=None), 1, "lists none of its files"),
    (
        "model_fn fails",
        [*RECORD[:-1], "deep/er/new", "--params", '{"fail": 1}'],
        nothing,
        1,
        "refuses these features",
    ),
    (
        "too few batches",
        [*RECORD, "--params", '{"once": 1, "examples": 8}'],
        nothing,
        1,
        "gave 1 batches",
    ),
    (
        "TPU-only op",
        [*RECORD[:1], "--model-fn", "user:tpu_only_model_fn", *RECORD[3:]],
        nothing,
        1,
        "TPU-only op",
    ),
    ("session config not one", [*RECORD, "--session-config", "user:an_int"], nothing, 1, "session_config is a int"),
    (
        "eval input missing",
        [*RECORD, "--eval-input-fn", "workbench_toy:nope"],
        nothing,
        1,
        "has no nope",
    ),
]
# fmt: on


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    """The reader's folder: the stored baseline, the faithful port's run and weights, code."""
    folder = tmp_path_factory.mktemp("reader")
    shutil.copytree(STORED, folder / "baseline")
    steps, weights = toy.train_tf2(load_baseline(STORED))
    (folder / "run.json").write_text(json.dumps(steps))
    np.savez(folder / "weights.npz", **weights)
    (folder / "user.py").write_text(USER_CODE)
    shutil.copy(ROOT / "tests" / "workbench_toy.py", folder)
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    """Every file's SHA-256 and every folder, by path: a folder left behind shows too."""
    return {
        str(path.relative_to(folder)): (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        )
        for path in sorted(folder.rglob("*"))
        if "__pycache__" not in path.parts
    }


def refused(capsys, monkeypatch, good_run, tmp_path, argv, prepare) -> tuple[int, str]:
    folder = tmp_path / "reader"
    shutil.copytree(good_run, folder, ignore=shutil.ignore_patterns("__pycache__"))
    prepare(folder)
    before = snapshot(folder)
    monkeypatch.chdir(folder)
    argv = argv if argv[:1] == ["--path"] else ["--path", str(folder), *argv]
    try:
        code = cli.main(argv)
    except SystemExit as exited:  # argparse's usage error
        code = exited.code
    err = capsys.readouterr().err
    assert snapshot(folder) == before, "the reader's folder changed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reader"], "something was left beside it"
    assert "Traceback" not in err, err
    return code, err.strip().splitlines()[-1] if err.strip() else ""


def check(code: int, line: str, expected_code: int, expected: str) -> None:
    assert code == expected_code, line
    assert expected in line, line
    assert len(line) <= cli.LONGEST_LINE, line


@pytest.mark.parametrize(("argv", "prepare", "code", "expected"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])  # fmt: skip
def test_a_bad_input_is_one_line_and_loses_nothing(
    capsys, monkeypatch, good_run, tmp_path, argv, prepare, code, expected
):
    check(*refused(capsys, monkeypatch, good_run, tmp_path, argv, prepare), code, expected)


@pytest.mark.skipif(LANE != "reference", reason="recording needs TPUEstimator (reference lane)")
@pytest.mark.parametrize(("argv", "prepare", "code", "expected"),
                         [case[1:] for case in RECORD_CASES], ids=[c[0] for c in RECORD_CASES])  # fmt: skip
def test_a_bad_recording_is_one_line_and_leaves_nothing(
    capsys, monkeypatch, good_run, tmp_path, argv, prepare, code, expected
):
    check(*refused(capsys, monkeypatch, good_run, tmp_path, argv, prepare), code, expected)


def test_there_are_at_least_fifty_cases():
    assert len(CASES) + len(RECORD_CASES) >= 50


@pytest.mark.skipif(LANE != "reference", reason="recording needs TPUEstimator (reference lane)")
def test_replace_removes_only_what_the_baseline_lists(capsys, monkeypatch, good_run, tmp_path):
    folder = tmp_path / "reader"
    shutil.copytree(good_run, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "baseline" / "my notes.txt").write_text("mine")
    (folder / "baseline" / "checkpoints" / "my.ckpt").write_text("mine too")
    monkeypatch.chdir(folder)
    argv = ["--path", str(folder), *RECORD[:-1], "baseline", "--replace"]
    assert cli.main(argv) == cli.DONE, capsys.readouterr().err
    assert (folder / "baseline" / "my notes.txt").read_text() == "mine"
    assert (folder / "baseline" / "checkpoints" / "my.ckpt").read_text() == "mine too"
    replaced = load_baseline(folder / "baseline")
    assert len(replaced.steps) == 2 and replaced.final_checkpoint.name == "model.ckpt-2"
    assert not list((folder / "baseline" / "checkpoints").glob("model.ckpt-4.*"))


def test_an_unexpected_error_is_one_line_with_the_trace_in_a_file(capsys, monkeypatch):
    def broken(args):
        raise ZeroDivisionError("inside the workbench")

    monkeypatch.setattr(cli, "compare", broken)  # parser() binds the handler by name
    code = cli.main(["compare", "--baseline", "b", "--run", "r"])
    err = capsys.readouterr().err.strip()
    assert code == cli.FAILED and err.count("\n") == 0, err
    assert "ZeroDivisionError: inside the workbench" in err
    trace = Path(err.split("traceback is in ")[1].split(":")[0])
    assert "Traceback" in trace.read_text()
    trace.unlink()


def test_a_long_refusal_is_cut_and_kept_whole_in_a_file():
    line = cli.refusal_line(cli.CliError("x" * 5000))
    assert len(line) <= cli.LONGEST_LINE
    kept = Path(line.split("the whole message is in ")[1].rstrip(")"))
    assert kept.read_text().strip() == "CliError: " + "x" * 5000
    kept.unlink()


@pytest.mark.skipif(LANE != "reference", reason="recording needs TPUEstimator (reference lane)")
def test_replace_never_removes_a_listed_path_outside_the_baseline(
    capsys, monkeypatch, good_run, tmp_path
):
    """A foreign baseline.json that lists ../run.json: --replace leaves the reader's file."""
    folder = tmp_path / "reader"
    shutil.copytree(good_run, folder, ignore=shutil.ignore_patterns("__pycache__"))
    edit_manifest(files={"../run.json": {"bytes": 1, "sha256": "x"}})(folder)
    kept = (folder / "run.json").read_bytes()
    monkeypatch.chdir(folder)
    argv = ["--path", str(folder), *RECORD[:-1], "baseline", "--replace"]
    assert cli.main(argv) == cli.DONE, capsys.readouterr().err
    assert (folder / "run.json").read_bytes() == kept
