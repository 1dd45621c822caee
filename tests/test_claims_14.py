"""Pins on the TensorFlow, estimator, Keras and embedding-layer source that notebook 14 (TPU
embeddings) quotes but its cells do not assert.

What the notebook runs (the spec's optimizer ignored off a TPU, `partition_strategy="mod"`
refused, the lookups, the combiners, the continued training, each Keras generation's Adagrad
on a repeated row, the traps, the export) its cells assert. Left here: the statements about
the code that decides it, read in the files the notebook names, without starting TensorFlow.
"""

from __future__ import annotations

import pytest
from support import (
    KERAS_MAJOR,
    assert_quotes,
    assert_tpu_estimator_quotes,
    definition,
    installed_source,
)


def estimator_tpu_source(name: str) -> str:
    return installed_source("tensorflow_estimator", "python", "estimator", "tpu", name)


def tensorflow_source(*parts: str) -> str:
    return installed_source("tensorflow", "python", *parts)


@pytest.mark.reference_only
def test_off_a_tpu_the_estimator_builds_no_embedding_configuration() -> None:
    context = estimator_tpu_source("tpu_context.py")
    config = definition(context, "embedding_config", "def allow_per_host_v2_parallel_get_next(")
    assert "if self._use_tpu and self._embedding_config_spec:" in config
    estimator = estimator_tpu_source("tpu_estimator.py")
    tpu_estimator = estimator[estimator.index("class TPUEstimator(") :]
    init = definition(tpu_estimator, "__init__", "def _add_meta_graph_for_mode(")
    checked = init[init.index("if use_tpu:") : init.index("_tpu_estimator_gauge")]
    assert "Only PER_HOST_V1 and PER_HOST_V2 is supported when " in checked
    assert (
        "if (not (use_tpu and eval_on_tpu) and embedding_config_spec and "
        "embedding_config_spec.partition_strategy == 'mod'):" in init
    )
    spec = estimator_tpu_source("_tpu_estimator_embedding.py")
    assert "partition_strategy='div'," in spec


@pytest.mark.reference_only
def test_on_a_tpu_the_estimator_sends_the_gradients_and_loads_and_retrieves_the_tables() -> None:
    estimator = estimator_tpu_source("tpu_estimator.py")
    assert "tpu_embedding_.generate_send_gradients_op(" in estimator
    assert "tpu_init_ops.extend(embedding_variables_and_ops.load_ops())" in estimator
    hook = estimator[estimator.index("class TPUInfeedOutfeedSessionHook(") :]
    started = definition(hook, "after_create_session", "def before_run(")
    assert "session.run( self._init_ops," in started
    assert "update_ops.extend(embedding_variables_and_ops.retrieve_ops())" in estimator
    embedding = tensorflow_source("tpu", "tpu_embedding.py")
    assert "def generate_send_gradients_op(self, feature_to_gradient_dict, step=None):" in embedding
    assert "self._batch_size_per_core = self._batch_size // self._num_cores" in embedding


def test_the_tpu_columns_fall_back_to_ordinary_embedding_columns_off_a_tpu() -> None:
    columns = tensorflow_source("tpu", "feature_column_v2.py")

    def class_body(name: str) -> str:
        start = columns.index(f"class {name}(")
        return columns[start : columns.index("class ", start + 1)]

    single = class_body("_TPUEmbeddingColumnV2")
    for method, following in (
        ("create_state", "def get_dense_tensor("),
        ("get_dense_tensor", "def _get_sequence_dense_tensor("),
    ):
        body = definition(single, method, following)
        assert "if _is_running_on_cpu(): return fc_lib.EmbeddingColumn." in body, method
    shared = definition(
        class_body("_TPUSharedEmbeddingColumnV2"),
        "_get_dense_tensor_internal",
        "def get_sequence_dense_tensor(",
    )
    assert "if _is_running_on_cpu(): return fc_lib.SharedEmbeddingColumn." in shared


@pytest.mark.reference_only
def test_dense_features_sorts_its_columns_by_name() -> None:
    layer = installed_source("keras", "src", "feature_column", "base_feature_layer.py")
    start = layer.index("def _normalize_feature_columns(")
    normalize = layer[start:]
    assert "return sorted(feature_columns, key=lambda x: x.name)" in normalize


def test_an_identity_column_without_default_value_passes_any_id_on() -> None:
    columns = tensorflow_source("feature_column", "feature_column_v2.py")
    identity = columns[columns.index("class IdentityCategoricalColumn(") :]
    transform = definition(identity, "_transform_input_tensor", "def _transform_feature(")
    assert "if self.default_value is not None:" in transform
    assert "# Assign default for out-of-range values." in transform


def test_mirrored_all_reduce_gathers_the_replicas_slices() -> None:
    mirrored = tensorflow_source("distribute", "mirrored_strategy.py")
    default = "# If cross_device_ops is not provided, set it to collective op by default."
    assert default in mirrored
    ops = tensorflow_source("distribute", "cross_device_ops.py")
    collective = ops[ops.index("class CollectiveAllReduce(") :]
    assert "launcher.all_reduce_indexed_slices(indexed_slice, options)" in collective
    utils = tensorflow_source("distribute", "cross_device_utils.py")
    reduce_slices = definition(
        utils, "all_reduce_indexed_slices", "def aggregate_tensors_or_indexed_slices("
    )
    assert "all_values = all_gather_fn(input_slices.values, options)" in reduce_slices
    assert "all_indices = all_gather_fn(input_slices.indices, options)" in reduce_slices


def test_tpu_embedding_documents_its_cpu_use_its_tpu_loop_and_a_fixed_input_shape() -> None:
    source = tensorflow_source("tpu", "tpu_embedding_v2.py")
    assert "To use this API on TPU you should use a custom training loop." in source
    assert "On CPU, only the `embedding_table` property is usable." in source
    assert "embedding.enqueue(embedding_features, training=True)" in source
    assert "embedding.apply_gradients(embedding_gradients)" in source
    assert "experimental_fetch_to_device=False))" in source
    build = definition(source, "build", "def _maybe_build(")
    assert (
        "Note that it is fixed and the same per replica input shapes must be used for both "
        "training and evaluation." in build
    )


def test_table_config_combines_by_mean_and_initializes_with_one_over_root_dim() -> None:
    utils = tensorflow_source("tpu", "tpu_embedding_v2_utils.py")
    table = utils[utils.index("class TableConfig") : utils.index("class FeatureConfig")]
    assert 'combiner: Text = "mean",' in table or 'CustomCombiner] = "mean",' in table
    assert "stddev=1/math.sqrt(dim))" in table


def test_tf1_optimizers_add_the_slices_of_a_repeated_row_first() -> None:
    optimizer = tensorflow_source("training", "optimizer.py")
    duplicates = definition(optimizer, "_apply_sparse_duplicate_indices", "def _apply_sparse(")
    assert "summing squares rather than squaring the sum" in duplicates
    assert "_deduplicate_indexed_slices(" in duplicates


@pytest.mark.skipif(KERAS_MAJOR != 2, reason="Keras 2 and TensorFlow Recommenders source")
def test_keras_2_sums_repeated_rows_and_its_layer_serves_off_a_tpu() -> None:
    optimizer = installed_source("keras", "src", "optimizers", "optimizer.py")
    apply = definition(optimizer, "apply_gradients", "def _apply_weight_decay(")
    assert "grads = self._deduplicate_sparse_grad(grads)" in apply
    layer = installed_source(
        "tensorflow_recommenders", "layers", "embedding", "tpu_embedding_layer.py"
    )
    create = definition(layer, "_create_tpu_embedding_mid_level_api", "def build(")
    assert (
        "if not using_tpu or embedding_feature is None: return "
        "tf.tpu.experimental.embedding.TPUEmbeddingForServing(" in create
    )
    assert "return tf.tpu.experimental.embedding.TPUEmbeddingV0(" in create
    assert "return tf.tpu.experimental.embedding.TPUEmbedding(" in create
    assert 'raise NotImplementedError("Embedding feature v2 is not supported yet!")' in create
    build = definition(layer, "build", "def _tpu_embedding_lookup(")
    assert "setattr(self, _DUMMY_NAME, self._tpu_embedding.embedding_tables.values())" in build
    v0 = tensorflow_source("tpu", "tpu_embedding_v1.py")
    assert "Embedding tables will be replicated across devices" in v0


@pytest.mark.skipif(KERAS_MAJOR != 3, reason="Keras 3 and Keras RS source")
def test_keras_3_adagrad_accumulates_each_slice_and_keras_rs_places_tables_by_hardware() -> None:
    adagrad = installed_source("keras", "src", "optimizers", "adagrad.py")
    assert "self.assign_add(accumulator, ops.square(gradient))" in adagrad
    backend = installed_source("keras", "src", "backend", "tensorflow", "optimizer.py")
    update = definition(backend, "_backend_update_step", "def _distributed_tf_update_step(")
    reduced = "grads_and_vars = self._all_reduce_sum_gradients(grads_and_vars)"
    assert reduced in update and update.index(reduced) < update.index("_distributed_tf_update_step")
    assign_add = definition(backend, "assign_add", "def assign_sub(")
    assert "if isinstance(value, tf.IndexedSlices): variable.scatter_add(value)" in assign_add
    embedding = ("keras_rs", "src", "layers", "embedding")
    base = installed_source(*embedding, "base_distributed_embedding.py")
    assert 'placement = ( "sparsecore" if has_sparsecore else "default_device" )' in base
    default_device = definition(base, "_default_device_init", "def _default_device_build(")
    assert "embedding_layer = EmbedReduce(" in default_device
    tensorflow = installed_source(*embedding, "tensorflow", "distributed_embedding.py")
    sparsecore = definition(tensorflow, "_has_sparsecore", "@keras_utils.no_automatic_dependency")
    assert "EMBEDDING_FEATURE_V2, EMBEDDING_FEATURE_V1," in sparsecore
    sparsecore_init = tensorflow[tensorflow.index("def _sparsecore_init(") :]
    assert "tf.tpu.experimental.embedding.TPUEmbedding(" in sparsecore_init
    assert "TPUEmbeddingV2(" in sparsecore_init
    conversion = installed_source(*embedding, "tensorflow", "config_conversion.py")
    assert "optimizer=to_tf_tpu_optimizer(table_config.optimizer)," in conversion
    config = installed_source(*embedding, "distributed_embedding_config.py")
    assert 'combiner: str = "mean"' in config
    assert "the first dimension represents the global batch size" in config


@pytest.mark.reference_only
def test_the_tpu_export_calls_the_model_fn_as_off_a_tpu_inside_a_rewrite() -> None:
    assert_quotes(
        "tensorflow_estimator/python/estimator/tpu/tpu_context.py",
        "_is_running_on_cpu",
        "@property",
        ["if not self._use_tpu: return True", "if is_export_mode: return True"],
    )
    augmented = (
        "if ctx.is_running_on_cpu(is_export_mode=is_export_mode): "
        "tf.compat.v1.logging.info('Running %s on CPU/GPU', mode) "
        "estimator_spec = model_fn_wrapper.call_without_tpu("
    )
    assert_tpu_estimator_quotes("_augment_model_fn", "def _export_output_to_tensors(", [augmented])
    inference = "Note that this does not support features which are SparseTensors."
    assert_tpu_estimator_quotes(
        "model_fn_inference_on_tpu", "def _build_computation_for_", [inference]
    )
    computation = "tensors_on_cpu = tf.compat.v1.tpu.rewrite(tpu_computation)"
    assert_tpu_estimator_quotes(
        "_build_computation_for_inference", "def inference_on_tpu(", [computation]
    )
    columns = tensorflow_source("tpu", "feature_column_v2.py")
    single = columns[columns.index("class _TPUEmbeddingColumnV2(") :]
    create = definition(single, "create_state", "def get_dense_tensor(")
    assert (
        "_record_variable_scope_and_name( self.get_embedding_var_name(), 'embedding_weights',"
        in (create)
    )
    assert_quotes(
        "tensorflow/python/tpu/feature_column.py",
        "_is_running_on_cpu",
        "def get_sequence_length_feature_key_name_from_feature_key_name(",
        ["return tpu_function.get_tpu_context().number_of_shards is None"],
    )
    assert "with tpu_function.tpu_shard_context(" in tensorflow_source("tpu", "tpu.py")
    state = tensorflow_source("feature_column", "feature_column_v2.py")
    assert (
        "if name in self._cols_to_vars_map[feature_column]: return "
        "self._cols_to_vars_map[feature_column][name] raise ValueError('Variable does not exist.')"
        in state
    )


def test_an_id_out_of_range_fails_on_a_cpu_and_is_not_checked_on_a_gpu() -> None:
    gather = definition(tensorflow_source("ops", "array_ops.py"), "gather", "def gather_v2(")
    assert (
        "Caution: On CPU, if an out of bound index is found, an error is raised. On GPU, if an "
        "out of bound index is found, a 0 is stored in the corresponding output value." in gather
    )
    embedding = tensorflow_source("ops", "embedding_ops.py")
    lookup = definition(embedding, "embedding_lookup", "def embedding_lookup_v2(")
    assert (
        "when using `tf.nn.embedding_lookup` on a GPU, if an out-of-bound index is encountered, "
        "a value of 0 will be stored in the corresponding output value." in lookup
    )
    assert (
        "out-of-bound indices result in safe but unspecified behavior, which may include "
        "raising an error" in lookup
    )


def test_serving_lookup_combines_sparse_ids_safely_and_looks_dense_ids_up_one_by_one() -> None:
    """Whitespace removed: TensorFlow 2.15 and later format this file differently."""
    serving = tensorflow_source("tpu", "tpu_embedding_for_serving.py")
    cpu = definition(serving, "cpu_embedding_lookup", "def _embedding_lookup_for_sparse_tensor(")
    cpu = cpu.replace(" ", "")
    assert (
        'raiseValueError("Feature{}isasequencefeaturebutadensetensor""waspassed.".format(path))'
        "outputs.append(embedding_ops.embedding_lookup_v2(table,inp))" in cpu
    )
    sparse = definition(
        serving, "_embedding_lookup_for_sparse_tensor", "def _embedding_lookup_for_ragged_tensor("
    ).replace(" ", "")
    assert (
        "returnembedding_ops.safe_embedding_lookup_sparse_v2("
        "table,inp,sparse_weights=weight,combiner=feature.table.combiner" in sparse
    )
    assert "ifnotfeature.validate_weights_and_indices" in sparse.replace("(", "")
    utils = tensorflow_source("tpu", "tpu_embedding_v2_utils.py")
    feature = utils[utils.index("class FeatureConfig") :]
    assert "validate_weights_and_indices: bool = True," in feature
    columns = tensorflow_source("feature_column", "feature_column_v2.py")
    assert "embedding_lookup_sparse = embedding_ops.safe_embedding_lookup_sparse" in columns
    safe = definition(
        tensorflow_source("ops", "embedding_ops.py"), "safe_embedding_lookup_sparse_v2", "@"
    )
    assert "or the 0-vector if `default_id` is not supplied" in safe
