"""workbench.record and `python -m workbench`: a baseline recorded from a TF1 model_fn, read
back, mapped and compared from the command line; each bad input refused in one line with
nothing written. Recording needs TPUEstimator (the reference lane), where a new recording of
the toy must agree with the stored one, fixtures/workbench_toy; every lane maps and compares
against the stored one. To record it again (TensorFlow 2.15):

    .venv/bin/python -m workbench --path tests record --model-fn workbench_toy:model_fn \
      --input-fn workbench_toy:input_fn --batch-size 8 --steps 4 --out fixtures/workbench_toy \
      --eval-input-fn workbench_toy:input_fn --eval-steps 2 --replace
"""

from __future__ import annotations

import dataclasses
import json
import types

import numpy as np
import pytest
import workbench_toy as toy
from support import LANE, ROOT

from workbench import __main__ as cli
from workbench.record import (
    FORMAT,
    MANIFEST,
    RecordError,
    load_baseline,
    per_replica_batch,
    record_baseline,
)

needs_estimator = pytest.mark.skipif(
    LANE != "reference", reason="recording needs TPUEstimator: TensorFlow 2.15, the reference lane"
)
TESTS = str(ROOT / "tests")
STORED = ROOT / "fixtures" / "workbench_toy"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["--path", TESTS, *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The toy recorded once from the command line: 4 steps of 8, plain SGD, an evaluation."""
    if LANE != "reference":
        pytest.skip("recording needs TPUEstimator: TensorFlow 2.15, the reference lane")
    out = tmp_path_factory.mktemp("record") / "baseline"
    code = cli.main(
        ["--path", TESTS, "record", "--model-fn", "workbench_toy:model_fn",
         "--input-fn", "workbench_toy:input_fn", "--batch-size", "8", "--steps", "4",
         "--out", str(out), "--eval-input-fn", "workbench_toy:input_fn", "--eval-steps", "2"]
    )  # fmt: skip
    assert code == cli.DONE
    return out


@pytest.mark.tensorflow
def test_a_recorded_baseline_holds_the_steps_batches_checkpoints_and_evaluation(recorded):
    baseline = load_baseline(recorded)
    assert len(baseline.steps) == 4 and baseline.batch_size == 8
    assert baseline.found["loss"] == "sigmoid_cross_entropy_loss/value:0"
    assert baseline.found["learning_rate"] == "ExponentialDecay:0"  # GradientDescent's alpha
    assert baseline.found["gradient_norm"] == "workbench_norm/global_norm:0"  # no clip here
    rates = [step["learning_rate"] for step in baseline.steps]
    np.testing.assert_allclose(rates, [toy.RATE * toy.DECAY ** (s / 2) for s in range(4)], 1e-6)
    x, y = toy.data()
    batches = baseline.batches()
    assert len(batches) == 4
    for step, (features, labels) in enumerate(batches):  # the input_fn's order, 8 at a time
        np.testing.assert_array_equal(features["x"], x[8 * step : 8 * step + 8])
        np.testing.assert_array_equal(labels, y[8 * step : 8 * step + 8])
    assert baseline.checkpoint.name == "model.ckpt-0"
    assert baseline.final_checkpoint.name == "model.ckpt-4"
    assert set(baseline.evaluation) == {"accuracy", "loss"}
    assert baseline.random_ops == []  # the initialisers' ops are not listed
    assert baseline.clip_norm is None  # no clip_by_global_norm
    assert "4 steps of 8 examples" in baseline.summary()
    stored = load_baseline(STORED)
    assert baseline.found == stored.found and baseline.evaluation == pytest.approx(
        stored.evaluation
    )
    for key in ("loss", "learning_rate", "gradient_norm"):
        live, kept = ([step[key] for step in run.steps] for run in (baseline, stored))
        np.testing.assert_allclose(live, kept, atol=1e-6, err_msg=key)


@pytest.mark.tensorflow
def test_map_and_compare_from_the_command_line(capsys, tmp_path):
    """The stored toy baseline, its TF2 port and a port at another rate, in every lane."""
    code, out, _ = run_cli(capsys, "map", "--baseline", str(STORED), "--model",
                           "workbench_toy:build_model")  # fmt: skip
    assert code == cli.DONE and "4 pairs matched, 0 unmatched, 0 ambiguous" in out
    code, out, _ = run_cli(capsys, "map", "--baseline", str(STORED), "--model",
                           "workbench_toy:build_model", "--first-loss",
                           "workbench_toy:first_loss")  # fmt: skip
    assert code == cli.DONE and "verdict: confirmed" in out and "as mapped: first loss" in out
    code, out, _ = run_cli(capsys, "map", "--baseline", str(STORED), "--model",
                           "workbench_toy:build_model", "--first-loss", "workbench_toy:first_loss",
                           "--first-step", "workbench_toy:first_step")  # fmt: skip
    assert code == cli.DONE and "first loss and update" in out, out
    assert "first update off by" in out and "(≤ 0.001)" in out, out
    baseline = load_baseline(STORED)
    for rate, expected in ((toy.RATE, cli.DONE), (0.12, cli.DIFFERENT)):
        steps, weights = toy.train_tf2(baseline, rate)
        (tmp_path / "run.json").write_text(json.dumps(steps))
        np.savez(tmp_path / "weights.npz", **weights)
        code, out, _ = run_cli(capsys, "compare", "--baseline", str(STORED), "--run",
                               str(tmp_path / "run.json"), "--weights",
                               str(tmp_path / "weights.npz"))  # fmt: skip
        assert code == expected, out
    assert "learning_rates: parts at step 0" in out
    assert "- learning-rate schedule: the rate differs at step 0 (0.1 against 0.12)" in out
    for port, expected in (("build_port", cli.DONE), ("build_port_at_another_rate", cli.DIFFERENT)):
        step = "workbench_toy:train_step"
        code, out, _ = run_cli(capsys, "compare", "--baseline", str(STORED), "--model",
                               f"workbench_toy:{port}", "--step", step)  # fmt: skip
        assert code == expected, out
    assert "synchronized: step 0 parts" in out and "- the learning-rate schedule (" in out
    code, out, _ = run_cli(capsys, "compare", "--baseline", str(STORED), "--model",
                           "workbench_toy:build_port", "--step", "workbench_toy:train_step",
                           "--apply", "workbench_toy:apply_gradients")  # fmt: skip
    assert code == cli.DONE, out  # the stored toy baseline predates gradients: nothing to apply
    assert "update from TF1's gradients: not compared: the baseline holds no gradients" in out


@needs_estimator
@pytest.mark.tensorflow
def test_a_hand_written_update_and_dropout(tmp_path):
    """No Apply op: the rate is the step-derived scalar the multiplications read (BERT's
    optimizer); dropout's RandomUniform is listed with its seeds and shape."""
    params = {"optimizer": "by_hand", "dropout": 0.25}
    baseline = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "b", batch_size=8,
                               steps=3, params=params, seed=7)  # fmt: skip
    assert baseline.found["learning_rate"] == "ExponentialDecay:0"
    rates = [step["learning_rate"] for step in baseline.steps]
    np.testing.assert_allclose(rates, [toy.RATE * toy.DECAY ** (s / 2) for s in range(3)], 1e-6)
    [dropout] = baseline.random_ops
    assert dropout["type"] == "RandomUniform" and dropout["shape"] == [8, 8]
    assert dropout["seed"] == 7 and baseline.dropout_seeds() == [(7, dropout["seed2"])]


@needs_estimator
@pytest.mark.tensorflow
@pytest.mark.parametrize("optimizer", ["momentum", "adam"])
def test_the_rate_of_tf1_optimizers_is_found_and_the_clip_beside_the_norm(tmp_path, optimizer):
    params = {"optimizer": optimizer, "clip": 0.3}
    baseline = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "b", batch_size=8,
                               steps=2, params=params)  # fmt: skip
    assert baseline.found["learning_rate"] == "ExponentialDecay:0"
    assert [round(s["learning_rate"], 6) for s in baseline.steps] == [0.1, 0.070711]
    assert baseline.found["gradient_norm"] == "global_norm/global_norm:0"  # the clip's own
    assert (
        baseline.clip_norm == pytest.approx(0.3)
        and baseline.run([])["clip_norm"] == baseline.clip_norm
    )


def leftovers(folder):
    return sorted(path.name for path in folder.iterdir())


@needs_estimator
@pytest.mark.tensorflow
@pytest.mark.parametrize(
    ("params", "steps", "message"),
    [
        (
            {"fail": True},
            2,
            "TF1 training stopped: ValueError: the model_fn refuses these features",
        ),
        ({"once": True, "examples": 20}, 3, "step 2's features/x has (4,) rows, not batch_size 8"),
        ({"once": True, "examples": 16}, 3, "the input_fn gave 2 batches and steps=3"),
    ],
    ids=["model_fn raises", "a batch that does not divide", "too few batches"],
)
def test_a_failed_recording_writes_nothing(tmp_path, params, steps, message):
    with pytest.raises(RecordError) as raised:
        record_baseline(toy.model_fn, toy.input_fn, tmp_path / "b", batch_size=8, steps=steps,
                        params=params)  # fmt: skip
    assert message in str(raised.value) and "nothing was written" in str(raised.value)
    assert leftovers(tmp_path) == []  # no baseline, no partial folder


@needs_estimator
@pytest.mark.tensorflow
def test_a_folder_it_did_not_write_is_never_replaced(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("mine")
    with pytest.raises(RecordError, match="exists and is not a workbench baseline"):
        record_baseline(toy.model_fn, toy.input_fn, tmp_path / "b", batch_size=8, steps=1,
                        replace=True)  # fmt: skip
    assert (tmp_path / "b" / "notes.txt").read_text() == "mine"
    record_baseline(toy.model_fn, toy.input_fn, tmp_path / "c", batch_size=8, steps=1)
    with pytest.raises(RecordError, match="already holds a baseline: pass replace=True"):
        record_baseline(toy.model_fn, toy.input_fn, tmp_path / "c", batch_size=8, steps=1)
    again = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "c", batch_size=8, steps=2,
                            replace=True)  # fmt: skip
    assert len(again.steps) == 2 and leftovers(tmp_path) == ["b", "c"]


@pytest.mark.skipif(LANE == "reference", reason="the reference lane has TPUEstimator")
@pytest.mark.tensorflow
def test_recording_without_tpu_estimator_says_where_to_record(tmp_path):
    with pytest.raises(RecordError, match=r"record with TensorFlow 2\.15 and tensorflow-estimator"):
        record_baseline(toy.model_fn, toy.input_fn, tmp_path / "b", batch_size=8, steps=1)
    assert leftovers(tmp_path) == []


def write_manifest(folder, **fields):
    folder.mkdir()
    (folder / MANIFEST).write_text(json.dumps(fields))
    return folder


def test_a_folder_that_is_not_a_baseline_of_this_version_is_refused(tmp_path):
    with pytest.raises(RecordError, match=r"has no baseline\.json: it is not a workbench baseline"):
        load_baseline(tmp_path)
    other = write_manifest(tmp_path / "other", format="something else", version=1)
    with pytest.raises(RecordError, match="is not a workbench baseline"):
        load_baseline(other)
    old = write_manifest(tmp_path / "old", format=FORMAT, version=0)
    with pytest.raises(RecordError, match="version 0 of the baseline format and this workbench"):
        load_baseline(old)


def test_a_batch_that_does_not_divide_among_the_replicas():
    baseline = dataclasses.replace(load_baseline(STORED), batch_size=12)
    assert per_replica_batch(baseline, 4) == 3
    with pytest.raises(
        RecordError, match="12 examples does not divide among 8 replicas: run on 1, 2, 4"
    ):
        per_replica_batch(baseline, 8)


def test_the_command_line_usage_and_its_one_line_refusals(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0 and "record" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        cli.main(["record", "--model-fn", "x:y"])
    assert exited.value.code == cli.USAGE
    capsys.readouterr()
    code, _, err = run_cli(capsys, "map", "--baseline", str(ROOT), "--model", "no_such_module:f")
    assert code == cli.REFUSED and err.count("\n") == 1 and "baseline.json" in err
    code, _, err = run_cli(capsys, "record", "--model-fn", "model_fn", "--input-fn", "a:b",
                           "--batch-size", "8", "--steps", "1", "--out", "x")  # fmt: skip
    assert code == cli.REFUSED and err.count("\n") == 1 and "write it as module:function" in err


@pytest.mark.tensorflow
def test_tf1_dropout_draws_the_masks_of_the_tf1_op_step_after_step():
    """Two steps of a seeded TF1 graph's dropout, and the layer with that op's seeds."""
    import tensorflow as tf

    from workbench import TF1Dropout

    tf1 = tf.compat.v1
    x = np.linspace(1.0, 2.0, 24, dtype=np.float32).reshape(4, 6)
    with tf.Graph().as_default() as graph, tf1.Session(graph=graph) as session:
        tf1.set_random_seed(7)
        dropped = tf1.nn.dropout(tf1.constant(x), rate=0.25)
        [op] = [op for op in graph.get_operations() if op.type == "RandomUniform"]
        seeds = (op.get_attr("seed"), op.get_attr("seed2"))
        tf1_steps = [session.run(dropped) for _ in range(2)]
    layer = TF1Dropout(seeds, rate=0.25)
    for tf1_step in tf1_steps:
        np.testing.assert_array_equal(layer(x, training=True).numpy(), tf1_step)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    assert (tf1_steps[0] == 0).any() and (tf1_steps[0] != tf1_steps[1]).any()


@pytest.mark.tensorflow
def test_tf1_drop_connect_drops_the_examples_of_the_tf1_op_step_after_step():
    """Three steps of a seeded TF1 graph's drop connect, and the layer with that op's seeds:
    the same examples dropped, the kept ones scaled alike, bit for bit."""
    import tensorflow as tf

    from workbench import TF1DropConnect

    tf1 = tf.compat.v1
    x = np.linspace(-1.0, 2.0, 48, dtype=np.float32).reshape(4, 2, 2, 3)
    with tf.Graph().as_default() as graph, tf1.Session(graph=graph) as session:
        tf1.set_random_seed(7)
        inputs = tf1.placeholder(tf.float32, x.shape)  # an activation, not a constant
        dropped = toy.drop_connect(inputs, 0.6)
        [op] = [op for op in graph.get_operations() if op.type == "RandomUniform"]
        seeds = (op.get_attr("seed"), op.get_attr("seed2"))
        tf1_steps = [session.run(dropped, {inputs: x}) for _ in range(3)]
    layer = TF1DropConnect(seeds, survival_prob=0.6)
    # In a function of its own, as in a training step: eagerly, ops of equal seeds share the
    # cached kernel's random state (another test's layer may have drawn from it already)
    step = tf.function(lambda inputs: layer(inputs, training=True))
    for tf1_step in tf1_steps:
        np.testing.assert_array_equal(step(x).numpy(), tf1_step)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    kept = [tuple(bool(step[i].any()) for i in range(4)) for step in tf1_steps]
    assert any(not all(k) for k in kept) and len(set(kept)) > 1, kept  # drops, and varies


@needs_estimator
@pytest.mark.tensorflow
def test_a_warm_up_written_with_tf_cond_is_recorded(tmp_path):
    """The rate is the cond's Identity (fetchable), not the cond op's own output."""
    baseline = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "b", batch_size=8,
                               steps=3, params={"cond_warmup": True})  # fmt: skip
    assert baseline.found["learning_rate"].startswith("cond/Identity")
    assert [round(s["learning_rate"], 6) for s in baseline.steps] == [0.025, 0.05, 0.05]


@needs_estimator
@pytest.mark.tensorflow
def test_the_models_session_config_is_used(tmp_path):
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True  # Grappler off
    baseline = record_baseline(toy.model_fn, toy.input_fn, tmp_path / "b", batch_size=8,
                               steps=2, session_config=config)  # fmt: skip
    stored = load_baseline(STORED)
    assert [s["loss"] for s in baseline.steps] == pytest.approx(
        [s["loss"] for s in stored.steps[:2]], abs=1e-6
    )


def test_a_transposed_batch_is_named_as_such():
    from workbench.record import _check_batches, _Request

    request = _Request(None, None, 8, 1, {}, None, None, 0, {}, None)
    hook = types.SimpleNamespace(steps=[{}], batches=[{"features/x": np.zeros((4, 8))}])
    with pytest.raises(RecordError, match=r"batch in its last dimension .* transpose_input"):
        _check_batches(hook, request)


def test_compare_refuses_a_run_at_another_batch(capsys):
    code, _, err = run_cli(capsys, "compare", "--baseline", str(STORED), "--run", "x.json",
                           "--batch-size", "16")  # fmt: skip
    assert code == cli.REFUSED and "the baseline trained on batches of 8" in err


def test_the_summary_says_at_which_steps_the_clip_acted():
    """Notebook 16's baseline clips by global norm 0.4; its recorded norms (before the clip)
    exceed it at steps 0, 1 and 3 only, so a clip's mistake can show at those steps alone."""
    tabular = load_baseline(ROOT / "fixtures" / "workbench_tabular")
    norms = [step["gradient_norm"] for step in tabular.steps]
    assert tabular.clip_acted() == [k for k, norm in enumerate(norms) if norm > 0.4] == [0, 1, 3]
    assert "clip_norm 0.4, acted at 3 of 8 steps: 0, 1, 3" in tabular.summary()
    below = dataclasses.replace(tabular, clip_norm=10.0)
    assert below.clip_acted() == [] and "acted at no step" in below.summary()
    unclipped = dataclasses.replace(tabular, clip_norm=None)
    assert unclipped.clip_acted() is None
    assert "clip_by_global_norm: none found" in unclipped.summary()
    no_norm = dataclasses.replace(tabular, steps=[{"loss": s["loss"]} for s in tabular.steps])
    assert no_norm.clip_acted() is None and "where it acted is unknown" in no_norm.summary()


def test_compare_from_the_command_line_compares_the_evaluation_in_the_run(capsys, tmp_path):
    """run.json's `evaluation` is compared with the baseline's, with --weights too: an
    evaluation that parts while every step and weight agrees is not passed (exit 4)."""
    baseline = load_baseline(STORED)
    steps, weights = toy.train_tf2(baseline)
    np.savez(tmp_path / "weights.npz", **weights)
    outcomes = {}
    for shift in (0.0, 0.01):
        evaluation = {k: v + shift for k, v in baseline.evaluation.items()}
        (tmp_path / "run.json").write_text(json.dumps({"steps": steps, "evaluation": evaluation}))
        outcomes[shift] = run_cli(capsys, "compare", "--baseline", str(STORED), "--run",
                                  str(tmp_path / "run.json"), "--weights",
                                  str(tmp_path / "weights.npz"))  # fmt: skip
    (code, out, _), (moved_code, moved, _) = outcomes[0.0], outcomes[0.01]
    assert code == cli.DONE and "evaluation loss: within tolerance, |diff| 0" in out, out
    assert moved_code == cli.DIFFERENT, moved
    assert "evaluation loss: parts (baseline 0.56379157, candidate 0.57379157" in moved
    assert "the evaluation is not (accuracy, loss)" in moved
