"""The engine side of Clark §3.2: |dL/d attention| is the true gradient; masking and the MLM head behave;
the gradient loop hands every batch to its reducers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.engine.gradients import (
    MLMHead,
    fit_mlm_head,
    mask_tokens,
    masked_copies,
    per_segment_mlm_loss,
    stream_attention_gradients,
)
from attnbook.studies.clark.segments import encode_pair

TEXTS = [("The cat sat on the mat.", "It was happy."), ("Dogs bark, cats purr.", "Birds sing at dawn."),
         ("A short one.", "And another, longer, sentence here.")] * 3


def test_masking_rate_and_specials(tokenizer):
    ex = encode_pair(tokenizer, "word " * 40, "thing " * 40, max_tokens=64)
    ids, targets = mask_tokens(ex, tokenizer, np.random.default_rng(0))
    chosen = [i for i, t in enumerate(targets) if t != -100]
    assert len(chosen) == round(0.15 * (len(ex) - 3))
    assert all(ex.tokens[i] not in ("[CLS]", "[SEP]") for i in chosen)
    assert all(targets[i] == ex.input_ids[i] for i in chosen)
    assert all(ids[i] == ex.input_ids[i] for i in range(len(ex)) if i not in chosen)


def test_gradient_matches_finite_difference(tokenizer):
    """Perturbing one attention weight inside the forward pass changes the loss as the gradient says."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=32, attn_implementation="eager")
    model = BertModel(cfg).double().eval()
    head = MLMHead(model.embeddings.word_embeddings, 16).double()
    ex = encode_pair(tokenizer, "the cat sat", "on the mat", max_tokens=16)
    ids = torch.tensor([ex.input_ids])
    targets = torch.full_like(ids, -100)
    targets[0, 2] = ids[0, 2]
    ids = ids.clone()
    ids[0, 2] = tokenizer.mask_token_id
    out = model(input_ids=ids, output_attentions=True)
    loss = per_segment_mlm_loss(head(out.last_hidden_state), targets)
    grads = torch.autograd.grad(loss, out.attentions)

    import transformers.models.bert.modeling_bert as mb

    layer, h, q, k, eps = 1, 1, 3, 1, 1e-6
    original = mb.eager_attention_forward

    def perturbed(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
        if module.layer_idx != layer:
            return original(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kw)
        w = torch.softmax(torch.matmul(query, key.transpose(2, 3)) * scaling, dim=-1)
        w = w.clone()
        w[0, h, q, k] += eps
        return torch.matmul(w, value).transpose(1, 2).contiguous(), w

    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    ALL_ATTENTION_FUNCTIONS["attnbook_fd_test"] = perturbed
    model.set_attn_implementation("attnbook_fd_test")
    with torch.no_grad():
        loss_eps = per_segment_mlm_loss(head(model(input_ids=ids).last_hidden_state), targets)
    model.set_attn_implementation("eager")
    fd = (loss_eps - loss).item() / eps
    assert fd == pytest.approx(grads[layer][0, h, q, k].item(), rel=1e-4, abs=1e-8)


def test_fitted_head_learns(tiny_bert):
    tok = tiny_bert.tokenizer
    exs = [encode_pair(tok, a, b, max_tokens=24) for a, b in TEXTS]
    fit0 = fit_mlm_head(tiny_bert, exs, exs, steps=0, batch_size=4, progress=False)
    fit = fit_mlm_head(tiny_bert, exs, exs, steps=60, batch_size=4, lr=1e-2, progress=False)
    assert fit.heldout_loss < fit0.heldout_loss  # training reduced the loss
    assert all(p.requires_grad for p in tiny_bert.model.parameters())  # frozen only while fitting


def test_model_without_mlm_head_and_no_fitting_is_refused(tiny_bert):
    from attnbook.engine.gradients import get_mlm_head

    exs = [encode_pair(tiny_bert.tokenizer, a, b, max_tokens=24) for a, b in TEXTS[:2]]
    with pytest.raises(ValueError, match="has no MLM head and mlm_fit_steps=0"):
        get_mlm_head(tiny_bert, exs, exs, steps=0, batch_size=2, progress=False)


class Recorder:
    """A gradient reducer that keeps what it is given."""

    def __init__(self):
        self.calls = []

    def update(self, grads, batch, targets):
        self.calls.append((grads.clone(), batch, targets.clone()))

    def result(self):
        return self.calls


def test_gradient_loop_feeds_every_batch_to_every_reducer(tiny_bert):
    tok = tiny_bert.tokenizer
    exs = [encode_pair(tok, a, b, max_tokens=24) for a, b in TEXTS[:5]]
    head = MLMHead(tiny_bert.model.embeddings.word_embeddings, tiny_bert.model.config.hidden_size)
    a, b = Recorder(), Recorder()
    out = stream_attention_gradients(tiny_bert, head, exs, {"a": a, "b": b}, batch_size=2, seed=3, progress=False)
    assert set(out) == {"a", "b"} and len(out["a"]) == 3 and len(out["b"]) == 3
    _, targets = masked_copies(exs, tok, 3)  # the same seeded masking
    seen = sorted(i for _, batch, _ in out["a"] for i in batch.index)
    assert seen == list(range(5))
    for grads, batch, tgt in out["a"]:
        assert grads.shape[:3] == (batch.size, tiny_bert.n_layers, tiny_bert.n_heads)
        assert grads.shape[3] == grads.shape[4] == batch.input_ids.shape[1]
        for row, i in enumerate(batch.index):
            assert tgt[row, : len(targets[i])].tolist() == targets[i]
        assert torch.isfinite(grads).all() and grads.abs().sum() > 0
    (only,) = stream_attention_gradients(tiny_bert, head, exs, [Recorder()], batch_size=5, progress=False)
    assert len(only) == 1
