"""Parameter validation: every rule, and messages that name parameter, value and rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import run_python

from helpers import parameters
from helpers.errors import ParameterError


@pytest.mark.parametrize(
    ("rule", "good", "bad"),
    [
        (parameters.integer(min=1, max=64), [1, 8, 64], [0, 65, 8.0, "8", True, None]),
        (parameters.integer(min=0), [0, 10**9], [-1]),
        (parameters.number(min=0.0, max=1.0), [0, 0.5, 1], [-0.1, 1.5, "0.5", False]),
        (parameters.one_of("auto", "tpu"), ["auto", "tpu"], ["AUTO", "", None]),
        (parameters.text(), ["", "x"], [None, 3]),
        (parameters.text(allow_empty=False), ["x"], ["", "   "]),
    ],
)
def test_rules_accept_and_reject(rule, good, bad):
    assert all(rule.accepts(value) for value in good)
    assert not any(rule.accepts(value) for value in bad)


def test_valid_parameters_pass_silently():
    parameters.validate(
        steps=(10, parameters.integer(min=1)), mode=("auto", parameters.one_of("auto"))
    )


def test_error_names_each_bad_parameter_its_value_type_and_what_is_allowed():
    with pytest.raises(ParameterError) as raised:
        parameters.validate(
            virtual_replicas=(0, parameters.integer(min=1, max=64)),
            accelerator=("auto", parameters.one_of("auto", "tpu")),
            seed=("42", parameters.integer(min=0)),
        )
    message = str(raised.value)
    assert "virtual_replicas=0 (int): expected an integer from 1 to 64" in message
    assert "seed='42' (str): expected an integer >= 0" in message
    assert "accelerator" not in message
    assert "papermill -p virtual_replicas VALUE" in message
    assert isinstance(raised.value, ValueError)


def test_bool_is_not_accepted_as_an_integer():
    with pytest.raises(ParameterError, match=r"steps=True \(bool\)"):
        parameters.validate(steps=(True, parameters.integer(min=1)))


@pytest.mark.parametrize(("batch", "replicas", "per_replica"), [(8, 8, 1), (64, 8, 8), (3, 1, 3)])
def test_per_replica_batch(batch, replicas, per_replica):
    assert parameters.per_replica_batch(batch, replicas) == per_replica


def test_batch_that_does_not_divide_names_the_parameter_and_suggests_multiples():
    with pytest.raises(ParameterError) as raised:
        parameters.per_replica_batch(12, 8, name="train_batch_size")
    message = str(raised.value)
    assert message.startswith("train_batch_size=12 does not divide across 8 replicas")
    assert "such as 8 or 16" in message


def test_batch_smaller_than_the_replica_count_suggests_the_count():
    with pytest.raises(ParameterError, match="such as 8 or 16"):
        parameters.per_replica_batch(4, 8)


def test_a_folder_with_files_is_refused_and_keeps_them(tmp_path):
    folder = tmp_path / "model_dir"
    folder.mkdir()
    (folder / "model.ckpt-100.index").write_text("someone's checkpoint")
    with pytest.raises(ParameterError) as raised:
        parameters.new_or_empty_folder(str(folder), name="model_dir", prefix="x_")
    message = str(raised.value)
    assert "model_dir=" in message and str(folder) in message and "already holds files" in message
    assert 'model_dir=""' in message  # the way out
    assert (folder / "model.ckpt-100.index").read_text() == "someone's checkpoint"


def test_a_file_is_refused_and_a_new_or_empty_folder_is_used(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep")
    with pytest.raises(ParameterError, match="is a file"):
        parameters.new_or_empty_folder(str(a_file), name="model_dir", prefix="x_")
    assert a_file.read_text() == "keep"
    (tmp_path / "empty").mkdir()
    assert parameters.new_or_empty_folder(str(tmp_path / "empty"), "model_dir", "x_").is_dir()
    created = parameters.new_or_empty_folder(str(tmp_path / "new" / "dir"), "model_dir", "x_")
    assert created == tmp_path / "new" / "dir" and created.is_dir()
    temporary = parameters.new_or_empty_folder("", "model_dir", "x_")
    assert temporary.is_dir() and temporary.name.startswith("x_") and not any(temporary.iterdir())


def test_a_temporary_folder_is_removed_at_exit_and_a_named_one_is_kept(tmp_path):
    """What a notebook created it removes when its kernel exits; a folder the reader named
    stays with its files."""
    named = tmp_path / "mine"
    script = (
        "import sys\n"
        "from helpers import parameters\n"
        "made = parameters.new_or_empty_folder('', 'model_dir', 'litter_probe_')\n"
        "(made / 'model.ckpt-1.index').write_text('x')\n"
        f"kept = parameters.new_or_empty_folder({str(named)!r}, 'model_dir', 'x_')\n"
        "(kept / 'model.ckpt-1.index').write_text('x')\n"
        "print(made)\n"
    )
    run = run_python(script, {"TMPDIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr[-2000:]
    made = run.stdout.strip()
    assert made.startswith(str(tmp_path)) and not Path(made).exists()
    assert (named / "model.ckpt-1.index").read_text() == "x"
