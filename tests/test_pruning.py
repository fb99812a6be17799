"""Physical head pruning (transformers 5 has no prune_heads; the one pruning of every family, here on BERT) and the
speed table."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.core.errors import ParameterError
from attnbook.engine.interventions import disable_heads, head_mask
from attnbook.engine.pruning import (
    heads_from_mask,
    kept_heads,
    least_important_heads,
    measure_throughput,
    prune_heads,
    pruned_copy,
    pruning_speed,
)

from tiny_models import tiny_classifier


def padded_batch(lengths, seed=0):
    g = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.randint(5, 64, (len(lengths), width), generator=g)
    mask = (torch.arange(width)[None] < torch.tensor(lengths)[:, None]).long()
    return {"input_ids": ids * mask, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


HEADS = {0: [1, 3], 2: [0], 1: [2, 1, 0]}


def _mask_for(heads, shape=(3, 4)):
    xi = torch.ones(shape)
    for layer, hs in heads.items():
        xi[layer, hs] = 0
    return xi


def test_pruned_model_equals_masked_model():
    model = tiny_classifier(seed=1)
    inputs = padded_batch([9, 4, 6], seed=1)
    with torch.no_grad(), head_mask(model, _mask_for(HEADS)):
        masked = model(**inputs).logits
    pruned = pruned_copy(model, HEADS)
    with torch.no_grad():
        got = pruned(**inputs).logits
        full = model(**inputs).logits
    assert torch.max(torch.abs(got - masked)) < 1e-5
    assert torch.max(torch.abs(full - masked)) > 1e-3  # pruning changed the function


def test_module_attributes_and_parameter_shapes():
    model = tiny_classifier(seed=2)
    n_before = sum(p.numel() for p in model.parameters())
    prune_heads(model, HEADS)
    size = 8
    for layer, n_left in [(0, 2), (1, 1), (2, 3)]:
        attn = model.bert.encoder.layer[layer].attention
        assert attn.self.num_attention_heads == n_left
        assert attn.self.all_head_size == n_left * size
        for part in (attn.self.query, attn.self.key, attn.self.value):
            assert tuple(part.weight.shape) == (n_left * size, 32) and part.bias.shape == (n_left * size,)
        assert tuple(attn.output.dense.weight.shape) == (32, n_left * size)
    # 6 heads x (3 projections x (8x32 + 8) + 8x32 output columns)
    assert n_before - sum(p.numel() for p in model.parameters()) == 6 * (3 * (8 * 32 + 8) + 8 * 32)
    assert kept_heads(model) == {0: [0, 2], 1: [3], 2: [1, 2, 3]}
    assert model.config.num_attention_heads == 4  # the config keeps the original shape


def test_pruning_in_two_steps_equals_one_step():
    model = tiny_classifier(seed=3)
    inputs = padded_batch([7, 5], seed=2)
    once = pruned_copy(model, HEADS)
    twice = pruned_copy(model, {0: [1], 1: [2]})
    prune_heads(twice, {0: [3, 1], 1: [1, 0], 2: [0]})  # 0:1 already gone: ignored
    with torch.no_grad():
        assert torch.max(torch.abs(once(**inputs).logits - twice(**inputs).logits)) < 1e-6
    assert kept_heads(once) == kept_heads(twice)


def test_interventions_keep_the_original_head_numbering_after_pruning():
    model = tiny_classifier(seed=4)
    inputs = padded_batch([8, 3, 6], seed=3)
    pruned = pruned_copy(model, {0: [0], 2: [1, 2]})
    disabled = [(0, 2), (2, 3)]  # original indices of heads still present
    with torch.no_grad():
        with head_mask(model, _mask_for({0: [0], 2: [1, 2]})), disable_heads(model, disabled):
            expected = model(**inputs, output_attentions=True)
        with disable_heads(pruned, disabled):
            got = pruned(**inputs, output_attentions=True)
    assert torch.max(torch.abs(got.logits - expected.logits)) < 1e-5
    assert got.attentions[0].shape[1] == 3 and got.attentions[2].shape[1] == 2
    # pruned layer 0 keeps original heads [1, 2, 3]: original head 2 is its second slot, uniform
    assert torch.allclose(got.attentions[0][:, 1], expected.attentions[0][:, 2])


def test_pruning_a_whole_layer_leaves_an_inert_placeholder_equal_to_masking_it():
    """One rule for every family (the BERT path used to refuse it): a layer whose heads all go keeps one zero head,
    and the model computes what the unpruned one computes with the layer masked."""
    model = tiny_classifier(seed=5)
    batch = padded_batch([7, 4, 6])
    with torch.no_grad(), head_mask(model, _mask_for({1: [0, 1, 2, 3]})):
        masked = model(**batch).logits
    pruned = pruned_copy(model, {1: [0, 1, 2, 3]})
    with torch.no_grad():
        assert torch.allclose(pruned(**batch).logits, masked, atol=1e-6)
    assert kept_heads(pruned)[1] == [] and pruned.bert.encoder.layer[1].attention.self.query.out_features == 8


def test_pruning_errors_name_the_fix():
    model = tiny_classifier(seed=5)
    with pytest.raises(ParameterError, match="outside"):
        prune_heads(model, {5: [0]})
    with pytest.raises(ParameterError, match="outside"):
        prune_heads(model, {0: [4]})


def test_heads_from_mask_and_least_important():
    mask = np.ones((3, 4))
    mask[0, 2] = mask[2, 0] = mask[2, 3] = 0
    assert heads_from_mask(mask) == {0: [2], 2: [0, 3]}
    imp = np.array([[0.1, 0.2, 0.3, 0.4], [0.05, 0.06, 0.07, 0.08], [0.9, 0.8, 0.7, 0.6]])
    chosen = least_important_heads(imp, 0.5)  # 6 heads; layer 1 keeps one head
    assert sum(len(v) for v in chosen.values()) == 6
    assert chosen[1] == [0, 1, 2]
    assert chosen[0] == [0, 1, 2]
    assert least_important_heads(imp, 0.5, min_per_layer=0)[1] == [0, 1, 2, 3]


def test_throughput_tables_have_the_expected_shape():
    model = tiny_classifier(seed=6)
    pool = padded_batch([6] * 8, seed=4)
    recs = measure_throughput(model, pool, batch_sizes=(1, 2), n_examples=4, repeats=2)
    assert [(r["batch_size"], r["repeat"]) for r in recs] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert all(r["examples_per_s"] > 0 for r in recs)
    table = pruning_speed(model, pool, importance=np.arange(12.0).reshape(3, 4), share=0.5, batch_sizes=(1, 4), n_examples=4, repeats=2)
    assert table["batch_size"].tolist() == [1, 4]
    assert set(table.columns) >= {"original_mean", "original_std", "pruned_mean", "pruned_std", "gain_pct", "n_pruned"}
    assert table["n_pruned"].iloc[0] == 6
    assert np.allclose(table["gain_pct"], 100 * (table["pruned_mean"] / table["original_mean"] - 1))
    assert kept_heads(model) == {0: [0, 1, 2, 3], 1: [0, 1, 2, 3], 2: [0, 1, 2, 3]}  # original untouched
