"""What every committed notebook must have, checked without executing anything.

Title, an Open-in-Colab link to the configured repository, Colab metadata, a Colab set-up
cell, a `parameters` cell followed directly by validation, executed outputs in order, no
stderr noise, and errors only where a cell is tagged as raising on purpose (and such a cell
really raised).
"""

from __future__ import annotations

import re

import nbformat
import pytest

from tools.nbexec import EXPECTED_ERROR_TAG, tags
from tools.project import colab_url, notebook_paths, repository

NOTEBOOKS = notebook_paths()
IDS = [path.name for path in NOTEBOOKS]


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


def test_colab_metadata_asks_for_a_tpu_and_a_python3_kernel(notebook):
    _, nb = notebook
    assert nb.metadata.get("accelerator") == "TPU"
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
    assert "params.validate(" in cells[index + 1].source
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


def test_errors_only_in_cells_tagged_to_raise_and_those_cells_do_raise(notebook):
    _, nb = notebook
    for cell in code_cells(nb):
        has_error = any(output.output_type == "error" for output in cell.outputs)
        expected = EXPECTED_ERROR_TAG in tags(cell)
        assert has_error == expected, (
            f"cell {cell.execution_count}: error={has_error}, tag={expected}"
        )


def test_pitfall_cells_are_followed_by_an_explanation(notebook):
    _, nb = notebook
    for index, cell in enumerate(nb.cells):
        if EXPECTED_ERROR_TAG in tags(cell):
            assert nb.cells[index + 1].cell_type == "markdown", "a raising cell needs its fix"


def test_outputs_carry_no_machine_specific_paths_or_run_metadata(notebook):
    _, nb = notebook
    assert "papermill" not in nb.metadata
    for cell in code_cells(nb):
        assert "papermill" not in cell.metadata and "execution" not in cell.metadata
        for output in cell.outputs:
            text = output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
            assert "/tmp/" not in text and "/home/" not in text and "/work/" not in text
