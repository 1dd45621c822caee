"""Each lane's lock file is current against its `.in` file, checked offline (tools.lock)."""

from __future__ import annotations

import shutil

import pytest

from tools import lock

pytestmark = pytest.mark.reference_only


@pytest.mark.parametrize("lane", list(lock.LANES))
def test_the_lock_is_current_against_its_input(lane):
    assert lock.problems(lane) == []


@pytest.fixture
def copied(tmp_path):
    """The reference lane's .in and lock files in a folder of their own, to be edited."""
    for path in lock.paths("reference"):
        shutil.copy(path, tmp_path / path.name)
    assert lock.problems("reference", tmp_path) == []
    return lock.paths("reference", tmp_path)


def test_an_edited_input_makes_the_lock_stale(copied):
    source, _ = copied
    source.write_text(source.read_text() + "tabulate\n")
    found = lock.problems("reference", source.parent)
    assert found[0] == (
        "requirements.in changed since requirements.txt was compiled: run `make lock`"
    )
    assert "requirements.txt does not pin tabulate (requirements.in)" in found


def test_a_pin_outside_the_inputs_specifier_is_reported(copied):
    _, locked = copied
    locked.write_text(locked.read_text().replace("\nnumpy==1.26.4\n", "\nnumpy==2.0.0\n"))
    found = lock.problems("reference", locked.parent)
    assert found == ["requirements.txt pins numpy==2.0.0, outside numpy<2 (requirements.in)"]


def test_a_hand_edited_unpinned_line_is_reported(copied):
    _, locked = copied
    locked.write_text(locked.read_text() + "requests>=2\n")
    assert lock.problems("reference", locked.parent) == [
        "requirements.txt has lines that pin nothing: ['requests>=2']"
    ]


def test_each_lock_header_names_its_regenerate_command_and_repeats_the_input_comments():
    for lane in lock.LANES:
        source, locked = lock.paths(lane)
        text = locked.read_text()
        assert text.startswith(lock.header(lane)), locked.name
        assert "#   " + " ".join(lock.compile_command(lane)) in text
        comments = [line for line in source.read_text().splitlines() if line.startswith("#")]
        assert comments and text.startswith("\n".join(comments))
