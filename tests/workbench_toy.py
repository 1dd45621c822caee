"""A TF1 model_fn and input_fn small enough to record in seconds, and its faithful TF2 port:
what tests/test_workbench_record.py points the workbench at, as a reader points it at theirs.

params: `optimizer` ("sgd", "momentum", "adam" or "by_hand": a hand-written update with no
Apply op, as BERT's), `dropout` (a rate; 0 builds no dropout op), `clip` (a clip_norm for
clip_by_global_norm; 0 clips nothing), `fail` (model_fn raises),
`examples` (the dataset's size; the training input repeats unless `once`), `cond_warmup`
(a warm-up written with tf.cond), `l2` (a penalty the train_op minimizes and the spec's loss
leaves out), `drop_connect` (a survival probability: drop connect on the hidden layer, as
EfficientNet's `utils.drop_connect` writes it, with a `[batch, 1]` draw).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
RATE, DECAY_STEPS, DECAY = 0.1, 2, 0.5


def data(examples: int = 64) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(examples, 4)).astype(np.float32)
    return x, (x.sum(axis=1, keepdims=True) > 0).astype(np.float32)


def input_fn(params):
    x, y = data(params.get("examples", 64))
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    if not params.get("once"):
        dataset = dataset.repeat()
    return dataset.batch(params["batch_size"], drop_remainder=not params.get("once"))


def by_hand(loss, rate, step):
    """An update with no optimizer class: the rate reaches the weights through multiplications."""
    variables = tf1.trainable_variables()
    gradients = tf1.gradients(loss, variables)
    updates = [v.assign_sub(rate * g) for v, g in zip(variables, gradients, strict=True)]
    with tf1.control_dependencies(updates):
        return step.assign_add(1)


def drop_connect(inputs, survival_prob):
    """EfficientNet's `utils.drop_connect` (training branch), for inputs of any rank: one
    uniform number per example, `[batch, 1, ..., 1]`."""
    shape = tf1.concat([tf1.shape(inputs)[:1], tf1.ones([tf1.rank(inputs) - 1], tf1.int32)], 0)
    random_tensor = survival_prob
    random_tensor += tf1.random_uniform(shape, dtype=inputs.dtype)
    binary_tensor = tf1.floor(random_tensor)
    return tf1.div(inputs, survival_prob) * binary_tensor


def model_fn(features, labels, mode, params):
    if params.get("fail"):
        raise ValueError("the model_fn refuses these features")
    # An explicit TF1 initializer draws from the graph seed (RunConfig's tf_random_seed), so
    # every recording starts alike; tf.layers' default one does not (notebook 01).
    init = tf1.glorot_uniform_initializer()
    hidden = tf1.layers.Dense(8, tf.nn.relu, kernel_initializer=init, name="hidden")(features["x"])
    if mode == tf1.estimator.ModeKeys.TRAIN and params.get("dropout"):
        hidden = tf1.nn.dropout(hidden, rate=params["dropout"])
    if mode == tf1.estimator.ModeKeys.TRAIN and params.get("drop_connect"):
        hidden = drop_connect(hidden, params["drop_connect"])
    logits = tf1.layers.Dense(1, kernel_initializer=init, name="logits")(hidden)
    loss = tf1.losses.sigmoid_cross_entropy(labels, logits)
    step = tf1.train.get_global_step()
    rate = tf1.train.exponential_decay(RATE, step, DECAY_STEPS, DECAY)
    if params.get("cond_warmup"):  # a warm-up written with tf.cond, as many models have it
        warm = RATE * tf1.cast(step + 1, tf1.float32) / 4.0
        rate = tf1.cond(step < 2, lambda: warm, lambda: rate)
    kind = params.get("optimizer", "sgd")
    if kind == "by_hand":
        train_op = by_hand(loss, rate, step)
    else:
        optimizer = {
            "sgd": tf1.train.GradientDescentOptimizer,
            "momentum": lambda r: tf1.train.MomentumOptimizer(r, 0.9),
            "adam": tf1.train.AdamOptimizer,
        }[kind](rate)
        minimized = loss  # `l2`: the train_op minimizes the loss plus a penalty the spec omits
        if params.get("l2"):
            penalty = tf1.add_n([tf1.nn.l2_loss(v) for v in tf1.trainable_variables()])
            minimized = loss + params["l2"] * penalty
        pairs = optimizer.compute_gradients(minimized)
        if params.get("clip"):
            gradients, _ = tf1.clip_by_global_norm([g for g, _ in pairs], params["clip"])
            pairs = zip(gradients, [v for _, v in pairs], strict=True)
        train_op = optimizer.apply_gradients(pairs, global_step=step)

    def metric_fn(labels, logits):
        return {"accuracy": tf1.metrics.accuracy(labels, tf1.cast(logits > 0, tf1.float32))}

    return tf1.estimator.tpu.TPUEstimatorSpec(
        mode, loss=loss, train_op=train_op, eval_metrics=(metric_fn, [labels, logits])
    )


def build_model(between=None):
    """The port's layers; `between`: a layer after the hidden one (a TF1 mask's)."""
    layers = [tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)]
    middle = [between] if between is not None else []
    model = tf.keras.Sequential([layers[0], *middle, layers[1]])
    model.build((None, 4))
    return model


def build_port(rate: float = RATE):
    """The port compiled with its optimizer (SGD on TF1's schedule), built: what
    `python -m workbench compare --model` takes for the synchronized verdict."""
    model = build_model()
    schedule = tf.keras.optimizers.schedules.ExponentialDecay(rate, DECAY_STEPS, DECAY)
    model.compile(optimizer=tf.keras.optimizers.SGD(schedule))
    model.optimizer.build(model.trainable_variables)
    return model


def build_port_at_another_rate():
    return build_port(0.12)


def train_step(model, features, labels) -> dict[str, float]:
    """One training step of the port on one batch: its loss and gradient norm, for the
    synchronized verdict's stages."""
    loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(features["x"]))
    gradients = tape.gradient(loss, model.trainable_variables)
    model.optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
    return {"loss": float(loss), "gradient_norm": float(tf.linalg.global_norm(gradients))}


def apply_gradients(model, pairs) -> None:
    """The update half of `train_step`, for `compare --apply`: the port's optimizer."""
    model.optimizer.apply_gradients(pairs)


def first_loss(model, features, labels) -> float:
    """The port's loss of one batch, no update: what `python -m workbench map --first-loss`
    calls for the swap check."""
    loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    return float(loss_fn(labels, model(features["x"])))


def first_step(model, features, labels) -> None:
    """The port's first training step on one batch, at the schedule's first rate: what
    `python -m workbench map --first-step` calls to compare each variable's first update."""
    loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(features["x"]))
    gradients = tape.gradient(loss, model.trainable_variables)
    for variable, gradient in zip(model.trainable_variables, gradients, strict=True):
        variable.assign_sub(RATE * gradient)


def train_tf2(baseline, rate: float = RATE) -> tuple[list[dict[str, float]], dict]:
    """The port: start from model.ckpt-0, train on the baseline's batches with plain SGD."""
    from workbench import map_checkpoint

    model = build_model()
    mapping = map_checkpoint(baseline.checkpoint, model)
    mapping.assign()
    schedule = tf.keras.optimizers.schedules.ExponentialDecay(rate, DECAY_STEPS, DECAY)
    optimizer = tf.keras.optimizers.SGD(schedule)
    loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    steps = []
    for number, (features, labels) in enumerate(baseline.batches()):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(features["x"]))
        gradients = tape.gradient(loss, model.trainable_variables)
        norm = tf.linalg.global_norm(gradients)
        steps.append(
            {
                "loss": float(loss),
                "learning_rate": float(schedule(number)),
                "gradient_norm": float(norm),
            }
        )
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
    return steps, mapping.tf2_values(weights_only=True)
