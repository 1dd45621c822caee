"""Throughput arithmetic for the performance notebook and `tools.bench`: medians, ratios, tables.

The settings being compared and the training calls stay in the notebook's cells; this module
only turns repeated timings into steps per second and prints them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence


def steps_per_second(steps: int, seconds: Sequence[float]) -> float:
    """Median over repeats of `steps / seconds`: a slow repeat on a busy machine moves it little."""
    if steps <= 0 or not seconds or min(seconds) <= 0:
        raise ValueError(f"need steps > 0 and positive durations, got {steps}, {list(seconds)}")
    return statistics.median(steps / s for s in seconds)


def ratios(rates: Mapping[str, float], baseline: str) -> dict[str, float]:
    """Each rate divided by the baseline's rate (the baseline gets 1.0)."""
    return {name: rate / rates[baseline] for name, rate in rates.items()}


def runtime_line(strategy, tf) -> str:
    """Device kind, replicas and versions: the label every measured figure carries."""
    from helpers.runtime import keras_version

    kinds = [k for k in ("TPU", "GPU") if tf.config.list_logical_devices(k)]
    kind = kinds[0] if kinds else "CPU"
    return (
        f"{kind}, {strategy.num_replicas_in_sync} replica(s), "
        f"TensorFlow {tf.__version__}, Keras {keras_version()}"
    )


def markdown_table(rows: Sequence[Mapping[str, object]], digits: int = 3) -> str:
    """Rows of equal keys as a markdown table; floats with `digits` significant digits."""
    columns = list(rows[0])

    def cell(value: object) -> str:
        return f"{value:.{digits}g}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)
