"""helpers.compare (table layout) and the site's reading of it (tools/output_tables.py),
helpers.plots, and the stored runs of helpers.fixtures."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import threading

import numpy as np
import pytest

from helpers import compare, fixtures, plots
from tools.make_tf1_fixture import write_manifest
from tools.output_tables import Table, split_tables

TF1 = [0.5, 0.25, 0.125, 0.0625]


def test_format_table_pads_columns_and_rules_the_header_and_the_end():
    table = compare.format_table(["a", "bb"], [["ccc", 1], ["d", 22]])
    assert table == "a    bb\n---  --\nccc  1\nd    22\n---  --"


def test_format_table_rules_every_column_even_an_empty_one():
    assert compare.format_table(["x", ""], [[1, ""]]) == "x\n-  -\n1\n-  -"
    assert compare.format_table(["x"], []) == "x\n-\n-"


def test_format_table_refuses_a_cell_of_two_lines():
    with pytest.raises(ValueError, match="one line"):
        compare.format_table(["a"], [["two\nlines"]])


TABLE = compare.format_table(
    ["setting", "steps", "max |diff|", "same"],
    [
        ["Adagrad epsilon", 100, compare.format_difference(3.35e-08, 1e-6), True],
        ["data order", 100, "2.39e-01", False],
        ["steps_per_execution", 8, "-", True],
    ],
)


def test_the_site_reads_a_table_out_of_the_text_around_it():
    output = f"8 replica(s)\n\n{TABLE}\nall within\n{compare.format_table(['a'], [[1]])}\n"
    pieces = split_tables(output)
    assert [type(piece) for piece in pieces] == [str, Table, str, Table]
    before, table, after, last = pieces
    assert (before, after) == ("8 replica(s)\n\n", "all within\n")
    assert table.header == ["setting", "steps", "max |diff|", "same"]
    assert table.rows[0] == ["Adagrad epsilon", "100", "3.35e-08 (≤ 1e-06)", "True"]
    assert table.rows[2] == ["steps_per_execution", "8", "-", "True"]
    assert table.numeric == [False, True, True, False]  # True/False are not numbers
    assert (last.header, last.rows, last.numeric) == (["a"], [["1"]], [True])
    assert split_tables("no table\n") == ["no table\n"] and split_tables("") == []


def test_the_site_reads_every_table_that_format_table_writes():
    rows = [["", ""], ["x", "nan"], ["- y", "1e+03"], ["-", "-"]]  # empty, missing, dashes
    (found,) = split_tables(compare.format_table(["a", "b"], rows) + "\n")
    assert (found.header, found.rows, found.numeric) == (["a", "b"], rows, [False, True])


def with_character_at(text: str, line: int, column: int, character: str) -> str:
    lines = text.splitlines()
    lines[line] = lines[line].ljust(column + 1)
    lines[line] = lines[line][:column] + character + lines[line][column + 1 :]
    return "\n".join(lines)


@pytest.mark.parametrize(
    "text",
    [
        TABLE.rsplit("\n", 1)[0],  # no closing rule
        TABLE.rsplit("\n", 1)[0] + "\n" + TABLE.splitlines()[1][:-1],  # another closing rule
        with_character_at(TABLE, 3, len("steps_per_execution"), "|"),  # between two columns
        with_character_at(TABLE, 3, len(TABLE.splitlines()[1]), "!"),  # past the last column
        TABLE.split("\n", 1)[1],  # no header above the rule
        "\n" + TABLE.split("\n", 1)[1],  # an empty header
        "Results\n-------\nthe end",  # an underlined title
        "loss -0.5\n-\n",
    ],
)
def test_text_that_is_not_exactly_a_table_stays_text(text):
    assert split_tables(text) == [text]


def test_format_difference():
    assert compare.format_difference(0.0) == "0"
    assert compare.format_difference(1.4901161e-08) == "1.49e-08"
    assert compare.format_difference(float("nan")) == "nan"


def test_plot_differences_draws_without_a_display(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda: None)
    plots.plot_differences({"TF1": TF1, "TF2": [0.5, 0.26, 0.125, 0.0625]}, reference="TF1")
    assert "not drawn" in plt.gcf().axes[0].get_title()
    plots.plot_differences({"TF1": TF1, "TF2": TF1}, reference="TF1")
    assert "zero at every step" in plt.gcf().axes[0].get_title()
    plt.close("all")


# Fixtures ------------------------------------------------------------------------------------


def test_the_committed_tf1_fixture_matches_its_manifest_and_is_small():
    directory = fixtures.fixture_dir("tf1_reference")
    assert directory == fixtures.FIXTURES / "tf1_reference"
    manifest = json.loads((directory / fixtures.MANIFEST).read_text())["files"]
    on_disk = {
        path.relative_to(directory).as_posix()
        for path in directory.rglob("*")
        if path.is_file() and path.name != fixtures.MANIFEST
    }
    assert set(manifest) == on_disk
    for relative, digest in manifest.items():
        assert fixtures.file_digest(directory / relative) == digest, relative
    assert sum((directory / relative).stat().st_size for relative in manifest) < 300_000
    run = json.loads((directory / "tf1_run.json").read_text())
    assert run["steps"] == len(run["losses"]) == 100
    assert run["continue_steps"] == len(run["continued_losses"]) == 20
    assert (directory / f"{run['checkpoint']}.index").is_file()


def test_load_tf1_run_gives_float32_arrays_and_paths_inside_the_folder():
    directory = fixtures.fixture_dir("tf1_reference")
    run = fixtures.load_tf1_run(directory)
    assert run["weights"]["dense/kernel"].dtype == np.float32
    assert run["weights"]["dense/kernel"].shape == (2, 1)
    assert run["predictions"].shape == (64, 1)
    assert run["continued_weights"]["dense/bias"].shape == (1,)
    assert run["checkpoint"] == str(directory / "checkpoint" / "model.ckpt-100")
    assert (directory / "saved_model" / "saved_model.pb").is_file()
    assert run["saved_model"] == str(directory / "saved_model")


@pytest.fixture
def served_fixture(tmp_path):
    """A fixture folder served over HTTP on localhost, as GitHub serves the repository."""
    root = tmp_path / "served"
    fixture = root / "demo"
    (fixture / "sub").mkdir(parents=True)
    (fixture / "run.json").write_text('{"steps": 3}')
    (fixture / "sub" / "weights.bin").write_bytes(b"\x00\x01\x02")
    write_manifest(fixture)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fixture, f"http://127.0.0.1:{server.server_address[1]}/demo"
    server.shutdown()


def test_a_fixture_missing_here_is_downloaded_and_verified(served_fixture, tmp_path):
    _, url = served_fixture
    directory = fixtures.fixture_dir("no_such_fixture", download_from=url, cache=tmp_path / "cache")
    assert directory == tmp_path / "cache" / "no_such_fixture"
    assert (directory / "run.json").read_text() == '{"steps": 3}'
    assert (directory / "sub" / "weights.bin").read_bytes() == b"\x00\x01\x02"
    assert (directory / fixtures.MANIFEST).is_file()


def test_a_download_that_does_not_match_its_manifest_is_refused(served_fixture, tmp_path):
    fixture, url = served_fixture
    (fixture / "sub" / "weights.bin").write_bytes(b"tampered")
    with pytest.raises(fixtures.FixtureUnavailableError) as raised:
        fixtures.fixture_dir("no_such_fixture", download_from=url, cache=tmp_path / "cache")
    assert "sub/weights.bin does not match its sha256" in str(raised.value)


def test_a_fixture_neither_here_nor_downloadable_says_so(tmp_path):
    with pytest.raises(fixtures.FixtureUnavailableError, match="no download address was given"):
        fixtures.fixture_dir("no_such_fixture")
    with pytest.raises(fixtures.FixtureUnavailableError, match="could not be downloaded"):
        fixtures.fixture_dir(
            "no_such_fixture", download_from="http://127.0.0.1:1/x", cache=tmp_path / "c"
        )


def test_write_manifest_lists_every_file_with_its_digest(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    files = write_manifest(tmp_path)
    assert files == {"a.txt": hashlib.sha256(b"a").hexdigest()}
    assert json.loads((tmp_path / fixtures.MANIFEST).read_text()) == {"files": files}
