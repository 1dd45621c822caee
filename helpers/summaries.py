"""Read scalars back from TensorBoard event files.

`TPUEstimator`'s `host_call` and Keras' TensorBoard callback both write summaries to event
files; reading them back turns "it logged something" into numbers a notebook can print,
plot and compare across TF1 and TF2.
"""

from __future__ import annotations

from pathlib import Path


def read_scalars(log_dir: str | Path, tag: str) -> dict[int, float]:
    """All values of summary `tag` under `log_dir` (recursively), keyed by step."""
    import tensorflow as tf

    values: dict[int, float] = {}
    for event_file in sorted(Path(log_dir).rglob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(event_file)):
            for value in event.summary.value:
                if value.tag != tag:
                    continue
                if value.HasField("tensor"):
                    values[int(event.step)] = float(tf.make_ndarray(value.tensor))
                else:
                    values[int(event.step)] = float(value.simple_value)
    if not values:
        raise LookupError(f"no summary named {tag!r} in the event files under {log_dir}")
    return dict(sorted(values.items()))
