"""docs/surface.md has a row for every name of the installed `TPUEstimator` API, and no other.

The names are read from the classes and functions themselves in the reference lane's
estimator package (TensorFlow 2.15): every parameter of `TPUEstimator.__init__`, its public
methods and properties, every field of `TPUEstimatorSpec` and `TPUConfig`, every parameter
of `tpu.RunConfig` and of the `RunConfig` it passes its keyword arguments to, every
`InputPipelineConfig` value, `train_and_evaluate` with its parameters and the fields of
`TrainSpec` and `EvalSpec`, the exporters, the hooks of `tf.compat.v1.estimator`,
`tf.compat.v1.train` and `tf.compat.v1.estimator.experimental`, the receivers and
outputs of `tf.compat.v1.estimator.export`, and the columns of `tf.compat.v1.feature_column`.
A name added by another estimator release fails here until the page answers it; a row whose
name the API no longer has fails too. Each row
must say where it is shown or what it rests on (its last column is never empty).
"""

from __future__ import annotations

import inspect
import re

import pytest
from support import ROOT

pytestmark = [pytest.mark.tensorflow, pytest.mark.reference_only]
SURFACE_PAGE = ROOT / "docs" / "surface.md"
JAX_SECTION = "Keras 3 on JAX"


def parameters(function) -> list[str]:
    return [
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if name != "self" and parameter.kind is not parameter.VAR_KEYWORD
    ]


def public(owner, keep=lambda name: True) -> list[str]:
    return [name for name in dir(owner) if not name.startswith("_") and keep(name)]


def api_names() -> dict[str, set[str]]:
    """Each section of the page: the names the installed API has for it."""
    pytest.importorskip("tensorflow_estimator")
    import tensorflow as tf

    estimator = tf.compat.v1.estimator
    tpu = estimator.tpu
    train_and_evaluate = ["train_and_evaluate", *parameters(estimator.train_and_evaluate)]
    train_and_evaluate += [f"TrainSpec.{field}" for field in estimator.TrainSpec._fields]
    train_and_evaluate += [f"EvalSpec.{field}" for field in estimator.EvalSpec._fields]
    is_hook = lambda name: name.endswith("Hook") or name.endswith("_hook")  # noqa: E731
    hooks = public(estimator, is_hook) + public(tf.compat.v1.train, is_hook)
    hooks += [*public(estimator.experimental, is_hook), "CheckpointSaverListener"]
    return {
        "`TPUEstimator` arguments": set(parameters(tpu.TPUEstimator.__init__)),
        "`TPUEstimator` methods": set(public(tpu.TPUEstimator)),
        "`TPUEstimatorSpec` fields": set(tpu.TPUEstimatorSpec._fields),
        "`RunConfig` arguments": {
            *parameters(tpu.RunConfig.__init__),
            *parameters(estimator.RunConfig.__init__),
        },
        "`TPUConfig` fields": set(tpu.TPUConfig._fields),
        "`InputPipelineConfig` values": set(public(tpu.InputPipelineConfig, str.isupper)),
        "`train_and_evaluate`, `TrainSpec`, `EvalSpec`": set(train_and_evaluate),
        "Exporters": set(public(estimator, lambda name: name.endswith("Exporter"))),
        "Hooks": set(hooks),
        "Serving: receivers and outputs": set(public(estimator.export)),
        "Feature columns": set(public(tf.compat.v1.feature_column)),
    }


def page_rows() -> dict[str, dict[str, list[str]]]:
    """Each `## ` section of the page: its table's rows, by the name in their first column."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in SURFACE_PAGE.read_text().splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), {})
        elif current is not None and re.match(r"\| `[^`]+` \|", line):
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            name = cells[0].strip("`")
            assert name not in current, f"{name}: two rows"
            current[name] = cells
    return sections


def api_rows() -> dict[str, dict[str, list[str]]]:
    """The sections that map the API, without the Keras 3 on JAX section."""
    return {section: rows for section, rows in page_rows().items() if section != JAX_SECTION}


def test_every_name_of_the_api_has_a_row_and_every_row_a_name():
    expected = api_names()
    rows = api_rows()
    assert sorted(rows) == sorted(expected)
    missing = {section: sorted(names - set(rows[section])) for section, names in expected.items()}
    stale = {section: sorted(set(rows[section]) - names) for section, names in expected.items()}
    found = sum(len(names) for names in expected.values())
    covered = found - sum(len(names) for names in missing.values())
    missing = {section: names for section, names in missing.items() if names}
    stale = {section: names for section, names in stale.items() if names}
    print(f"TPUEstimator surface: {covered} of {found} names have a row")
    assert not missing, f"names without a row in docs/surface.md: {missing}"
    assert not stale, f"rows for names the API does not have: {stale}"


def test_every_row_answers_for_fit_and_the_loop_and_says_where_it_rests():
    for section, rows in api_rows().items():
        for name, cells in rows.items():
            assert len(cells) == 4, f"{section}: {name}: {len(cells)} columns"
            assert all(cells[1:]), f"{section}: {name}: an empty column"


def test_each_keras_3_on_jax_row_names_a_row_of_the_api_and_where_it_rests():
    """The JAX section answers names the page has, each with a notebook cell or a source file."""
    sections = page_rows()
    jax_rows = sections[JAX_SECTION]
    names = {name for section, rows in api_rows().items() for name in rows}
    assert jax_rows and set(jax_rows) <= names, sorted(set(jax_rows) - names)
    for name, cells in jax_rows.items():
        assert len(cells) == 3 and all(cells), f"{JAX_SECTION}: {name}: {cells}"
        assert "](notebooks/" in cells[2] or ".py`" in cells[2], f"{name}: rests on nothing"
