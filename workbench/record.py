"""Record a TF1 baseline: the run every later step of a migration is compared with.

`record_baseline` trains the reader's own `model_fn` and `input_fn` with
`TPUEstimator(use_tpu=False)` on the CPU, one step per session call, and writes what a TF2 run
is compared with into one directory (`FORMAT`, described in `Baseline`):

- each step's loss, learning rate and global gradient norm (before clipping), found in the
  graph (the norm computed from the loss's gradients where no clip is found), so the
  `model_fn` needs no `host_call` (notebook 15 shows the method);
- TF1's whole state (weights, slots, averages, step) after each of the first steps
  (`states.npz`; every step while they and the gradients fit in `STATE_BYTES`), from which
  the TF2 side takes one step at a time (`workbench.compare_synchronized`) and which tells
  exchanged layers apart where the first loss cannot (`check_swaps(first_step=...)`);
- at those steps, the gradient of the `EstimatorSpec`'s loss with respect to each trainable
  variable, before any clip (`gradients.npz`; dense: a `tf.IndexedSlices` gradient's rows
  summed per index; zeros where the loss does not reach a variable), which the synchronized
  comparison's gradient stage compares with TF2's. It is TF1's applied gradient where the
  train_op differentiates that loss: where a clip's norm is found, the recorded gradients' norm
  is checked against it at every step, and they are not kept if it differs (a train_op that
  minimizes another loss). Not recorded for ref variables (`disable_v2_behavior`), whose reads
  a second backward pass cannot order before the update, nor where an op has no gradient;
  `Baseline.gradients_note` says why;
- the batches each step trained on, so the TF2 side trains on the same examples in the same
  order;
- `model.ckpt-0` (the weights and optimizer slots before the first update: start TF2 from it)
  and the last checkpoint (what the TF2 run's final weights are compared with);
- the seeds and shapes of the graph's random ops (dropout's `RandomUniform`), and the
  evaluation metrics when an `eval_input_fn` is given.

The baseline comes from a CPU: `TPUEstimator` needs TensorFlow 2.15 with `tensorflow-estimator`
(the reference lane), which Colab cannot install, and under 2.15 it is reported to fail on
current TPUs (tensorflow#90807, a v5p). A baseline
recorded once is read anywhere with `load_baseline`, which needs no TensorFlow 1 API.

Nothing is lost or overwritten: the run is written into a new folder beside `out_dir` and
moved there only when complete; an `out_dir` that exists is refused unless it is empty, or a
baseline this module wrote and `replace=True`, and then only the files its `baseline.json`
lists are replaced (anything else in the folder stays). `baseline.json` lists every file with
its size and SHA-256, and `load_baseline` checks them, so a truncated or replaced file is
named before anything reads it. A failed recording leaves nothing, not even the folders it made.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import FriendlyError, first_line

FORMAT = "tpu-migration-workbench baseline"
VERSION = 2  # 2: baseline.json lists each file's size and SHA-256
MANIFEST = "baseline.json"
BATCHES = "batches.npz"
STATES = "states.npz"  # TF1's whole state (`STEP/NAME`) after each of the first steps
GRADIENTS = "gradients.npz"  # the loss's gradient of each trainable variable at those steps
STATE_BYTES = 64 << 20  # the most the states and gradients may take: all steps of a small model
MODEL_DIR = "estimator"  # TPUEstimator's model_dir while recording; removed afterwards
CHECKPOINTS = "checkpoints"
# The per-step quantities, by the names workbench.compare reads.
QUANTITIES = ("loss", "learning_rate", "gradient_norm")
# Stateful random ops whose seeds fix a TF1 run's draws (dropout is RandomUniform). Ops under
# a variable's `Initializer` scope only initialise it: model.ckpt-0 holds what they drew.
RANDOM_OPS = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt"}
# The input of an optimizer's Apply op that is its learning rate (TF1's training ops).
RATE_INPUTS = {"lr", "alpha"}


# What baseline.json must hold for load_baseline (besides format and version).
REQUIRED = (
    "tensorflow",
    "batch_size",
    "steps",
    "found",
    "random_ops",
    "clip_norm",
    "evaluation",
    "checkpoint",
    "final_checkpoint",
    "files",
)


class RecordError(FriendlyError, ValueError):
    """The baseline cannot be recorded or read as asked; the message says what to change."""


@dataclass(frozen=True)
class Baseline:
    """A recorded TF1 run, read from its directory.

    The directory holds `baseline.json` (this object's fields, paths relative to it),
    `batches.npz` (`features` or `features/NAME`, and `labels` or `labels/NAME`, each stacked
    over the steps: `[steps, batch, ...]`) and `checkpoints/` (`model.ckpt-0` and the last
    checkpoint, as TPUEstimator wrote them, without the graph; the model_dir is not kept).
    `baseline.json` also holds the `seed` and the Python it was `recorded_with`.
    """

    directory: Path
    tensorflow: str
    batch_size: int
    steps: list[dict[str, float]]
    found: dict[str, str | None]
    random_ops: list[dict[str, Any]]
    clip_norm: float | None  # clip_by_global_norm's clip_norm, found beside the norm
    evaluation: dict[str, float] | None
    checkpoint: Path
    final_checkpoint: Path
    states: Path | None = None  # STATES, where recorded
    state_steps: int = 0  # the steps after which `states` holds TF1's state: 1..state_steps
    gradients: Path | None = None  # GRADIENTS, where recorded: steps 0..state_steps - 1
    gradients_note: str | None = None  # why the gradients were not recorded, where they were not

    def state(self, step: int) -> dict[str, np.ndarray]:
        """TF1's variables by name after `step` updates: model.ckpt-0 for 0, else `states`."""
        from workbench.mapping import read_checkpoint

        if step == 0:
            return read_checkpoint(self.checkpoint)
        if self.states is None or not 1 <= step <= self.state_steps:
            raise RecordError(
                f"the baseline holds TF1's state after steps 1 to {self.state_steps}, not after "
                f"step {step}: record it again (a smaller model keeps more steps)"
            )
        return _step_arrays(self.states, step)

    def gradient(self, step: int) -> dict[str, np.ndarray] | None:
        """The loss's gradient of each trainable variable at `step` (0-based: from the state
        after `step` updates, on batch `step`), before any clip, by TF1 name; None where the
        baseline holds none (recorded by an older workbench, or past `state_steps`)."""
        if self.gradients is None or not 0 <= step < self.state_steps:
            return None
        return _step_arrays(self.gradients, step)

    def after_first_step(self) -> dict[str, np.ndarray] | None:
        """TF1's variables after the first update, by TF1 name (None for a baseline recorded
        without states): what `check_swaps(first_step=...)` compares one TF2 step with, where
        the first loss cannot tell exchanged layers apart."""
        return self.state(1) if self.states is not None and self.state_steps else None

    def batches(self) -> list[tuple[Any, Any]]:
        """The `(features, labels)` of each step, as the `input_fn` gave them."""
        path = self.directory / BATCHES
        try:
            with np.load(path, allow_pickle=False) as stored:
                arrays = {key: stored[key] for key in stored.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
            raise RecordError(
                f"{path} cannot be read ({first_line(error)}): record the baseline again"
            ) from None
        parts = [_unflatten(arrays, part) for part in ("features", "labels")]
        return [tuple(_select(part, step) for part in parts) for step in range(len(self.steps))]

    def run(self, weight_names: list[str] | None = None) -> dict[str, Any]:
        """The run as `workbench.compare_runs` reads it: per-step lists and final weights
        (all of the last checkpoint's variables, or `weight_names`)."""
        from workbench.compare import PER_STEP_KEYS
        from workbench.mapping import read_checkpoint

        logged = [
            key for key in QUANTITIES if all(step.get(key) is not None for step in self.steps)
        ]
        run: dict[str, Any] = {
            PER_STEP_KEYS[key]: [step[key] for step in self.steps] for key in logged
        }
        run["weights"] = read_checkpoint(self.final_checkpoint, weight_names)
        run["clip_norm"] = self.clip_norm
        if self.evaluation:  # the metrics evaluate() gave after the last step
            run["evaluation"] = dict(self.evaluation)
        return run

    def clip_acted(self) -> list[int] | None:
        """The steps whose gradient norm (before the clip) exceeded `clip_norm`, where the
        clip scaled the gradients; None where no clip or no norm was recorded. A missing clip
        or a larger clip_norm shows only at such steps; a clip that acts where TF1's did not (a
        smaller clip_norm, a replica's own norm) can show at any step."""
        norms = [step.get("gradient_norm") for step in self.steps]
        if self.clip_norm is None or any(norm is None for norm in norms):
            return None
        return [step for step, norm in enumerate(norms) if norm > self.clip_norm]

    def dropout_seeds(self) -> list[tuple[int, int]]:
        """`(seed, seed2)` of each RandomUniform op, in creation order (notebook 15's
        `TF1Dropout` takes them)."""
        return [
            (op["seed"], op["seed2"]) for op in self.random_ops if op["type"] == "RandomUniform"
        ]

    def _clip_line(self) -> str:
        if self.clip_norm is None:
            return "clip_by_global_norm: none found"
        line, acted = f"clip_by_global_norm: clip_norm {self.clip_norm:g}", self.clip_acted()
        if acted is None:
            return f"{line} (the gradient norm was not found: where it acted is unknown)"
        if not acted:
            return (
                f"{line}, acted at no step: the gradient norm stayed below it, so these "
                "steps cannot show a clip that is missing or set higher in TF2"
            )
        shown = ", ".join(map(str, acted[:12])) + (", ..." if len(acted) > 12 else "")
        return f"{line}, acted at {len(acted)} of {len(self.steps)} steps: {shown}"

    def _gradients_line(self) -> str:
        if self.gradients is not None:
            last = self.state_steps - 1
            return f"gradients of the loss: each trainable variable's, steps 0 to {last}"
        why = self.gradients_note or "a baseline of an older workbench"
        return f"gradients of the loss: not recorded ({why})"

    def summary(self) -> str:
        """A few lines: what was recorded, from which TensorFlow, and what was not found."""
        losses = [step["loss"] for step in self.steps]
        lines = [
            f"baseline {self.directory.name} (TensorFlow {self.tensorflow}): "
            f"{len(self.steps)} steps of {self.batch_size} examples, "
            f"loss {losses[0]:.6g} -> {losses[-1]:.6g}",
            "found in the graph: "
            + ", ".join(f"{key} = {name or 'not found'}" for key, name in self.found.items()),
            f"random ops: {len(self.random_ops)}"
            + (
                f" ({', '.join(sorted({op['type'] for op in self.random_ops}))})"
                if self.random_ops
                else ""
            ),
            self._clip_line(),
            self._gradients_line(),
            f"checkpoints: {self.checkpoint.name} (start TF2 from it), "
            f"{self.final_checkpoint.name}",
        ]
        if self.evaluation:
            lines.append(
                "evaluation: " + ", ".join(f"{k} {v:.6g}" for k, v in self.evaluation.items())
            )
        return "\n".join(lines)


def _step_arrays(path: Path, step: int) -> dict[str, np.ndarray]:
    """The arrays an `.npz` of `STEP/NAME` keys holds for `step`, by NAME; a file that cannot
    be read is one line."""
    prefix = f"{step}/"
    try:
        with np.load(path, allow_pickle=False) as stored:
            return {k[len(prefix) :]: stored[k] for k in stored.files if k.startswith(prefix)}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise RecordError(
            f"{path} cannot be read ({first_line(error)}): record the baseline again"
        ) from None


def _flatten(part: str, value: Any) -> dict[str, np.ndarray]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {f"{part}/{name}": np.asarray(v) for name, v in value.items()}
    return {part: np.asarray(value)}


def _unflatten(arrays: dict[str, np.ndarray], part: str) -> Any:
    if part in arrays:
        return arrays[part]
    named = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(f"{part}/")}
    return named or None


def _select(part: Any, step: int) -> Any:
    if part is None:
        return None
    if isinstance(part, dict):
        return {name: values[step] for name, values in part.items()}
    return part[step]


def load_baseline(directory: str | Path) -> Baseline:
    """Read a baseline that `record_baseline` wrote; refuse anything else in one line."""
    directory = Path(directory)
    manifest = directory / MANIFEST
    if not manifest.is_file():
        raise RecordError(
            f"{directory} has no {MANIFEST}: it is not a workbench baseline; record one with "
            "workbench.record_baseline (or `python -m workbench record`)"
        )
    try:
        data = json.loads(manifest.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RecordError(
            f"{manifest} is not valid JSON ({error}): record the baseline again"
        ) from None
    if data.get("format") != FORMAT:
        raise RecordError(f"{manifest} is not a workbench baseline (format {data.get('format')!r})")
    if data.get("version") != VERSION:
        raise RecordError(
            f"{manifest} is version {data.get('version')} of the baseline format and this "
            f"workbench reads version {VERSION}: record the baseline again with this workbench"
        )
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        raise RecordError(
            f"{manifest} has no {', '.join(missing)}: it was not written by this workbench's "
            "record_baseline; record the baseline again"
        )
    _check_files(directory, data["files"])
    return Baseline(
        directory=directory,
        tensorflow=data["tensorflow"],
        batch_size=data["batch_size"],
        steps=data["steps"],
        found=data["found"],
        random_ops=data["random_ops"],
        clip_norm=data["clip_norm"],
        evaluation=data["evaluation"],
        checkpoint=directory / data["checkpoint"],
        final_checkpoint=directory / data["final_checkpoint"],
        states=directory / data["states"] if data.get("states") else None,
        state_steps=int(data.get("state_steps") or 0),
        gradients=directory / data["gradients"] if data.get("gradients") else None,
        gradients_note=data.get("gradients_note"),
    )


def _file_entry(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def _check_files(directory: Path, files: Any) -> None:
    """Every file the manifest lists is there, as recorded: a truncated, replaced or missing
    file is named here, before a reader of it fails with a message about its bytes."""
    if not isinstance(files, dict) or not files:
        raise RecordError(f"{directory / MANIFEST} lists no files: record the baseline again")
    for name, recorded in sorted(files.items()):
        path = directory / name
        if not path.is_file():
            raise RecordError(
                f"{path} is missing from the baseline (its {MANIFEST} lists it): record the "
                "baseline again, or copy the whole folder"
            )
        found = _file_entry(path)
        if found != recorded:
            what = (
                f"{found['bytes']} bytes where {recorded.get('bytes')} were recorded"
                if found["bytes"] != recorded.get("bytes")
                else "other bytes than were recorded (its SHA-256 differs)"
            )
            raise RecordError(
                f"{path} has {what}: it was truncated or replaced; record the baseline again"
            )


def per_replica_batch(baseline: Baseline, replicas: int) -> int:
    """Each replica's share of the baseline's batch; refuses a batch that does not divide."""
    if replicas < 1 or baseline.batch_size % replicas:
        fits = [n for n in (1, 2, 4, 8, 16, 32) if baseline.batch_size % n == 0]
        raise RecordError(
            f"the baseline's batch of {baseline.batch_size} examples does not divide among "
            f"{replicas} replicas: run on {', '.join(map(str, fits))} replicas, or record the "
            "baseline with a batch that the replica count divides"
        )
    return baseline.batch_size // replicas


# The graph: where a model_fn's loss, learning rate and gradient norm are.


def runs_after(op: Any, other: Any) -> bool:
    """Whether `op` depends on `other`, by data or by a control dependency."""
    stack, seen = [op], set()
    while stack:
        current = stack.pop()
        if current is other:
            return True
        if current.name not in seen:
            seen.add(current.name)
            stack += [t.op for t in current.inputs] + list(current.control_inputs)
    return False


# Ops whose outputs a session cannot fetch: the Identity after them is where their value is.
CONTROL_FLOW = {"If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile"}


def _through_casts(tensor: Any) -> Any:
    """The tensor behind casts and identities, short of a tf.cond's or loop's own output (a
    warm-up written with tf.cond: its rate is `cond/Identity:0`, fetchable, not `cond:0`)."""
    while tensor.op.type in ("Cast", "Identity") and tensor.op.inputs:
        if tensor.op.inputs[0].op.type in CONTROL_FLOW:
            break
        tensor = tensor.op.inputs[0]
    return tensor


def learning_rate_in(graph: Any) -> Any | None:
    """The learning rate: the one tensor that TF1's Apply ops read as `lr` (or `alpha`), else
    (a hand-written optimizer, as BERT's) the float scalar computed from global_step that the
    most multiplications read; None when neither is there."""
    rates = set()
    for op in graph.get_operations():
        if "Apply" in op.type:
            names = [arg.name for arg in op.op_def.input_arg]
            rates |= {_through_casts(op.inputs[i]) for i, n in enumerate(names) if n in RATE_INPUTS}
    if len(rates) == 1:
        return rates.pop()
    steps = [op for op in graph.get_operations() if op.name == "global_step"]
    if rates or not steps:
        return None
    reads: dict[Any, int] = {}
    for op in graph.get_operations():
        for tensor in op.inputs if op.type == "Mul" else ():
            if tensor.shape.rank == 0 and tensor.dtype.is_floating and tensor.op.type != "Const":
                reads[tensor] = reads.get(tensor, 0) + 1
    from_step = [tensor for tensor in reads if runs_after(tensor.op, steps[0])]
    return max(from_step, key=reads.get) if from_step else None


def gradient_norm_in(graph: Any) -> Any | None:
    """The global norm that `clip_by_global_norm` computes (before it clips), if it is there."""
    norms = [
        op for op in graph.get_operations() if op.type == "Sqrt" and op.name.endswith("global_norm")
    ]
    return norms[0].outputs[0] if norms else None


def clip_norm_in(norm: Any) -> Any | None:
    """The clip_norm that clip_by_global_norm compared `norm` with: its scale is
    `clip_norm * minimum(1 / norm, 1 / clip_norm)`."""
    for divide in norm.consumers():
        for minimum in divide.outputs[0].consumers() if divide.type == "RealDiv" else ():
            if minimum.type == "Minimum" and minimum.inputs[1].op.type == "RealDiv":
                return minimum.inputs[1].op.inputs[1]
    return None


def random_ops_in(graph: Any) -> list[dict[str, Any]]:
    """Name, type, seeds and shape of each stateful random op outside variable initialisers."""
    found = []
    for op in graph.get_operations():
        if op.type in RANDOM_OPS and "/Initializer/" not in op.name:
            shape = op.outputs[0].shape
            found.append(
                {
                    "name": op.name,
                    "type": op.type,
                    "seed": op.get_attr("seed"),
                    "seed2": op.get_attr("seed2"),
                    "shape": shape.as_list() if shape.rank is not None else None,
                }
            )
    return found


# Recording.


def _tf1() -> Any:
    """TensorFlow's v1 API with TPUEstimator, or one line saying where to record instead."""
    import tensorflow as tf

    try:
        tf.compat.v1.estimator.tpu.TPUEstimator  # noqa: B018 - the attribute access is the check
    except (AttributeError, ImportError):
        raise RecordError(
            f"recording needs TPUEstimator, which TensorFlow {tf.__version__} does not have: "
            "record with TensorFlow 2.15 and tensorflow-estimator (the reference lane, "
            "`.venv/bin/python -m workbench record ...`), then read the baseline here"
        ) from None
    return tf.compat.v1


class _Capture:
    """Wraps the reader's model_fn: keeps the training graph's inputs and loss for the hook."""

    def __init__(self, model_fn: Callable[..., Any], train_mode: str) -> None:
        self.model_fn, self.train_mode = model_fn, train_mode
        self.accepts = set(inspect.signature(model_fn).parameters)
        self.features = self.labels = self.loss = None

    def __call__(self, features, labels, mode, params, config):
        given = {"labels": labels, "mode": mode, "params": params, "config": config}
        spec = self.model_fn(features, **{k: v for k, v in given.items() if k in self.accepts})
        if mode == self.train_mode:
            self.features, self.labels, self.loss = features, labels, spec.loss
        return spec


def _make_hook(tf1: Any, capture: _Capture, overrides: Mapping[str, str], steps: int, progress):
    class RecordSteps(tf1.train.SessionRunHook):
        """Fetches the step's quantities and batch in the same session call as the step."""

        def __init__(self) -> None:
            self.steps: list[dict[str, float | None]] = []
            self.batches: list[dict[str, np.ndarray]] = []
            self.found: dict[str, str | None] = {}
            self.random_ops: list[dict[str, Any]] = []
            self.clip_norm: float | None = None
            self.states: dict[str, np.ndarray] = {}
            self.gradients: dict[str, np.ndarray] = {}
            self.gradients_note: str | None = None
            self.state_steps = 0
            self.last_print = 0.0

        def begin(self) -> None:
            graph = tf1.get_default_graph()
            self.random_ops = random_ops_in(graph)  # before this hook adds ops of its own
            tensors = {
                "loss": capture.loss,
                "learning_rate": learning_rate_in(graph),
                "gradient_norm": gradient_norm_in(graph),
            }
            for key, name in overrides.items():
                tensors[key] = graph.get_tensor_by_name(name)
            norm = tensors["gradient_norm"]
            clip = clip_norm_in(norm) if norm is not None else None
            variables = tf1.trainable_variables()
            try:
                gradients = tf1.gradients(capture.loss, variables, name="workbench_gradients")
            except LookupError as error:  # an op without a registered gradient
                if tensors["gradient_norm"] is not None:
                    gradients, self.gradients_note = None, f"an op has none ({first_line(error)})"
                else:
                    raise
            if tensors["gradient_norm"] is None:  # no clip: the norm of the loss's gradient
                kept = [g for g in gradients if g is not None]
                tensors["gradient_norm"] = tf1.linalg.global_norm(kept, name="workbench_norm")
                self.check_norm = False  # the norm is the recorded gradients' own
            else:  # the clip's norm: the recorded gradients must give it (the same loss)
                self.check_norm = True
            self.sparse = any(isinstance(g, tf1.IndexedSlices) for g in gradients or [])
            self.variable_gradients = {}
            if gradients is not None and not all(v.op.type == "VarHandleOp" for v in variables):
                self.gradients_note = (
                    "the model's variables are ref variables (disable_v2_behavior): a second "
                    "backward pass cannot be ordered before their update"
                )
            elif gradients is not None:  # dense, as TF2's are compared: rows summed per index
                self.variable_gradients = {
                    v.op.name: tf1.zeros(v.shape, v.dtype.base_dtype)
                    if g is None
                    else tf1.convert_to_tensor(g)
                    for v, g in zip(variables, gradients, strict=True)
                }
            self.fetches = {key: t for key, t in tensors.items() if t is not None}
            self.found = {key: (t.name if t is not None else None) for key, t in tensors.items()}
            self.fetches["features"], self.fetches["labels"] = capture.features, capture.labels
            self.fetches["clip_norm"] = clip
            self.variables = {v.op.name: v for v in tf1.global_variables()}
            size = sum(
                (v.shape.num_elements() or 0) * v.dtype.size
                for v in [*self.variables.values(), *self.variable_gradients.values()]
            )
            self.keep = min(steps, max(1, STATE_BYTES // max(size, 1)))

        def before_run(self, run_context):
            fetches = {k: v for k, v in self.fetches.items() if v is not None}
            if len(self.steps) < self.keep:  # this step's gradients, from the same batch
                fetches["variable_gradients"] = self.variable_gradients
            return tf1.train.SessionRunArgs(fetches)

        def after_run(self, run_context, run_values) -> None:
            values = dict(run_values.results)
            self.clip_norm = float(values.pop("clip_norm")) if "clip_norm" in values else None
            gradients = values.pop("variable_gradients", None) or {}
            self._keep_gradients(gradients, values.get("gradient_norm"))
            batch = {
                **_flatten("features", values.pop("features")),
                **_flatten("labels", values.pop("labels", None)),
            }
            self.batches.append(batch)
            if len(self.steps) < self.keep:  # TF1's state after this update
                state = run_context.session.run(self.variables)
                number = len(self.steps) + 1
                self.states.update({f"{number}/{k}": np.asarray(v) for k, v in state.items()})
                self.state_steps = number
            self.steps.append(
                {key: float(values[key]) if key in values else None for key in QUANTITIES}
            )
            now = time.monotonic()
            if progress and (now - self.last_print >= 1.0 or len(self.steps) == steps):
                self.last_print = now
                progress(f"step {len(self.steps)}/{steps}: loss {self.steps[-1]['loss']:.6g}")

        def _keep_gradients(self, gradients: dict[str, Any], norm: Any) -> None:
            """Keep this step's gradients, unless they do not give the clip's norm: then the
            train_op differentiates another loss than the EstimatorSpec's, and none are kept.
            A sparse gradient's norm is taken over its rows, not the dense sum: not checked."""
            if not gradients or self.gradients_note:
                return
            if self.check_norm and not self.sparse and norm is not None:
                total = float(np.sqrt(sum(np.sum(np.square(g, dtype=np.float64)) for g in
                                          gradients.values())))  # fmt: skip
                if not abs(total - float(norm)) <= 1e-4 * max(abs(float(norm)), 1e-30):
                    self.gradients.clear()
                    self.gradients_note = (
                        f"at step {len(self.steps)} the loss's gradients have the norm "
                        f"{total:.6g} and the clip's {float(norm):.6g}: the train_op "
                        "differentiates another loss than the EstimatorSpec's"
                    )
                    return
            number = len(self.steps)
            self.gradients.update({f"{number}/{k}": np.asarray(v) for k, v in gradients.items()})

    return RecordSteps()


def _guard(out_dir: Path, replace: bool) -> None:
    """Refuse an out_dir that exists, unless it is a baseline of ours and replace is asked."""
    if not out_dir.exists():
        return
    ours = (out_dir / MANIFEST).is_file() and FORMAT in (out_dir / MANIFEST).read_text()
    if not ours and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise RecordError(
            f"{out_dir} exists and is not a workbench baseline: choose a new out_dir (nothing "
            "was written; the workbench never overwrites what it did not create)"
        )
    if ours and not replace:
        raise RecordError(
            f"{out_dir} already holds a baseline: pass replace=True (--replace) to record it "
            "again, or choose a new out_dir"
        )
    if ours and not _listed_files(out_dir):
        raise RecordError(
            f"{out_dir} holds a baseline of an older workbench, which lists none of its files, "
            "so replacing it could remove files of yours: remove it yourself, or choose a new "
            "out_dir (nothing was written)"
        )


def _listed_files(out_dir: Path) -> dict[str, Any]:
    try:
        files = json.loads((out_dir / MANIFEST).read_text()).get("files")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return {}
    return files if isinstance(files, dict) else {}


def record_baseline(
    model_fn: Callable[..., Any],
    input_fn: Callable[..., Any],
    out_dir: str | Path,
    *,
    batch_size: int,
    steps: int,
    params: Mapping[str, Any] | None = None,
    eval_input_fn: Callable[..., Any] | None = None,
    eval_steps: int | None = None,
    seed: int = 0,
    tensors: Mapping[str, str] | None = None,
    replace: bool = False,
    progress: Callable[[str], None] | None = None,
    session_config: Any = None,
) -> Baseline:
    """Train `model_fn` for `steps` steps with TPUEstimator(use_tpu=False) and record it.

    `batch_size` is TPUEstimator's `train_batch_size` (and `eval_batch_size`): the global
    batch, which the input_fn receives as `params["batch_size"]`. `seed` is the RunConfig's
    `tf_random_seed`: with it, dropout and TF1's own initialisers draw the same numbers in
    every recording (a `tf.layers` layer's default initializer draws from Keras' random state
    instead, notebook 01; the TF2 side starts from model.ckpt-0 either way). `tensors` names
    a tensor by hand where the graph search finds another (`{"learning_rate": "my_rate:0"}`;
    the search's choices are in `Baseline.found`).
    `progress`, when given, receives a line at most every second (the CLI prints them).
    `session_config`: a `tf.compat.v1.ConfigProto` for the RunConfig, as the model's own
    (Grappler's rewrites off, say), so that the baseline runs the graph as training did; a
    copy of it, with GPUs hidden, is used (the baseline is a CPU's, whatever the machine).
    """
    tf1 = _tf1()
    out_dir = Path(out_dir)
    if steps < 1 or batch_size < 1:
        raise RecordError(f"steps={steps}, batch_size={batch_size}: both must be at least 1")
    unknown = sorted(set(tensors or {}) - set(QUANTITIES))
    if unknown:
        raise RecordError(f"tensors: {unknown[0]!r} is not one of {', '.join(QUANTITIES)}")
    _guard(out_dir, replace)
    made = [p for p in (out_dir.parent, *out_dir.parent.parents) if not p.exists()]
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        request = _Request(
            model_fn, input_fn, batch_size, steps, dict(params or {}), eval_input_fn,
            eval_steps, seed, dict(tensors or {}), progress, session_config,
        )  # fmt: skip
        _record(tf1, request, partial)
        if (out_dir / MANIFEST).is_file():  # a baseline of ours, replace=True (_guard)
            _remove_listed(out_dir)
        _move_into(partial, out_dir)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        for folder in made:  # deepest first: the folders this call made, if still empty
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        raise
    shutil.rmtree(partial, ignore_errors=True)
    return load_baseline(out_dir)


def _remove_listed(out_dir: Path) -> None:
    """Remove the files the old baseline.json lists, and then it: nothing else in the folder."""
    listed = json.loads((out_dir / MANIFEST).read_text()).get("files") or {}
    inside = out_dir.resolve()
    for name in listed:
        path = out_dir / name
        if path.resolve().is_relative_to(inside) and path.is_file():  # never a path outside
            path.unlink()
    (out_dir / MANIFEST).unlink()
    if (out_dir / CHECKPOINTS).is_dir() and not any((out_dir / CHECKPOINTS).iterdir()):
        (out_dir / CHECKPOINTS).rmdir()


def _move_into(partial: Path, out_dir: Path) -> None:
    """The new baseline's files into out_dir, its manifest last (a folder without one is no
    baseline, so an interrupted move is never read as one)."""
    files = sorted(path for path in partial.rglob("*") if path.is_file())
    files.sort(key=lambda path: path.name == MANIFEST)
    for path in files:
        target = out_dir / path.relative_to(partial)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)


def _keep_checkpoints(directory: Path, steps: tuple[int, ...]) -> list[str]:
    """Copy the checkpoints of these steps (their variables, not the graph) out of the
    estimator's model_dir, then remove it: the baseline stays a few files."""
    kept = []
    (directory / CHECKPOINTS).mkdir()
    for step in steps:
        files = [
            path
            for path in (directory / MODEL_DIR).glob(f"model.ckpt-{step}.*")
            if path.suffix != ".meta"
        ]
        if not any(path.suffix == ".index" for path in files):
            raise RecordError(
                f"TPUEstimator wrote no model.ckpt-{step}: the run did not train as asked "
                "(nothing was written)"
            )
        for path in files:
            shutil.copy2(path, directory / CHECKPOINTS / path.name)
        kept.append(f"{CHECKPOINTS}/model.ckpt-{step}")
    shutil.rmtree(directory / MODEL_DIR)
    return kept


@dataclass(frozen=True)
class _Request:
    """record_baseline's arguments, checked."""

    model_fn: Callable[..., Any]
    input_fn: Callable[..., Any]
    batch_size: int
    steps: int
    params: dict[str, Any]
    eval_input_fn: Callable[..., Any] | None
    eval_steps: int | None
    seed: int
    overrides: dict[str, str]
    progress: Callable[[str], None] | None
    session_config: Any = None


def _record(tf1: Any, r: _Request, directory: Path) -> None:
    import tensorflow as tf

    capture = _Capture(r.model_fn, tf1.estimator.ModeKeys.TRAIN)
    session_config = tf1.ConfigProto()
    if r.session_config is not None:
        if not isinstance(r.session_config, tf1.ConfigProto):
            raise RecordError(
                f"session_config is a {type(r.session_config).__name__}: give a "
                "tf.compat.v1.ConfigProto, as RunConfig(session_config=...) takes (nothing was "
                "written)"
            )
        session_config.CopyFrom(r.session_config)
    session_config.device_count["GPU"] = 0  # the CPU's float32 matmuls: no TensorFloat-32
    config = tf1.estimator.tpu.RunConfig(
        model_dir=str(directory / MODEL_DIR),
        tf_random_seed=r.seed,
        save_checkpoints_steps=r.steps,
        session_config=session_config,
        tpu_config=tf1.estimator.tpu.TPUConfig(iterations_per_loop=1),
    )
    estimator = tf1.estimator.tpu.TPUEstimator(
        model_fn=capture,
        config=config,
        params=r.params,
        use_tpu=False,
        train_batch_size=r.batch_size,
        eval_batch_size=r.batch_size,
    )
    hook = _make_hook(tf1, capture, r.overrides, r.steps, r.progress)
    if r.progress:
        r.progress(f"recording {r.steps} steps of {r.batch_size} examples into {directory}")
    _stopped_or_run(
        "training", lambda: estimator.train(r.input_fn, max_steps=r.steps, hooks=[hook])
    )
    _check_batches(hook, r)
    evaluation = None
    if r.eval_input_fn is not None:
        metrics = _stopped_or_run(
            "evaluation", lambda: estimator.evaluate(r.eval_input_fn, steps=r.eval_steps)
        )
        evaluation = {k: float(v) for k, v in metrics.items() if k != "global_step"}
    stacked = {k: np.stack([b[k] for b in hook.batches]) for k in hook.batches[0]}
    np.savez(directory / BATCHES, **stacked)
    np.savez(directory / STATES, **hook.states)
    if hook.gradients:
        np.savez(directory / GRADIENTS, **hook.gradients)
    kept = _keep_checkpoints(directory, (0, r.steps))
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "tensorflow": tf.__version__,
        "batch_size": r.batch_size,
        "seed": r.seed,
        "steps": hook.steps,
        "found": hook.found,
        "random_ops": hook.random_ops,
        "clip_norm": hook.clip_norm,
        "evaluation": evaluation,
        "checkpoint": kept[0],
        "final_checkpoint": kept[1],
        "states": STATES,
        "state_steps": hook.state_steps,
        "gradients": GRADIENTS if hook.gradients else None,
        "gradients_note": hook.gradients_note,
        "recorded_with": f"Python {sys.version.split()[0]}",
        "files": {
            path.relative_to(directory).as_posix(): _file_entry(path)
            for path in sorted(directory.rglob("*"))
            if path.is_file()
        },
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    if r.progress:
        r.progress("recorded")


# Known causes of a TF1 run that stops, by what its error says: the fix to add to the line.
KNOWN_STOPS = (
    (
        ("CrossReplicaSum", "TPUReplicate", "TPUReplicatedInput"),
        "the model_fn runs a TPU-only op, which has no CPU kernel: record with the op behind "
        "`if params['use_tpu']` or its CPU equivalent (notebook 01)",
    ),
    (
        ("has no attribute 'value'",),
        "the model_fn reads TF1 shapes (`shape[i].value`): call "
        "tf.compat.v1.disable_v2_tensorshape() before recording",
    ),
    (
        ("marked as not fetchable",),
        "a tensor the search found is inside a tf.cond or loop: name the one after it with "
        "--tensor learning_rate=NAME:0 (tensors=... in Python)",
    ),
)


def stop_line(error: BaseException) -> str:
    """The line of a TF1 error that says why it stopped, and the known fix where there is one:
    TensorFlow's graph errors start with 'Graph execution error:' and name the cause below."""
    text = str(error).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    cause = lines[0] if lines else ""
    if cause.startswith("Graph execution error"):  # the cause follows the node's traceback
        nodes = [number for number, line in enumerate(lines) if line.startswith("Node: ")]
        rest = [line for line in lines[nodes[-1] + 1 if nodes else 1 :] if line[:2] != "[["]
        cause = rest[0] if rest else cause
    line = f"{type(error).__name__}: {cause}" if cause else type(error).__name__
    line = line if len(line) <= 240 else line[:237] + "..."
    for markers, fix in KNOWN_STOPS:
        if any(marker in text for marker in markers):
            return f"{line}; {fix}"
    return line


def _stopped_or_run(what: str, work: Callable[[], Any]) -> Any:
    """Run TPUEstimator's train or evaluate; anything it raises becomes one line."""
    try:
        return work()
    except RecordError:
        raise
    except Exception as error:
        raise RecordError(
            f"TF1 {what} stopped: {stop_line(error)} (nothing was written)"
        ) from error


def _check_batches(hook: Any, r: _Request) -> None:
    """Every step ran, on a whole batch: what the TF2 side is fed and split by replica."""
    if len(hook.steps) != r.steps:
        raise RecordError(
            f"the input_fn gave {len(hook.steps)} batches and steps={r.steps}: repeat the "
            "dataset or record fewer steps (nothing was written)"
        )
    for number, batch in enumerate(hook.batches):
        for key, values in batch.items():
            if values.ndim > 1 and values.shape[0] != r.batch_size == values.shape[-1]:
                raise RecordError(
                    f"step {number}'s {key} has the batch in its last dimension "
                    f"{tuple(values.shape)}: TPUConfig's transpose_input transposed it; record "
                    "with the input_fn's own layout (transpose_input off) (nothing was written)"
                )
            if values.ndim == 0 or values.shape[0] != r.batch_size:
                raise RecordError(
                    f"step {number}'s {key} has {values.shape[:1] or 'no'} rows, not batch_size "
                    f"{r.batch_size}: batch with drop_remainder=True (nothing was written)"
                )
