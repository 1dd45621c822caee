"""workbench.check_swaps: the first loss of each assignment tells a swap of same-shape layers,
on TF1 checkpoints saved here and Keras models, in every lane."""

from __future__ import annotations

import numpy as np
import pytest
from test_workbench_mapping import fresh, save_tf1_graph

from workbench.mapping import MappingError
from workbench.swaps import AS_MAPPED, CONFIRMED, NO_MATCH, RESOLVED, SWAPPED, check_swaps


@pytest.fixture(scope="module")
def tf():
    from helpers.quiet import quiet_logs

    quiet_logs()
    import tensorflow

    return tensorflow


X = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)


def chain(order, initializer=None, layers=("dense", "dense_1"), train=True):
    """TF1 layers created in `layers` order and applied in `order` (indices), squared sum."""

    def build(tf1):
        tf1.set_random_seed(3)
        x = tf1.constant(X)
        kernels = [tf1.get_variable(f"{n}/kernel", [4, 4], initializer=initializer) for n in layers]
        for index in order:
            x = tf1.matmul(x, kernels[index])
        loss = tf1.reduce_sum(x**2)
        step = tf1.train.get_or_create_global_step()
        return tf1.train.AdamOptimizer(0.1).minimize(loss, step) if train else None

    return build


def tf1_loss(stored, names):
    x = X
    for name in names:
        x = x @ stored[f"{name}/kernel"]
    return float(np.sum(x.astype(np.float64) ** 2))


def keras_chain(tf, count=2):
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, use_bias=False) for _ in range(count)])
    model(tf.zeros([1, 4]))
    optimizer = tf.keras.optimizers.Adam(0.1)
    optimizer.build(model.trainable_variables)
    return model, optimizer


def squared_sum(model):
    return lambda: float(np.sum(model(X).numpy().astype(np.float64) ** 2))


def checked(tf, tmp_path, order, applied):
    """A TF1 chain applying its layers in `order`, mapped onto a Keras chain, swap-checked
    against TF1's loss of the layers `applied`: (stored, optimizer, mapping, check)."""
    from workbench import map_checkpoint, read_checkpoint

    checkpoint = save_tf1_graph(tf, tmp_path, chain(order=order))
    stored = read_checkpoint(checkpoint)
    model, optimizer = keras_chain(fresh(tf))
    mapping = map_checkpoint(checkpoint, model, optimizer=optimizer)
    assert not mapping.problems(), mapping.report()  # names and shapes accept either order
    check = check_swaps(mapping, squared_sum(model), tf1_loss(stored, applied))
    return stored, model, optimizer, mapping, check


@pytest.mark.tensorflow
def test_layers_applied_in_another_order_are_swapped_back_with_their_slots(tf, tmp_path):
    # TF1 created dense, then dense_1, and applied dense_1 first: Keras' order is the other one
    stored, model, optimizer, mapping, check = checked(tf, tmp_path, (1, 0), ["dense_1", "dense"])
    assert check.verdict == SWAPPED, check.summary()
    assert [t.assignment for t in check.trials] == [AS_MAPPED, "dense <-> dense_1"]
    assert check.trials[0].difference > 1e-3 >= check.trials[1].difference
    # the kept mapping is assigned: the first layer holds dense_1, with dense_1's Adam slots
    first, second = model.layers
    np.testing.assert_array_equal(first.kernel.numpy(), stored["dense_1/kernel"])
    np.testing.assert_array_equal(second.kernel.numpy(), stored["dense/kernel"])
    names = check.mapping.target_names()
    assert names["dense_1/kernel"] == mapping.target_names()["dense/kernel"]
    assert not np.allclose(stored["dense_1/kernel/Adam"], stored["dense/kernel/Adam"])
    np.testing.assert_array_equal(optimizer._momentums[0].numpy(), stored["dense_1/kernel/Adam"])
    np.testing.assert_array_equal(optimizer._velocities[1].numpy(), stored["dense/kernel/Adam_1"])
    assert "check_swaps" in {r.tf1: r.how for r in check.mapping.rows()}["dense/kernel"]


@pytest.mark.tensorflow
def test_the_right_order_is_confirmed_and_the_swap_refused(tf, tmp_path):
    stored, model, _, mapping, check = checked(tf, tmp_path, (0, 1), ["dense", "dense_1"])
    assert check.verdict == CONFIRMED, check.summary()
    assert check.trials[1].difference > 1e-3
    assert check.mapping is mapping
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), stored["dense/kernel"])
    assert "dense <-> dense_1: first loss" in check.summary()


@pytest.mark.tensorflow
def test_ambiguous_variables_are_resolved_by_the_first_loss(tf, tmp_path):
    from workbench import map_checkpoint, read_checkpoint

    layers = ("encoder/dense", "decoder/dense")  # no creation order between the two scopes
    checkpoint = save_tf1_graph(tf, tmp_path, chain(order=(0, 1), layers=layers))
    stored = read_checkpoint(checkpoint)
    model, optimizer = keras_chain(fresh(tf))
    mapping = map_checkpoint(checkpoint, model, optimizer=optimizer)
    assert set(mapping.candidates()) == {f"{n}/kernel" for n in layers}
    check = check_swaps(mapping, squared_sum(model), tf1_loss(stored, layers))
    assert check.verdict == RESOLVED, check.summary()
    assert len(check.trials) == 2 and AS_MAPPED not in [t.assignment for t in check.trials]
    assert not check.mapping.problems(), check.mapping.report()
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), stored["encoder/dense/kernel"])
    np.testing.assert_array_equal(
        optimizer._momentums[1].numpy(), stored["decoder/dense/kernel/Adam"]
    )


@pytest.mark.tensorflow
def test_equal_layers_are_not_run_and_a_wrong_loss_is_no_match(tf, tmp_path):
    from workbench import map_checkpoint

    ones = tf.compat.v1.ones_initializer()
    checkpoint = save_tf1_graph(tf, tmp_path, chain(order=(0, 1), initializer=ones, train=False))
    model, _ = keras_chain(fresh(tf))
    mapping = map_checkpoint(checkpoint, model)
    check = check_swaps(mapping, squared_sum(model), 4 * 40.0**2)  # x @ ones @ ones: 40 each
    assert check.verdict == CONFIRMED, check.summary()
    assert check.trials[1].difference is None and "equal values" in check.trials[1].note
    off = check_swaps(mapping, squared_sum(model), 4 * 40.0**2 + 1.0)
    assert off.verdict == NO_MATCH and "no exchange of two" in off.reason
    assert "left to you" not in off.reason  # nothing was left out of the mapping
    np.testing.assert_array_equal(model.layers[1].kernel.numpy(), np.ones([4, 4]))


@pytest.mark.tensorflow
def test_no_match_names_the_variables_left_to_the_reader(tf, tmp_path):
    from workbench import map_checkpoint

    checkpoint = save_tf1_graph(tf, tmp_path, chain(order=(0, 1), train=False))
    stored = tf.train.load_checkpoint(checkpoint)
    expected = tf1_loss(
        {n: stored.get_tensor(n) for n in ("dense/kernel", "dense_1/kernel")}, ("dense", "dense_1")
    )
    model, _ = keras_chain(fresh(tf), count=3)  # dense_2: no TF1 variable, assigned by hand
    mapping = map_checkpoint(checkpoint, model)
    allow = [r".*dense_2/kernel"]
    model.layers[2].kernel.assign(np.eye(4, dtype=np.float32))  # the right value: x unchanged
    assert check_swaps(mapping, squared_sum(model), expected, allow).verdict == CONFIRMED
    model.layers[2].kernel.assign(2 * np.eye(4, dtype=np.float32))  # a wrong one
    off = check_swaps(mapping, squared_sum(model), expected, allow)
    assert off.verdict == NO_MATCH, off.summary()
    left = [row.tf2 for row in mapping.problems()]
    assert left == [mapping.rows()[-1].tf2] and left[0].endswith("dense_2/kernel")
    assert off.reason.endswith(f"left to you ({left[0]}): check the values you gave them")


@pytest.mark.tensorflow
def test_more_exchanges_than_the_limit_are_refused_in_one_line(tf, tmp_path):
    from workbench import map_checkpoint

    layers = ("dense", "dense_1", "dense_2", "dense_3")
    checkpoint = save_tf1_graph(tf, tmp_path, chain(order=(0, 1, 2, 3), layers=layers))
    model, _ = keras_chain(fresh(tf), count=4)
    mapping = map_checkpoint(checkpoint, model, rules=[(r"^global_step$", None)])
    assert len(mapping.alternatives()) == 6  # every pair of four
    with pytest.raises(MappingError, match=r"6 exchanges .* more than limit=5") as raised:
        check_swaps(mapping, squared_sum(model), 0.0, limit=5)
    assert "\n" not in str(raised.value)


@pytest.mark.tensorflow
def test_an_ambiguous_mapping_that_nothing_fits_gets_its_matched_pairs_back(tf, tmp_path):
    from workbench import map_checkpoint

    layers = ("encoder/dense", "decoder/dense")
    checkpoint = save_tf1_graph(tf, tmp_path, chain(order=(0, 1), layers=layers))
    model, optimizer = keras_chain(fresh(tf))
    mapping = map_checkpoint(checkpoint, model, optimizer=optimizer)

    def moving_loss():  # moves matched state, as batch norm's statistics would move
        optimizer.iterations.assign_add(5)
        return squared_sum(model)()

    check = check_swaps(mapping, moving_loss, -1.0)
    assert check.verdict == NO_MATCH and "keep the last way tried" in check.reason
    assert check.mapping is mapping and int(optimizer.iterations.numpy()) == 1  # global_step


@pytest.mark.tensorflow
def test_slots_a_rule_left_out_stay_out_of_every_exchange(tf, tmp_path):
    from workbench import map_checkpoint, read_checkpoint

    checkpoint = save_tf1_graph(tf, tmp_path, chain(order=(1, 0)))
    stored = read_checkpoint(checkpoint)
    model, optimizer = keras_chain(fresh(tf))
    rules = [(r"/Adam(_1)?$", None)]
    mapping = map_checkpoint(checkpoint, model, rules=rules, optimizer=optimizer)
    check = check_swaps(
        mapping, squared_sum(model), tf1_loss(stored, ["dense_1", "dense"]), allow_unmatched=[".*"]
    )
    assert check.verdict == SWAPPED, check.summary()
    skipped = {r.tf1 for r in check.mapping.rows() if r.tf1.endswith("Adam") and r.how}
    assert all("left out" in {r.tf1: r.how for r in check.mapping.rows()}[n] for n in skipped)
    assert not np.any(optimizer._momentums[0].numpy())  # never assigned


@pytest.mark.tensorflow
def test_sub_variables_follow_their_layer_in_an_exchange(tf, tmp_path):
    from workbench import map_checkpoint

    def with_averages(tf1):
        build = chain(order=(0, 1), train=False)(tf1)
        for name in ("dense", "dense_1"):  # what ExponentialMovingAverage names its shadows
            tf1.get_variable(f"{name}/kernel/ExponentialMovingAverage", [4, 4])
        return build

    checkpoint = save_tf1_graph(tf, tmp_path, with_averages)
    model, _ = keras_chain(fresh(tf))
    names = ("dense/kernel", "dense_1/kernel")
    variables = {n: v for n, v in zip(names, model.trainable_variables, strict=True)}
    for name in names:
        variables[f"{name}/ExponentialMovingAverage"] = tf.Variable(tf.zeros([4, 4]))
    mapping = map_checkpoint(checkpoint, variables, rules=[(r"^global_step$", None)])
    (exchange,) = mapping.alternatives()
    assert exchange.description == "dense <-> dense_1"
    moved, before = exchange.mapping.target_names(), mapping.target_names()
    average = "dense/kernel/ExponentialMovingAverage"
    assert moved[average] == before["dense_1/kernel/ExponentialMovingAverage"] != before[average]
