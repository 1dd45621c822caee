"""`python -m workbench record|map|compare`: the workbench's three steps from a shell.

For a reader whose TF1 code lives in a repository: name functions as `module:function`
(importable from the current folder, or from `--path`). Each command prints its report on
stdout and its progress on stderr. Exit codes, for scripts:

- 0: done (record: the baseline is written; map: every variable is accounted for, and with
  --first-loss the mapping as made is the one order that fits; compare: the synchronized
  verdict passed (--model, --step), or, free-running, the runs agree within the tolerances
  or the one-ulp check shows amplified rounding);
- 1: the input was refused, with one line on stderr saying what to change;
- 2: the command line itself is wrong (argparse's usage message);
- 3: map: some variable is unmatched or ambiguous (the report says which), or, with
  --first-loss, the mapping as made is not the one assignment that reproduces the baseline's
  first loss (none does, several do, or another one does: the report gives its pairs, for
  rules);
- 4: compare: the synchronized verdict (--model, --step) parts, or, free-running (--run), the
  runs part and the one-ulp check (--nudged) did not show it to be amplified rounding (the
  report gives the step, the variables or the worst element, and the causes);
- 5: the workbench itself failed (a bug to report): one line on stderr names the error and
  the file where the full traceback was written.

A refusal longer than 400 characters or of several lines (a mapping's list of names) is cut
to its start on stderr, and the whole message is written to a file that the line names.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import tempfile
import traceback
import warnings
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workbench.errors import FriendlyError, first_line

DONE, REFUSED, USAGE, UNMAPPED, DIFFERENT, FAILED = 0, 1, 2, 3, 4, 5
LONGEST_LINE = 400  # characters of a refusal on stderr; the rest goes to a file


class CliError(FriendlyError, ValueError):
    """A command-line value the workbench cannot use."""


def load_function(spec: str, what: str) -> Callable[..., Any]:
    """`module:function` (dots allowed in both parts) as the object it names."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise CliError(f"{what} {spec!r}: write it as module:function (my_model:model_fn)")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise CliError(
            f"{what} {spec!r}: {module_name} cannot be imported ({error}); run from the folder "
            "that holds it or pass --path"
        ) from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise CliError(f"{what} {spec!r}: {module_name} has no {attribute}")
        found = getattr(found, part)
    if not callable(found):
        raise CliError(f"{what} {spec!r} is a {type(found).__name__}, not a function")
    return found


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(f"{what} is not JSON ({error}): write it as '{{\"key\": 1}}'") from None
    if not isinstance(value, dict):
        raise CliError(f"{what} is a JSON {type(value).__name__}: give an object, {{...}}")
    return value


def _pairs(items: Sequence[str], what: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"{what} {item!r}: write it as LEFT=RIGHT")
        pairs.append((key, value))
    return pairs


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def record(args: argparse.Namespace) -> int:
    from workbench.record import record_baseline

    _quiet_tensorflow()
    baseline = record_baseline(
        load_function(args.model_fn, "--model-fn"),
        load_function(args.input_fn, "--input-fn"),
        args.out,
        batch_size=args.batch_size,
        steps=args.steps,
        params=_json_object(args.params, "--params"),
        eval_input_fn=load_function(args.eval_input_fn, "--eval-input-fn")
        if args.eval_input_fn
        else None,
        eval_steps=args.eval_steps,
        seed=args.seed,
        tensors=dict(_pairs(args.tensor, "--tensor")),
        replace=args.replace,
        progress=_progress,
        session_config=_called(
            load_function(args.session_config, "--session-config"),
            f"--session-config {args.session_config}",
        )
        if args.session_config
        else None,
    )
    print(baseline.summary())
    return DONE


def _called(function: Callable[..., Any], what: str, *args: Any) -> Any:
    """Call the user's function; what it raises is a refusal naming it, not a workbench bug."""
    try:
        return function(*args)
    except Exception as error:
        raise CliError(f"{what} raised {first_line(error)}: fix it, then run this again") from None


def _read_json(text: str, what: str) -> Any:
    path = Path(text)
    if not path.is_file():
        raise CliError(f"{what} {path}: no such file")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CliError(
            f"{what} {path} is not JSON ({first_line(error)}): write it with json.dump (a "
            "truncated file: write it again)"
        ) from None


def _read_npz(text: str, what: str) -> dict[str, Any]:
    import numpy as np

    path = Path(text)
    if not path.is_file():
        raise CliError(f"{what} {path}: no such file")
    try:
        stored = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise CliError(
            f"{what} {path} cannot be read as .npz ({first_line(error)}): write it with "
            "np.savez(path, **mapping.tf2_values(weights_only=True))"
        ) from None
    if not isinstance(stored, np.lib.npyio.NpzFile):
        raise CliError(f"{what} {path} holds one array (.npy), not named arrays: use np.savez")
    with stored:
        try:
            return {name: stored[name] for name in stored.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
            raise CliError(
                f"{what} {path} is damaged ({first_line(error)}): write it again with np.savez"
            ) from None


def _built(factory: Callable[[], Any], spec: str) -> tuple[Any, Any]:
    """What --model returns: a built Keras model, or (model, optimizer)."""
    made = _called(factory, f"--model {spec}")
    if isinstance(made, tuple) and len(made) == 2:
        made, optimizer = made
    elif isinstance(made, tuple):
        raise CliError(
            f"--model {spec} returned a tuple of {len(made)}: return the built Keras model, "
            "or (model, optimizer)"
        )
    else:
        optimizer = getattr(made, "optimizer", None)
    if not (hasattr(made, "weights") or isinstance(made, list | dict)):
        raise CliError(
            f"--model {spec} returned a {type(made).__name__}: return the built Keras model, "
            "or (model, optimizer)"
        )
    return made, optimizer


def _mapped(args: argparse.Namespace, checkpoint: Any) -> tuple[Any, Any, Any]:
    """(model, optimizer, mapping): --model built and `checkpoint` mapped onto it by the
    --rule, --slot and --new options that map and compare share."""
    from workbench.mapping import map_checkpoint

    model, optimizer = _built(load_function(args.model, "--model"), args.model)
    rules = [(pattern, None if to == "-" else to) for pattern, to in _pairs(args.rule, "--rule")]
    mapping = map_checkpoint(
        checkpoint,
        model,
        rules=rules,
        optimizer=optimizer,
        slot_lists=dict(_pairs(args.slot, "--slot")),
        new=args.new,
    )
    return model, optimizer, mapping


def map_(args: argparse.Namespace) -> int:
    from workbench.record import load_baseline

    if args.first_step and not args.first_loss:
        raise CliError("--first-step goes with --first-loss: give both")
    _quiet_tensorflow()
    baseline = load_baseline(args.baseline)
    checkpoint = baseline.final_checkpoint if args.final else baseline.checkpoint
    model, _, mapping = _mapped(args, checkpoint)
    print(mapping.report())
    if not args.first_loss:
        return UNMAPPED if mapping.problems() else DONE
    return _check_swaps(args, baseline, model, mapping)


def _check_swaps(args: argparse.Namespace, baseline: Any, model: Any, mapping: Any) -> int:
    """--first-loss: the swap check on the baseline's first batch (the model in this process
    only is assigned; nothing is written)."""
    from workbench.mapping import AMBIGUOUS
    from workbench.swaps import CONFIRMED, RESOLVED, SWAPPED, check_swaps

    if args.final:
        raise CliError("--first-loss checks model.ckpt-0, the start: leave out --final")

    unmatched = [r for r in mapping.problems() if r.status != AMBIGUOUS]
    if unmatched:
        return UNMAPPED  # the report above names them; an unmatched variable has no trial
    loss_of = load_function(args.first_loss, "--first-loss")
    features, labels = baseline.batches()[0]
    what = f"--first-loss {args.first_loss} (called as f(model, features, labels))"

    def first_loss() -> float:
        loss = _called(loss_of, what, model, features, labels)
        try:
            return float(loss)
        except (TypeError, ValueError):
            raise CliError(f"{what} returned a {type(loss).__name__}, not one number") from None

    step, after = None, None
    if args.first_step:
        after = baseline.after_first_step()
        if after is None:
            raise CliError(
                "--first-step: this baseline holds no state after its first step (recorded "
                "by an older workbench): record it again"
            )
        step_of = load_function(args.first_step, "--first-step")
        stepped = f"--first-step {args.first_step} (called as f(model, features, labels))"

        def step() -> None:
            _called(step_of, stepped, model, features, labels)

    check = check_swaps(
        mapping, first_loss, baseline.steps[0]["loss"], first_step=step, after_first_step=after
    )
    print(check.summary())
    if check.verdict in (SWAPPED, RESOLVED):
        print("the assignment that fits, in TF1 name -> TF2 name (write rules for it):")
        before = mapping.target_names()
        for name, target in check.mapping.target_names().items():
            if before.get(name) != target:
                print(f"  {name} -> {target}")
    return DONE if check.verdict == CONFIRMED else UNMAPPED


def _current_rate(optimizer: Any) -> float | None:
    """The optimizer's rate for the step about to run (its schedule at its iterations), or
    None where it cannot be read (then the rate is not one of the stages)."""
    try:
        schedule = getattr(optimizer, "_learning_rate", None)  # Keras 2 and 3 keep it here
        rate = schedule if callable(schedule) else optimizer.learning_rate
        if callable(rate):  # a schedule: its rate at the step about to run
            rate = rate(optimizer.iterations)
        return float(rate.numpy() if hasattr(rate, "numpy") else rate)
    except Exception:  # an optimizer of the reader's that reads its rate otherwise
        return None


def _synchronized(args: argparse.Namespace, baseline: Any) -> Any:
    from workbench.synchronized import compare_synchronized

    model, optimizer, mapping = _mapped(args, baseline.checkpoint)
    if mapping.problems():
        print(mapping.report())
        raise CliError(
            "the mapping leaves variables unmatched or ambiguous (the report above): settle "
            "them with map, then give compare the same --rule, --slot and --new"
        )
    step_of = load_function(args.step, "--step")
    what = f"--step {args.step} (called as f(model, features, labels))"
    apply_gradients = None
    if args.apply:
        apply_of = load_function(args.apply, "--apply")
        applied = f"--apply {args.apply} (called as f(model, pairs))"
        apply_gradients = lambda pairs: _called(apply_of, applied, model, pairs)  # noqa: E731
    return compare_synchronized(
        baseline,
        mapping,
        lambda features, labels: _called(step_of, what, model, features, labels),
        rate=lambda: _current_rate(optimizer),
        apply_gradients=apply_gradients,
    )


def compare(args: argparse.Namespace) -> int:
    from workbench.compare import (
        AMPLIFIED_ROUNDING,
        IDENTICAL,
        WITHIN,
        amplified_rounding,
        compare_runs,
        likely_causes,
    )
    from workbench.record import load_baseline

    if bool(args.model) != bool(args.step):
        raise CliError("--model and --step go together: give both for the synchronized verdict")
    if args.apply and not args.step:
        raise CliError("--apply goes with --model and --step (the synchronized verdict)")
    if not args.run and not args.step:
        raise CliError("give --model and --step (synchronized), --run (free-running), or both")
    _quiet_tensorflow()
    baseline = load_baseline(args.baseline)
    if args.batch_size is not None and args.batch_size != baseline.batch_size:
        raise CliError(
            f"--batch-size {args.batch_size}: the baseline trained on batches of "
            f"{baseline.batch_size}; train the TF2 run on the baseline's batches "
            "(baseline.batches()), or record a baseline at this batch"
        )
    synchronized = _synchronized(args, baseline) if args.step else None
    if synchronized is not None:
        print(synchronized.summary())
        if not args.run:
            return DONE if synchronized.passed else DIFFERENT
    candidate: Any = _read_json(args.run, "--run")
    if not isinstance(candidate, list | dict):
        raise CliError(
            f"--run {args.run} holds a JSON {type(candidate).__name__}: give a list of per-step "
            'objects ([{"loss": ...}, ...]) or an object of lists ({"losses": [...]})'
        )
    nudged = _read_json(args.nudged, "--nudged") if args.nudged else None
    names = None
    if args.weights:
        weights = _read_npz(args.weights, "--weights")
        if isinstance(candidate, list):
            candidate = {"steps": candidate}
        evaluation = {"evaluation": candidate["evaluation"]} if "evaluation" in candidate else {}
        candidate = {**_stepwise(candidate), "weights": weights, **evaluation}
        names = list(weights)
    comparison = compare_runs(baseline.run(weight_names=names or []), candidate)
    print(comparison.summary())
    verdict, _ = comparison.verdict()
    rounding = None
    if args.nudged:
        rounding = amplified_rounding(comparison, nudged)
        print(f"one-ulp check: {rounding.verdict}")
    agrees = verdict in (IDENTICAL, WITHIN) or bool(
        rounding and rounding.verdict == AMPLIFIED_ROUNDING
    )
    if synchronized is not None:
        if agrees != synchronized.passed:
            print(
                f"the two verdicts disagree: the free-running comparison says {verdict}, the "
                f"synchronized one {'passed' if synchronized.passed else 'parts'}; the "
                "synchronized verdict decides (one step from TF1's state cannot amplify)"
            )
        return DONE if synchronized.passed else DIFFERENT
    if agrees:
        return DONE
    print("likely causes, in the checklist's order (the most telling observation first):")
    for cause in likely_causes(comparison, rounding):
        print(f"- {cause.name}: {cause.why}")
    return DIFFERENT


def _stepwise(candidate: dict[str, Any]) -> dict[str, Any]:
    from workbench.compare import as_run

    run = as_run(candidate.get("steps", candidate), "--run")
    return {key: list(values) for key, values in run.stepwise.items()}


def _quiet_tensorflow() -> None:
    """TensorFlow's start-up and deprecation messages off, as in the notebooks: its C++ log
    level is read at its first import (a process that imported TensorFlow already, such as a
    test calling main(), has chosen its own; TPU_MIGRATION_VERBOSE=1 keeps them)."""
    verbose = os.environ.get("TPU_MIGRATION_VERBOSE", "").strip().lower()
    if "tensorflow" in sys.modules or verbose not in ("", "0", "false"):
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    logging.getLogger("tensorflow").setLevel(logging.ERROR)  # TF1's deprecation warnings
    warnings.filterwarnings("ignore", module=r"(tensorflow|tensorflow_estimator|keras|absl)(\.|$)")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


def _repeatable(parser: argparse.ArgumentParser, flag: str, metavar: str, help: str) -> None:
    parser.add_argument(flag, action="append", default=[], metavar=metavar, help=help)


def _mapping_options(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """--rule, --slot and --new, which map and compare (synchronized) read alike."""
    _repeatable(
        parser, "--rule", "PATTERN=REPLACEMENT",
        f"{prefix}a name rule (re.sub on TF1 names; a replacement of - leaves it out); repeatable",
    )  # fmt: skip
    _repeatable(
        parser, "--slot", "NAME=LIST",
        f"{prefix}the Keras optimizer's list (an attribute) for a TF1 slot name it does not know "
        "(lamb_m=_momentums); repeatable",
    )  # fmt: skip
    _repeatable(
        parser, "--new", "PATTERN",
        f"{prefix}TF2 names that keep their initial values (a new head over a published "
        "checkpoint); repeatable",
    )  # fmt: skip


def parser() -> argparse.ArgumentParser:
    invoked = Path(sys.argv[0]).name
    top = argparse.ArgumentParser(
        prog=invoked if invoked.startswith("tpu-workbench") else "python -m workbench",
        description="Apply the migration method to your own TPUEstimator model: record its TF1 "
        "baseline, map the baseline's checkpoint onto your Keras model, compare your TF2 run.",
        epilog="Exit codes: 0 done, 1 input refused (one line says what to change), 2 usage, "
        "3 variables left unmapped, or the swap check found another order, several or none, 4 "
        "the synchronized verdict parts, or free-running the runs part (beyond "
        "rounding), 5 the workbench failed (the line names the file holding the traceback).",
    )
    top.add_argument("--path", default=".", help="folder to import your modules from (.)")
    commands = top.add_subparsers(dest="command", required=True)

    rec = commands.add_parser(
        "record",
        help="train model_fn with TPUEstimator(use_tpu=False) and write the baseline",
        description="Needs TensorFlow 2.15 with tensorflow-estimator. Writes OUT/baseline.json, "
        "OUT/batches.npz, OUT/states.npz (TF1's state after each step, as many as fit in 64 MB) "
        "and OUT/checkpoints/ (model.ckpt-0 and the last checkpoint).",
    )
    rec.add_argument("--model-fn", required=True, help="module:function, your model_fn")
    rec.add_argument("--input-fn", required=True, help="module:function, your training input_fn")
    rec.add_argument("--batch-size", type=int, required=True, help="the global training batch")
    rec.add_argument("--steps", type=int, required=True, help="training steps to record")
    rec.add_argument("--out", required=True, help="a new folder for the baseline")
    rec.add_argument("--params", default="{}", help="JSON object passed as params ({})")
    rec.add_argument("--eval-input-fn", help="module:function; records evaluate()'s metrics")
    rec.add_argument("--eval-steps", type=int, help="evaluation steps (all the data if unset)")
    rec.add_argument("--seed", type=int, default=0, help="RunConfig's tf_random_seed (0)")
    _repeatable(
        rec, "--tensor", "QUANTITY=TENSOR",
        "name a tensor the graph search misses (learning_rate=my_rate:0); repeatable",
    )  # fmt: skip
    rec.add_argument(
        "--session-config",
        metavar="MODULE:FUNCTION",
        help="a function returning the tf.compat.v1.ConfigProto your RunConfig passes",
    )
    rec.add_argument("--replace", action="store_true", help="record again over a baseline")
    rec.set_defaults(handler=record)

    mapper = commands.add_parser(
        "map",
        help="match the baseline's checkpoint to your Keras model and report every variable",
        description="--model names a function that returns your built Keras model (compiled, "
        "with its optimizer built) or (model, optimizer). Nothing is written; only --first-loss "
        "assigns, to the model in this process.",
    )
    mapper.add_argument("--baseline", required=True, help="a folder `record` wrote")
    mapper.add_argument("--model", required=True, help="module:function returning the model")
    _mapping_options(mapper)
    mapper.add_argument(
        "--final", action="store_true", help="map the last checkpoint, not model.ckpt-0"
    )
    mapper.add_argument(
        "--first-loss",
        metavar="MODULE:FUNCTION",
        help="f(model, features, labels) -> the loss of the baseline's first batch, no update: "
        "runs the swap check (check_swaps) on model.ckpt-0",
    )
    mapper.add_argument(
        "--first-step",
        metavar="MODULE:FUNCTION",
        help="with --first-loss: f(model, features, labels) trains one step on the batch, as TF1's "
        "first; an order fits only if every variable's first update matches TF1's too",
    )
    mapper.set_defaults(handler=map_)

    comparer = commands.add_parser(
        "compare",
        help="compare your TF2 run with the baseline, step by step, with a verdict",
        description="Synchronized (--model and --step): each TF2 step starts from TF1's state "
        "and is compared with TF1's next state; the verdict. Free-running (--run): JSON, a "
        "list of per-step objects (loss, learning_rate, gradient_norm) or an object of lists, "
        "with `evaluation` (metric: value) to compare the evaluation too; "
        "--weights: .npz of the final weights by TF1 name (mapping.tf2_values(weights_only="
        "True)). Given both, the synchronized verdict decides and a disagreement is reported.",
    )
    comparer.add_argument("--baseline", required=True, help="a folder `record` wrote")
    comparer.add_argument("--run", help="the TF2 run's per-step values (JSON)")
    comparer.add_argument(
        "--model", metavar="MODULE:FUNCTION", help="synchronized: your built model, as for map"
    )
    comparer.add_argument(
        "--step",
        metavar="MODULE:FUNCTION",
        help="synchronized: f(model, features, labels) trains one step; may return the loss, "
        "or a dict of loss, gradient_norm and gradients (before any clip; gradients as a list "
        "of (gradient, variable) pairs or a dict by TF1 name), each compared with TF1's",
    )
    comparer.add_argument(
        "--apply",
        metavar="MODULE:FUNCTION",
        help="synchronized: f(model, pairs) applies TF1's own gradients, a list of (gradient, "
        "variable) pairs, as your step applies its own (your clip, then the optimizer's "
        "apply_gradients): the update is compared on its own, which tells the optimizer's side "
        "from the gradients",
    )
    _mapping_options(comparer, "synchronized: ")
    comparer.add_argument("--weights", help="the TF2 run's final weights by TF1 name (.npz)")
    comparer.add_argument(
        "--nudged", help="the same TF2 run from a start moved by one ulp (JSON): the rounding check"
    )
    comparer.add_argument(
        "--batch-size", type=int, help="the TF2 run's global batch: refused unless the baseline's"
    )
    comparer.set_defaults(handler=compare)
    return top


def _written(prefix: str, text: str) -> Path:
    """A new file in the system's temporary folder holding `text` (never one of the user's)."""
    handle, name = tempfile.mkstemp(prefix=f"workbench-{prefix}-", suffix=".txt")
    with os.fdopen(handle, "w") as file:
        file.write(text)
    return Path(name)


def refusal_line(error: BaseException) -> str:
    """The one line a refusal prints: short messages whole, long ones cut, with the whole
    message in a file the line names (a mapping's lists of names run to thousands of
    characters)."""
    line = f"{type(error).__name__}: {error}"
    if len(line) <= LONGEST_LINE and "\n" not in line:
        return line
    kept = line.splitlines()[0][: LONGEST_LINE - 100].rstrip()
    return f"{kept} ... (the whole message is in {_written('message', line + chr(10))})"


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    path = Path(args.path)
    if not path.is_dir():
        print(
            f"CliError: --path {args.path}: no such folder; name the folder your modules are in",
            file=sys.stderr,
        )
        return REFUSED
    sys.path.insert(0, str(path.resolve()))
    try:
        return args.handler(args)
    except FriendlyError as error:
        print(refusal_line(error), file=sys.stderr)
        return REFUSED
    except Exception as error:  # a bug of the workbench's: one line, the trace in a file
        trace = _written("traceback", traceback.format_exc())
        print(
            f"the workbench failed: {first_line(error)} (an unexpected error; the full "
            f"traceback is in {trace}: please report it)",
            file=sys.stderr,
        )
        return FAILED


if __name__ == "__main__":
    sys.exit(main())
