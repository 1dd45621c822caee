"""helpers.compare: loss and weight comparisons, their reports, and the stored fixtures."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import threading

import numpy as np
import pytest

from helpers import compare, fixtures, plots
from helpers.compare import MismatchError
from helpers.errors import FriendlyError

TF1 = [0.5, 0.25, 0.125, 0.0625]


def test_identical_trajectories_pass_bit_for_bit():
    comparison = compare.assert_losses_close(TF1, list(TF1))
    assert comparison.passed and comparison.first_divergent_step is None
    assert comparison.largest_difference == 0.0
    assert comparison.report().startswith(
        "Loss trajectories agree: expected vs actual (4 steps compared; tolerance: bit-identical)"
    )


def test_differences_within_the_tolerance_pass_and_are_measured():
    actual = [0.5, 0.25 + 1e-7, 0.125, 0.0625 - 4e-7]
    comparison = compare.assert_losses_close(TF1, actual, atol=1e-6)
    assert comparison.passed
    assert comparison.largest_step == 3
    assert comparison.largest_difference == pytest.approx(4e-7)


def test_a_divergent_trajectory_raises_a_friendly_assertion_with_a_table():
    actual = [0.5, 0.25, 0.13, 0.07]
    with pytest.raises(MismatchError) as raised:
        compare.assert_losses_close(TF1, actual, atol=1e-3, names=("TF1", "TF2"))
    error = raised.value
    assert isinstance(error, AssertionError) and isinstance(error, FriendlyError)
    assert str(error) == (
        "Loss trajectories differ: TF1 vs TF2 (4 steps compared; tolerance: |diff| <= 0.001)\n"
        "                 step  TF1     TF2   |diff|\n"
        "first divergent  2     0.125   0.13  5.00e-03\n"
        "largest |diff|   3     0.0625  0.07  7.50e-03\n"
        "2 of 4 steps are outside the tolerance."
    )
    assert error._render_traceback_()[0].startswith("MismatchError: Loss trajectories differ")


def test_runs_of_different_lengths_diverge_where_the_shorter_one_ends():
    comparison = compare.compare_losses(TF1, [*TF1, 0.03])
    assert not comparison.passed
    assert comparison.first_divergent_step == 4 and comparison.steps_compared == 4
    assert (
        "expected has 4 steps, actual has 5: the runs did not take the same number of steps."
        in (comparison.report())
    )


def test_nan_is_never_within_tolerance_and_is_reported_as_largest():
    comparison = compare.compare_losses(TF1, [0.5, float("nan"), 0.125, 0.0625], atol=1.0)
    assert comparison.first_divergent_step == 1
    assert np.isnan(comparison.largest_difference) and comparison.largest_step == 1
    assert "nan" in comparison.report()


def test_relative_tolerance_scales_with_the_expected_value():
    assert compare.compare_losses([100.0], [100.001], rtol=1e-4).passed
    assert not compare.compare_losses([0.001], [0.00101], rtol=1e-4).passed
    assert (
        "|diff| <= 0 + 0.0001 * |expected|"
        in compare.compare_losses([1.0], [2.0], rtol=1e-4).report()
    )


def weights(kernel, bias):
    return {"dense/kernel": np.array(kernel, np.float32), "dense/bias": np.array(bias, np.float32)}


def test_equal_weights_pass():
    comparison = compare.assert_weights_close(
        weights([[0.3], [-0.2]], [0.1]), weights([[0.3], [-0.2]], [0.1])
    )
    assert comparison.passed and comparison.largest_difference == 0.0


def test_differing_weights_name_the_weight_the_element_and_both_values():
    expected = weights([[0.3], [-0.2]], [0.1])
    actual = weights([[0.3], [-0.25]], [0.1])
    with pytest.raises(MismatchError) as raised:
        compare.assert_weights_close(expected, actual, atol=1e-6, names=("TF1", "TF2"))
    assert str(raised.value) == (
        "Weights differ: TF1 vs TF2 (tolerance: |diff| <= 1e-06)\n"
        "name          shape   largest |diff|  at      TF1           TF2          within\n"
        "dense/bias    (1,)    0               [0]     0.100000001   0.100000001  yes\n"
        "dense/kernel  (2, 1)  5.00e-02        [1, 0]  -0.200000003  -0.25        NO"
    )


def test_the_report_title_names_what_was_compared():
    comparison = compare.compare_weights({"p": [1.0]}, {"p": [1.0]}, what="Predictions")
    assert comparison.report().startswith("Predictions agree: expected vs actual")


def test_missing_names_and_shape_mismatches_fail_with_their_own_rows():
    expected = weights([[0.3], [-0.2]], [0.1])
    actual = {"dense/kernel": np.zeros((1, 2), np.float32), "extra": np.zeros(3)}
    comparison = compare.compare_weights(expected, actual, names=("TF1", "TF2"))
    assert not comparison.passed and comparison.first_divergent == "dense/bias"
    report = comparison.report()
    assert "dense/bias    missing from TF2" in report
    assert "dense/kernel  shape (2, 1) vs (1, 2)" in report
    assert "extra         missing from TF1" in report


def test_format_table_pads_columns():
    assert compare.format_table(["a", "bb"], [["ccc", 1], ["d", 22]]) == "a    bb\nccc  1\nd    22"


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


@pytest.fixture
def served_fixture(tmp_path):
    """A fixture folder served over HTTP on localhost, as GitHub serves the repository."""
    root = tmp_path / "served"
    fixture = root / "demo"
    (fixture / "sub").mkdir(parents=True)
    (fixture / "run.json").write_text('{"steps": 3}')
    (fixture / "sub" / "weights.bin").write_bytes(b"\x00\x01\x02")
    fixtures.write_manifest(fixture)
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
    files = fixtures.write_manifest(tmp_path)
    assert files == {"a.txt": hashlib.sha256(b"a").hexdigest()}
    assert json.loads((tmp_path / fixtures.MANIFEST).read_text()) == {"files": files}
