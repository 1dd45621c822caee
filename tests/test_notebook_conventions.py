"""What every committed notebook must have, checked without executing anything.

Title, an Open-in-Colab link to the configured repository, the Colab metadata that opens it
on a TPU runtime, a Colab set-up cell, a `parameters` cell followed directly by validation,
code cells of at most 25 lines, executed outputs in order, no stderr noise, and no error
anywhere: Colab's "Run all" ignores the `raises-exception` tag and stops at the first error,
so no cell carries that tag and no committed output is an error (a pitfall cell catches its
exception and asserts it was raised).
"""

from __future__ import annotations

import re

import nbformat
import pytest

from helpers import colab
from tools.nbexec import RAISES_EXCEPTION_TAG, tags
from tools.project import colab_url, notebook_paths, repository

NOTEBOOKS = notebook_paths()
IDS = [path.name for path in NOTEBOOKS]
# The TPU types Colab offers (`gpuType` in a notebook's `colab` metadata, beside
# `accelerator: "TPU"`): v5e-1 (free tier), v6e-1 and the older v2-8. tensorflow/docs' TPU
# guides carry "V28".
COLAB_TPU_TYPES = ("V5E1", "V6E1", "V28")


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no NN_topic.ipynb"


@pytest.fixture(params=NOTEBOOKS, ids=IDS)
def notebook(request):
    return request.param, nbformat.read(request.param, as_version=4)


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def test_starts_with_a_title_and_a_colab_link_to_the_configured_repository(notebook):
    path, nb = notebook
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# ")
    links = re.findall(r"https://colab\.research\.google\.com/github/[^)\s]+", first.source)
    assert links == [colab_url(path.name)], links


def test_a_note_under_the_colab_link_names_the_outputs_lane_and_colabs_tensorflow(notebook):
    """A Colab reader is told, before any cell, what the page's outputs come from and what
    differs there; the TensorFlow it names for Colab is the one `helpers.colab` installs."""
    _, nb = notebook
    lines = nb.cells[0].source.split("\n")
    badge = next(k for k, line in enumerate(lines) if "colab-badge.svg" in line)
    assert lines[badge + 1] == "" and lines[badge + 2].startswith("> **This page and Colab.**")
    note = " ".join(line[2:] for line in lines[badge + 2 :] if line.startswith("> "))
    colab_tf = ".".join(colab.TENSORFLOW_VERSION.split(".")[:2])
    for named in re.findall(r"Colab has TensorFlow (\d+\.\d+)", note):
        assert named == colab_tf, f"the note says Colab has {named}; helpers.colab: {colab_tf}"


def test_colab_metadata_asks_for_a_tpu_and_a_python3_kernel(notebook):
    _, nb = notebook
    assert nb.metadata.get("accelerator") == "TPU"
    gpu_type = nb.metadata.get("colab", {}).get("gpuType")
    assert gpu_type in COLAB_TPU_TYPES, f"colab.gpuType={gpu_type!r}: not a Colab TPU type"
    assert nb.metadata.kernelspec.name == "python3"
    assert nb.metadata.kernelspec.language == "python"


def test_first_code_cell_is_the_colab_setup_for_this_repository(notebook):
    _, nb = notebook
    first = code_cells(nb)[0].source
    assert 'if "google.colab" in sys.modules:' in first
    assert f"git+https://github.com/{repository()}@" in first
    assert "from helpers import colab" in first and "colab.prepare(" in first
    assert not code_cells(nb)[0].outputs, "outside Colab the set-up cell must print nothing"


def test_parameters_cell_is_followed_by_validation(notebook):
    _, nb = notebook
    cells = code_cells(nb)
    tagged = [i for i, cell in enumerate(cells) if "parameters" in tags(cell)]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    index = tagged[0]
    assert "parameters.validate(" in cells[index + 1].source
    names = re.findall(r"^(\w+)\s*=", cells[index].source, flags=re.MULTILINE)
    for name in names:
        assert f"{name}=({name}," in cells[index + 1].source, f"{name} is not validated"


def test_every_code_cell_was_executed_in_order(notebook):
    _, nb = notebook
    counts = [cell.execution_count for cell in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), counts


def test_no_stderr_outputs(notebook):
    _, nb = notebook
    noisy = [
        output.text[:200]
        for cell in code_cells(nb)
        for output in cell.outputs
        if output.output_type == "stream" and output.name == "stderr"
    ]
    assert not noisy


def test_no_cell_is_tagged_to_raise(notebook):
    """Colab ignores `raises-exception`: a tagged cell that raises stops "Run all" there."""
    _, nb = notebook
    tagged = [cell.execution_count for cell in code_cells(nb) if RAISES_EXCEPTION_TAG in tags(cell)]
    assert not tagged, f"cells {tagged} are tagged {RAISES_EXCEPTION_TAG!r}"


MAX_CELL_LINES = 25  # CONTRIBUTING.md: a reader copies short cells


def test_code_cells_are_short_enough_to_copy(notebook):
    _, nb = notebook
    long_cells = {
        cell.execution_count: len(cell.source.strip().splitlines())
        for cell in code_cells(nb)
        if len(cell.source.strip().splitlines()) > MAX_CELL_LINES
    }
    assert not long_cells, f"cells (execution count: lines) over {MAX_CELL_LINES}: {long_cells}"


def test_no_committed_output_is_an_error(notebook):
    _, nb = notebook
    errors = [
        f"cell [{cell.execution_count}]: {output.ename}: {output.evalue.splitlines()[0][:120]}"
        for cell in code_cells(nb)
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert not errors, "\n".join(errors)


def test_outputs_carry_no_machine_specific_paths_or_run_metadata(notebook):
    _, nb = notebook
    assert "papermill" not in nb.metadata
    for cell in code_cells(nb):
        assert "papermill" not in cell.metadata and "execution" not in cell.metadata
        for output in cell.outputs:
            text = output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
            assert "/tmp/" not in text and "/home/" not in text and "/work/" not in text


def strategy_cells() -> dict[str, str]:
    """Each notebook's TPU-initialisation cell: the one that builds `strategy`."""
    found = {}
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in code_cells(nb):
            if "initialize_tpu_system(resolver)" in cell.source:
                found[path.name] = cell.source
    return found


def test_every_notebook_that_builds_a_strategy_shows_the_same_tpu_initialisation_cell():
    cells = strategy_cells()
    assert {"00_setup.ipynb", "02_keras_fit.ipynb", "03_custom_loop.ipynb"} <= set(cells)
    reference = cells["02_keras_fit.ipynb"]
    for name, source in cells.items():
        if name == "01_tpu_estimator.ipynb":
            continue  # TPUEstimator initialises the TPU itself from RunConfig(cluster=...)
        assert source == reference, f"{name}: its TPU-initialisation cell differs from 02's"
    for call in (
        "TPUClusterResolver(tpu=choice.tpu_address)",
        "experimental_connect_to_cluster(resolver)",
        "TPUStrategy(resolver)",
        "set_logical_device_configuration(cpu, devices)",
        "MirroredStrategy(cpus)",
    ):
        assert call in reference, f"the TPU-initialisation cell no longer shows {call}"
