"""papermill cases for 14_tpu_embeddings (same `Case` as notebook_cases.CASES).

Every good run asserts, inside the notebook, that `TPUEmbeddingForServing` with TF1's tables
(restored from a `TPUEmbedding` checkpoint) gives TF1's activations and logits within 1e-6 and
each combiner NumPy's; that the Keras layer of the lane's Keras generation, continued from
TF1's checkpoint after 8 steps with its Adagrad accumulators, matches TF1's steps 9 to 16
within 1e-5 on 1, 2, 4 and 8 replicas between the two generations (papermill 1 and 2 in the
current lane, 8 in the reference lane, the defaults' 4 in nbval and the Colab lane; in Keras 3
with the summing `Adagrad`, and that Keras 3's own `Adagrad` misses the bound); that each trap
shows; and that the TF2 export serves TF1's probabilities within 1e-5, for the evaluation
requests and for a request without `user` and one with two. In the reference lane the
TensorFlow 1 cells run too: the notebook checks their run against the stored one
(fixtures/tf1_embedding), and that `export_to_tpu=True` fails alike with `use_tpu` False and
True.
"""

from __future__ import annotations

from notebook_cases import stored_run_cases

NOTEBOOK = "14_tpu_embeddings.ipynb"

CASES_14 = stored_run_cases(NOTEBOOK)
