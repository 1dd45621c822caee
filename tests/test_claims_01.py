"""What `RunConfig(tf_random_seed)` fixes in TensorFlow 2.15, as notebook 01 and the cheat sheet
say it: the graph-level seed fixes an explicit TF1 initializer (BERT's dense layers have
`truncated_normal_initializer(stddev=0.02)`), not `tf1.layers`' default one, which draws its
seed from Keras' global random state. Two fresh processes show it."""

from __future__ import annotations

import pytest
from support import run_python

pytestmark = [pytest.mark.reference_only, pytest.mark.tensorflow]

SCRIPT = """
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
tf1 = tf.compat.v1
for initializer in (None, tf1.truncated_normal_initializer(stddev=0.02)):
    with tf.Graph().as_default():
        tf1.set_random_seed(42)
        features = tf1.placeholder(tf.float32, [None, 4])
        tf1.layers.dense(features, 3, kernel_initializer=initializer)
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            print(session.run(tf1.trainable_variables()[0]).tobytes().hex())
"""


def initial_kernels() -> list[str]:
    run = run_python(SCRIPT)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.split()


def test_the_graph_seed_fixes_an_explicit_initializer_not_the_default_one():
    (default_1, explicit_1), (default_2, explicit_2) = initial_kernels(), initial_kernels()
    assert explicit_1 == explicit_2
    assert default_1 != default_2
