"""Head interventions: Kovaleva's uniform disabling and Michel's differentiable head mask."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook.core.errors import ParameterError
from attnbook.engine.interventions import (
    ATTN_IMPLEMENTATION,
    disable_heads,
    disable_layers,
    head_mask,
    tile_batch,
    uniform_from_mask,
)

from tiny_models import tiny_classifier


def padded_batch(lengths, width=None, vocab=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    width = width or max(lengths)
    ids = torch.randint(5, vocab, (len(lengths), width), generator=g)
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
        ids[b, n:] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def test_disabled_rows_are_uniform_over_real_tokens_and_zero_on_pads(tiny_bert):
    model = tiny_bert.model
    inputs = padded_batch([7, 3, 5], seed=1, vocab=1000)
    with torch.no_grad():
        base = model(**inputs, output_attentions=True).attentions
        with disable_heads(model, [(0, 1), (1, 0), (1, 3)]):
            out = model(**inputs, output_attentions=True).attentions
    lengths = inputs["attention_mask"].sum(1)
    disabled = {(0, 1), (1, 0), (1, 3)}
    for layer in range(2):
        for head in range(4):
            got = out[layer][:, head]
            if (layer, head) in disabled:
                for b, n in enumerate(lengths.tolist()):
                    expected = torch.zeros_like(got[b])
                    expected[:, :n] = torch.tensor(1.0, dtype=got.dtype) / n
                    assert torch.equal(got[b], expected)
            elif layer == 0:  # layers above a disabled head see different inputs
                assert torch.equal(got, base[layer][:, head])


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=4),
    extra_pad=st.integers(min_value=0, max_value=3),
    heads=st.sets(st.tuples(st.integers(0, 1), st.integers(0, 3)), min_size=1, max_size=8),
    seed=st.integers(0, 1000),
)
def test_uniform_disabling_property(tiny_bert, lengths, extra_pad, heads, seed):
    model = tiny_bert.model
    inputs = padded_batch(lengths, width=max(lengths) + extra_pad, seed=seed, vocab=1000)
    with torch.no_grad(), disable_heads(model, sorted(heads)):
        attn = model(**inputs, output_attentions=True).attentions
    for layer, head in heads:
        a = attn[layer][:, head]  # [batch, query, key]
        for b, n in enumerate(lengths):
            assert torch.all(a[b, :, :n] == torch.tensor(1.0 / n, dtype=a.dtype))
            assert torch.all(a[b, :, n:] == 0)


def test_disabling_equals_zero_query_projection():
    """With zero query weights every score is 0, so softmax is exactly uniform over real keys:
    an independent construction of Kovaleva's disabled head."""
    model = tiny_classifier(seed=3)
    inputs = padded_batch([9, 4, 6], seed=2)
    layer, head = 1, 2
    ref = copy.deepcopy(model)
    q = ref.bert.encoder.layer[layer].attention.self.query
    size = q.weight.shape[0] // 4
    with torch.no_grad():
        q.weight[head * size : (head + 1) * size] = 0
        q.bias[head * size : (head + 1) * size] = 0
        expected = ref(**inputs).logits
        with disable_heads(model, [(layer, head)]):
            got = model(**inputs).logits
        base = model(**inputs).logits
    assert torch.allclose(got, expected, atol=1e-6)
    assert not torch.allclose(got, base, atol=1e-4)  # the intervention did something


def test_zero_mask_equals_zero_value_projection():
    """xi_h = 0 removes head h's output: the same as zeroing its value vectors."""
    model = tiny_classifier(seed=4)
    inputs = padded_batch([8, 5], seed=3)
    layer, head = 2, 1
    ref = copy.deepcopy(model)
    v = ref.bert.encoder.layer[layer].attention.self.value
    size = v.weight.shape[0] // 4
    xi = torch.ones(3, 4)
    xi[layer, head] = 0
    with torch.no_grad():
        v.weight[head * size : (head + 1) * size] = 0
        v.bias[head * size : (head + 1) * size] = 0
        expected = ref(**inputs).logits
        with head_mask(model, xi):
            got = model(**inputs).logits
    assert torch.allclose(got, expected, atol=1e-6)


def test_mask_and_disable_differ():
    model = tiny_classifier(seed=5)
    inputs = padded_batch([8, 6], seed=4)
    xi = torch.ones(3, 4)
    xi[0, 0] = 0
    with torch.no_grad():
        with head_mask(model, xi):
            masked = model(**inputs).logits
        with disable_heads(model, [(0, 0)]):
            disabled = model(**inputs).logits
    assert not torch.allclose(masked, disabled, atol=1e-4)


@pytest.mark.parametrize("which", ["model", "classifier"])
def test_identity_interventions_reproduce_baseline_exactly(tiny_bert, which):
    model = tiny_bert.model if which == "model" else tiny_classifier(seed=6)
    vocab = 1000 if which == "model" else 64
    inputs = padded_batch([6, 2, 4], seed=5, vocab=vocab)
    n_layers, n_heads = model.config.num_hidden_layers, model.config.num_attention_heads
    key = "last_hidden_state" if which == "model" else "logits"
    with torch.no_grad():
        base = model(**inputs, output_attentions=True)
        with disable_heads(model, []):
            nothing = model(**inputs, output_attentions=True)
        with head_mask(model, torch.ones(n_layers, n_heads)):
            ones = model(**inputs, output_attentions=True)
    for out in (nothing, ones):
        assert torch.equal(out[key], base[key])
        for a, b in zip(out.attentions, base.attentions):
            assert torch.equal(a, b)


def test_implementation_is_switched_for_the_block_and_restored():
    model = tiny_classifier(seed=7)
    assert model.config._attn_implementation == "eager"
    with disable_heads(model, [(0, 0)]):
        assert model.config._attn_implementation == ATTN_IMPLEMENTATION
        with head_mask(model, torch.ones(3, 4)):
            assert model.config._attn_implementation == ATTN_IMPLEMENTATION
        assert model.config._attn_implementation == ATTN_IMPLEMENTATION
    assert model.config._attn_implementation == "eager"


def test_nested_blocks_compose():
    model = tiny_classifier(seed=8)
    inputs = padded_batch([7, 5], seed=6)
    with torch.no_grad():
        with disable_heads(model, [(0, 1)]), disable_heads(model, [(2, 3)]):
            nested = model(**inputs).logits
        with disable_heads(model, [(0, 1), (2, 3)]):
            joint = model(**inputs).logits
        xa, xb = torch.rand(3, 4), torch.rand(3, 4)
        with head_mask(model, xa), head_mask(model, xb):
            nested_mask = model(**inputs).logits
        with head_mask(model, xa * xb):
            joint_mask = model(**inputs).logits
    assert torch.equal(nested, joint)
    assert torch.allclose(nested_mask, joint_mask, atol=1e-6)


def test_disable_layers_is_all_heads_of_the_layer():
    model = tiny_classifier(seed=9)
    inputs = padded_batch([6, 3], seed=7)
    with torch.no_grad():
        with disable_layers(model, [1]):
            a = model(**inputs).logits
        with disable_heads(model, {1: [0, 1, 2, 3]}):
            b = model(**inputs).logits
        with disable_heads(model, ["2-1", "2-2", "2-3", "2-4"]):
            c = model(**inputs).logits
    assert torch.equal(a, b) and torch.equal(a, c)


def test_mask_gradient_matches_finite_differences():
    model = tiny_classifier(seed=10, dtype=torch.float64)
    inputs = padded_batch([7, 4, 6], seed=8)
    labels = torch.tensor([0, 2, 1])
    g = torch.Generator().manual_seed(0)
    xi0 = (0.5 + torch.rand(3, 4, generator=g)).to(torch.float64)

    def loss(xi):
        with head_mask(model, xi):
            return torch.nn.functional.cross_entropy(model(**inputs).logits, labels)

    xi = xi0.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss(xi), xi)
    eps = 1e-6
    numeric = torch.zeros_like(xi0)
    with torch.no_grad():
        for l in range(3):
            for h in range(4):
                up, down = xi0.clone(), xi0.clone()
                up[l, h] += eps
                down[l, h] -= eps
                numeric[l, h] = (loss(up) - loss(down)) / (2 * eps)
    assert grad.abs().max() > 1e-4  # a gradient worth comparing
    assert torch.allclose(grad, numeric, rtol=1e-5, atol=1e-9)


def test_stacked_masks_in_one_forward_match_separate_forwards():
    model = tiny_classifier(seed=11)
    inputs = padded_batch([8, 3, 5], seed=9)
    g = torch.Generator().manual_seed(1)
    masks = torch.rand(4, 3, 4, generator=g)
    disabled = torch.rand(4, 3, 4, generator=g) > 0.6
    with torch.no_grad():
        with head_mask(model, masks):
            stacked = model(**tile_batch(inputs, 4)).logits.reshape(4, 3, -1)
        with disable_heads(model, disabled):
            stacked_d = model(**tile_batch(inputs, 4)).logits.reshape(4, 3, -1)
        for m in range(4):
            with head_mask(model, masks[m]):
                assert torch.allclose(stacked[m], model(**inputs).logits, atol=1e-6)
            with disable_heads(model, disabled[m]):
                assert torch.allclose(stacked_d[m], model(**inputs).logits, atol=1e-6)


def test_returned_maps_are_the_weights_used_under_a_mask():
    model = tiny_classifier(seed=12)
    inputs = padded_batch([5, 4], seed=10)
    xi = torch.ones(3, 4)
    xi[0, 2] = 0.0
    xi[0, 3] = 0.5
    with torch.no_grad():
        base = model(**inputs, output_attentions=True).attentions[0]
        with head_mask(model, xi):
            got = model(**inputs, output_attentions=True).attentions[0]
    assert torch.equal(got[:, 2], torch.zeros_like(got[:, 2]))
    assert torch.allclose(got[:, 3], 0.5 * base[:, 3])
    assert torch.equal(got[:, :2], base[:, :2])


def test_uniform_weights_without_mask_and_with_bool_mask():
    u = uniform_from_mask(None, (1, 2, 3, 4), torch.float32)
    assert torch.equal(u, torch.full((1, 1, 3, 4), 0.25))
    allowed = torch.tensor([True, True, False])[None, None, None, :].expand(1, 1, 2, 3)
    u = uniform_from_mask(allowed, (1, 2, 2, 3), torch.float32)
    assert torch.equal(u[0, 0, 0], torch.tensor([0.5, 0.5, 0.0]))


def test_bad_interventions_name_the_problem():
    model = tiny_classifier(seed=13)
    inputs = padded_batch([4, 4], seed=11)
    with pytest.raises(ParameterError, match="shape"):
        with head_mask(model, torch.ones(2, 4)):
            pass
    with pytest.raises(ParameterError, match="outside"):
        with disable_heads(model, [(3, 0)]):
            pass
    with pytest.raises(ParameterError, match="tile"):
        with torch.no_grad(), head_mask(model, torch.ones(3, 3, 4)):
            model(**inputs)
    assert model.config._attn_implementation == "eager"  # restored after the error


def test_numpy_masks_are_accepted():
    model = tiny_classifier(seed=14)
    inputs = padded_batch([6, 6], seed=12)
    xi = np.ones((3, 4))
    xi[1, 1] = 0
    with torch.no_grad():
        with head_mask(model, xi):
            a = model(**inputs).logits
        with head_mask(model, torch.as_tensor(xi, dtype=torch.float32)):
            b = model(**inputs).logits
    assert torch.equal(a, b)


def test_a_loaded_model_is_accepted(tiny_bert):
    inputs = padded_batch([5, 3], seed=13, vocab=1000)
    with torch.no_grad():
        with disable_heads(tiny_bert, [(1, 2)]):
            via_loaded = tiny_bert.model(**inputs, output_attentions=True).attentions[1]
        with disable_heads(tiny_bert.model, [(1, 2)]):
            via_module = tiny_bert.model(**inputs, output_attentions=True).attentions[1]
    assert torch.equal(via_loaded, via_module)
    assert torch.equal(via_loaded[1, 2, 0], torch.tensor([1 / 3, 1 / 3, 1 / 3, 0.0, 0.0]))
