"""Store notebook 01's TPUEstimator run in fixtures/tf1_reference, where notebook 04 reads it.

With `--notebook 10` it stores notebook 10's run (its convolutional `model_fn` with batch norm)
in fixtures/tf1_conv, with `model.ckpt-0` as `checkpoint` and the last checkpoint as
`final_checkpoint`, both copied. With `--notebook 09` it stores notebook 09's run (its
`model_fn` with feature columns) in fixtures/tf1_model_fn instead, and with `--notebook 12`
notebook 12's (clipping and hooks; its last checkpoint, no SavedModel) in
fixtures/tf1_clipping, and with `--notebook 13` notebook 13's (exporters and serving; its
final export, no checkpoint) in fixtures/tf1_export, and with `--notebook 14` notebook 14's
(TPU embeddings; the checkpoints after 8 and 16 steps and the export) in
fixtures/tf1_embedding, and with `--notebook 15` notebook 15's (a Transformer classifier; its
`model.ckpt-0` and last checkpoint) in fixtures/tf1_transformer, and with `--notebook 16` the
workbench baseline notebook 16 records (the folder as `workbench.record_baseline` wrote it) in
fixtures/workbench_tabular, the same way: the notebook
runs at its defaults with `model_dir` a new temporary folder and `compare_stored=False`, and
writes its run into `model_dir` (`tf1_run.json` with the same `checkpoint` and `saved_model`
paths, documented in its "The run, stored"); notebooks 09 and 10 themselves check a live run
against the stored one.

`.venv/bin/python -m tools.make_tf1_fixture` (TensorFlow 2.15: it needs
`tf.compat.v1.estimator`). It runs notebooks/01_tpu_estimator.ipynb with papermill at its
default parameters, with `model_dir` a new temporary folder, and copies the run that the
notebook saved there. The TensorFlow 1 code exists once, in notebook 01; a test
(tests/test_tf1_run.py) runs 01 again and checks that it still agrees with the stored run.

Notebook 01 writes into `model_dir` (documented in its appendix "the run, saved for notebook 04"):
- `tf1_run.json`: the settings, the loss of every training step, the final weights, the
  predictions on the evaluation set, the losses and weights of the resumed steps, and the
  paths (relative to `model_dir`) of the checkpoint of the last training step and of the
  exported SavedModel.

The stored copy (about 60 KB):
- `tf1_run.json`, with `checkpoint` and `saved_model` pointing into the copy;
- `checkpoint/model.ckpt-<steps>.{index,data-00000-of-00001}` (weights, Adagrad
  accumulators, global_step; the `.meta` graph is left out);
- `saved_model/`: what `export_saved_model` wrote;
- `manifest.json`: every file with its sha256 (used to download the run in Colab).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from helpers.fixtures import MANIFEST, file_digest
from tools.nbexec import execute
from tools.project import NOTEBOOKS, ROOT

NOTEBOOK = NOTEBOOKS / "01_tpu_estimator.ipynb"
DEFAULT_OUT = ROOT / "fixtures" / "tf1_reference"
# --notebook NN: the notebook whose run is stored, and the fixture folder it goes to
STORED_RUNS = {
    "01": (NOTEBOOK.name, DEFAULT_OUT.name),
    "09": ("09_real_model_fn.ipynb", "tf1_model_fn"),
    "10": ("10_conv_batch_norm.ipynb", "tf1_conv"),
    "12": ("12_clipping_and_hooks.ipynb", "tf1_clipping"),
    "13": ("13_export_and_serving.ipynb", "tf1_export"),
    "14": ("14_tpu_embeddings.ipynb", "tf1_embedding"),
    "15": ("15_transformer_classifier.ipynb", "tf1_transformer"),
    "16": ("16_migrate_your_own_model.ipynb", "workbench_tabular"),
}


def run_notebook_01(model_dir: Path) -> Path:
    """Run notebook 01 at its defaults with `model_dir`; return the folder holding its run."""
    outcome = execute(
        NOTEBOOK, model_dir.parent / "01_executed.ipynb", {"model_dir": str(model_dir)}
    )
    if not outcome.passed:
        raise RuntimeError(f"notebook 01 failed: {outcome.summary()}")
    return model_dir


def run_notebook_comparing_nothing(notebook: Path, model_dir: Path) -> Path:
    """Run notebook 09, 10, 12, 13, 14 or 15 at its defaults with `model_dir`, not comparing with
    its stored run (`compare_stored=False`); return `model_dir`, where it wrote its run."""
    parameters = {"model_dir": str(model_dir), "compare_stored": False}
    executed = model_dir.parent / f"{notebook.name[:2]}_executed.ipynb"
    outcome = execute(notebook, executed, parameters)
    if not outcome.passed:
        raise RuntimeError(f"notebook {notebook.name[:2]} failed: {outcome.summary()}")
    return model_dir


def write_manifest(directory: Path) -> dict[str, str]:
    """List every file under `directory` with its sha256 in `manifest.json`; return the list."""
    files = {
        path.relative_to(directory).as_posix(): file_digest(path)
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != MANIFEST
    }
    (directory / MANIFEST).write_text(json.dumps({"files": files}, indent=1) + "\n")
    return files


def clear_stored(out: Path) -> None:
    """Remove `out` if it is a stored run (it has a manifest); refuse any other folder with
    files in it, never deleting it."""
    if (out / MANIFEST).is_file():
        shutil.rmtree(out)
    elif out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} holds files but no {MANIFEST}: choose an empty or new --out")


def copy_run(model_dir: Path, out: Path, notebook: str = "01") -> dict:
    """Copy the run that notebook 01 (or 09, 10, 12, 13, 14, 15) saved in `model_dir` to `out`;
    return its tf1_run.json.

    `out` is replaced only when it is a stored run already (`clear_stored`).
    """
    run = json.loads((model_dir / "tf1_run.json").read_text())
    clear_stored(out)
    out.mkdir(parents=True, exist_ok=True)
    for key in ("checkpoint", "final_checkpoint"):  # notebooks 10, 14, 15 store their last one too
        if key not in run:
            continue
        prefix = model_dir / run[key]
        (out / "checkpoint").mkdir(exist_ok=True)
        for suffix in (".index", ".data-00000-of-00001"):
            shutil.copyfile(f"{prefix}{suffix}", out / "checkpoint" / f"{prefix.name}{suffix}")
        run[key] = f"checkpoint/{prefix.name}"
    if "saved_model" in run:  # notebook 12 exports none
        shutil.copytree(model_dir / run["saved_model"], out / "saved_model")
        run["saved_model"] = "saved_model"
    option = "" if notebook == "01" else f" --notebook {notebook}"
    run["made_by"] = (
        f"python -m tools.make_tf1_fixture{option} (notebook {notebook} at its defaults)"
    )
    (out / "tf1_run.json").write_text(json.dumps(run, indent=1) + "\n")
    write_manifest(out)
    return run


def copy_baseline(model_dir: Path, out: Path) -> dict:
    """Copy the workbench baseline that notebook 16 recorded in `model_dir/baseline` to `out`
    (the folder as `workbench.record_baseline` wrote it, plus a manifest); return its
    baseline.json. `out` is replaced only when it is a stored run already (`clear_stored`)."""
    clear_stored(out)
    shutil.copytree(model_dir / "baseline", out, dirs_exist_ok=True)
    write_manifest(out)
    return json.loads((out / "baseline.json").read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", choices=tuple(STORED_RUNS), default="01")
    folders = ", ".join(f"{folder} ({number})" for number, (_, folder) in STORED_RUNS.items())
    parser.add_argument("--out", type=Path, help=f"default: under fixtures/, {folders}")
    args = parser.parse_args(argv)
    notebook_name, folder = STORED_RUNS[args.notebook]
    args.out = args.out or ROOT / "fixtures" / folder
    if args.notebook == "01":
        run_notebook = run_notebook_01
    else:
        notebook = NOTEBOOKS / notebook_name
        run_notebook = lambda model_dir: run_notebook_comparing_nothing(notebook, model_dir)  # noqa: E731
    try:
        import tensorflow_estimator  # noqa: F401
    except ImportError:
        print("make_tf1_fixture: needs TensorFlow 2.15 with tensorflow-estimator", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="tf1-run-") as scratch:
        model_dir = run_notebook(Path(scratch) / "model_dir")
        if args.notebook == "16":
            run = copy_baseline(model_dir, args.out.resolve())
        else:
            run = copy_run(model_dir, args.out.resolve(), args.notebook)
    total = sum(path.stat().st_size for path in args.out.rglob("*") if path.is_file())
    print(f"wrote {args.out} ({total / 1024:.0f} KB) with TensorFlow {run['tensorflow']}")
    if "losses" in run:  # notebook 13's run has evaluation losses only
        print(f"final loss {run['losses'][-1]:.8f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
