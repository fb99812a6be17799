"""The family table and the head machinery (:mod:`attnbook.engine.families`; the one engine the chapters and
``attnbook.heads`` share: :mod:`attnbook.engine.interventions`, :mod:`attnbook.engine.pruning`,
:mod:`attnbook.engine.mask_gradients`, :mod:`attnbook.engine.extract`) on
a tiny random model of every supported encoder family (:mod:`tiny_families`), against independent references.

The references never use the hooks: masking = zeroing the head's input columns of the output projection;
disabling = zeroing the head's query and key weights, so its scores are all 0 and its softmax is uniform over the
keys the model's own mask allows (MPNet: also the head's column of the shared relative-position bias, so the
head is disabled in every layer; ALBERT: the shared layer, so at every depth); importance = central finite
differences of the loss in the gate; pruning = the masked model. Module paths below are written from
transformers' modeling code, independently of the family table. Models run in float64 so comparisons are tight.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from tiny_families import FAMILIES, SENTENCES, one_thread, plant, planted  # noqa: F401  (fixtures)

from attnbook.engine import families as fam_mod
from attnbook.engine.families import UnsupportedModelError, base_model, describe, family_of, sites
from attnbook.engine.extract import attention_maps
from attnbook.engine.heads import disabled, masked
from attnbook.engine.interventions import head_mask as gated
from attnbook.engine.mask_gradients import batch_gradients as head_importance
from attnbook.engine.pruning import kept_heads
from attnbook.engine.pruning import prune_heads as prune

L, H, D = 3, 4, 8  # tiny models: layers, heads, head size

# family: (layer path in the MLM model, query, key, output projection); "Wqkv:q" = the query block of a fused qkv
PATHS = {
    "bert": ("bert.encoder.layer.{l}", "attention.self.query", "attention.self.key", "attention.output.dense"),
    "roberta": ("roberta.encoder.layer.{l}", "attention.self.query", "attention.self.key",
                "attention.output.dense"),
    "xlm-roberta": ("roberta.encoder.layer.{l}", "attention.self.query", "attention.self.key",
                    "attention.output.dense"),
    "distilbert": ("distilbert.transformer.layer.{l}", "attention.q_lin", "attention.k_lin", "attention.out_lin"),
    "albert": ("albert.encoder.albert_layer_groups.0.albert_layers.0", "attention.query", "attention.key",
               "attention.dense"),
    "electra": ("electra.encoder.layer.{l}", "attention.self.query", "attention.self.key", "attention.output.dense"),
    "mpnet": ("mpnet.encoder.layer.{l}", "attention.attn.q", "attention.attn.k", "attention.attn.o"),
    "deberta-v2": ("deberta.encoder.layer.{l}", "attention.self.query_proj", "attention.self.key_proj",
                   "attention.output.dense"),
    "modernbert": ("model.layers.{l}", "attn.Wqkv:q", "attn.Wqkv:k", "attn.Wo"),
}


def heads_for(family: str) -> list[tuple[int, int]]:
    """Heads a weight-editing reference can switch off: head 2 at every depth, plus head 4 of layer 1 where
    layers have their own weights and no shared per-head bias."""
    heads = [(layer, 1) for layer in range(L)]
    return heads + ([] if family in ("albert", "mpnet") else [(0, 3)])


@pytest.fixture(scope="module", autouse=True)
def _one_thread(one_thread):
    yield


def load(folder, dtype=torch.float64, **kwargs):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForMaskedLM.from_pretrained(folder, **kwargs).to(dtype).eval()
    return model, tokenizer


# Eager ModernBERT in float64 gives NaN where a local window holds only padding (its softmax runs in float32 and
# the float64 mask value becomes -inf there), and the NaN then spreads through the padded keys: its attention
# maps are checked in float32.
def maps_dtype(family):
    return torch.float32 if family == "modernbert" else torch.float64


def encode(tokenizer, sentences=(SENTENCES[0], SENTENCES[13][:20], SENTENCES[7]), labels=False):
    enc = dict(tokenizer(list(sentences), padding=True, return_tensors="pt"))
    if labels:
        enc["labels"] = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
    return enc


def logits(model, enc):
    with torch.no_grad():
        return model(**enc).logits


def edit(model, family, layer, where, head, zero_bias=True):
    """Zero head ``head``'s rows of projection ``where`` ("q", "k") or its columns of the output projection ("o")."""
    path, q, k, o = PATHS[family]
    spec = {"q": q, "k": k, "o": o}[where]
    name, _, part = spec.partition(":")
    lin = model.get_submodule(f"{path.format(l=layer)}.{name}")
    block = {"": 0, "q": 0, "k": 1}[part] * H * D
    rows = slice(block + head * D, block + (head + 1) * D)
    with torch.no_grad():
        if where == "o":
            lin.weight[:, rows] = 0
        else:
            lin.weight[rows] = 0
            if zero_bias and lin.bias is not None:
                lin.bias[rows] = 0


def assert_close(a, b, atol=1e-9, equal_nan=False):
    torch.testing.assert_close(a, b, atol=atol, rtol=1e-7, equal_nan=equal_nan)


def mlm_loss(model, batch):
    """Masked-LM cross-entropy in the model's dtype (transformers' own loss upcasts to float32 only)."""
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    out = model(**inputs).logits
    return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), batch["labels"].reshape(-1),
                                             ignore_index=-100)


def n_hooks(model):
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


# ------------------------------------------------------------------------------------------------- the table
@pytest.mark.parametrize("family", FAMILIES)
def test_loads_and_family_found(family, planted):
    from transformers import AutoModel, AutoModelForSequenceClassification

    model, tokenizer = load(planted(family))
    fam = family_of(model)
    assert fam.name == family and family_of(model.config) is fam and family in fam_mod.SUPPORTED
    assert base_model(model) is getattr(model, model.base_model_prefix)
    base = AutoModel.from_pretrained(planted(family))
    assert family_of(base) is fam and base_model(base) is base and len(sites(base)) == L
    info = describe(model, tokenizer)
    assert (info["layers"], info["heads"], info["head_size"]) == (L, H, D)
    assert info["special_tokens"]["mask"]["token"] == tokenizer.mask_token
    assert info["special_tokens"]["starts"] == tokenizer.cls_token and info["last_head"] == "3-4"
    assert info["token_type_ids"] == (getattr(model.config, "type_vocab_size", 0) > 1)  # a segment embedding
    assert type(model).__name__ == fam.mlm_class and all(hasattr(model, a) for a in fam.mlm_head[:1])
    classifier = AutoModelForSequenceClassification.from_pretrained(planted(family, "classifier")).eval()
    assert type(classifier).__name__ == fam.classifier_class and family_of(classifier) is fam
    assert fam.pooling_of(classifier.config) == "first"
    with masked(classifier, [(0, 0)]):
        assert classifier(**encode(tokenizer)).logits.shape == (3, 3)
    if family == "modernbert":
        assert info["layer_kinds"] == ["global", "local", "global"] and info["window"] == 2
    if family == "electra":  # the discriminator (replaced-token detection head)
        from transformers import AutoModelForPreTraining

        disc = AutoModelForPreTraining.from_pretrained(planted(family, "discriminator")).eval()
        assert type(disc).__name__ == "ElectraForPreTraining" and family_of(disc) is fam
        enc = encode(tokenizer)
        with torch.no_grad(), masked(disc, [(0, 0)]):
            assert disc(**enc).logits.shape == enc["input_ids"].shape


# --------------------------------------------------------------------------------------------- attention maps
@pytest.mark.parametrize("family", FAMILIES)
def test_attention_maps_are_output_attentions(family, planted):
    dtype = maps_dtype(family)
    model, tokenizer = load(planted(family), dtype)
    reference, _ = load(planted(family), dtype, attn_implementation="eager")
    enc = encode(tokenizer)
    before = model.config._attn_implementation
    maps = attention_maps(model, **enc)
    assert model.config._attn_implementation == before  # restored
    with torch.no_grad():
        expected = torch.stack(reference(**enc, output_attentions=True).attentions)
    assert maps.shape == (L, 3, H, enc["input_ids"].shape[1], enc["input_ids"].shape[1])
    assert_close(maps, expected, atol=1e-9 if dtype == torch.float64 else 1e-6)
    valid = enc["attention_mask"].bool()
    assert torch.all(maps >= 0)
    for b in range(3):  # real queries: probabilities over real keys only (padding is on the right)
        n = int(valid[b].sum())
        assert_close(maps[:, b, :, :n, :n].sum(-1), torch.ones(L, H, n, dtype=maps.dtype), atol=1e-6)
        assert torch.all(maps[:, b, :, :n, n:] == 0)
    if family == "modernbert":  # local layers see keys within the window the table reports
        pos = torch.arange(maps.shape[-1])
        far = (pos[:, None] - pos[None, :]).abs() > model.config.sliding_window
        for b in range(3):  # real queries (a padded query whose window holds only padding sees every key)
            n = int(valid[b].sum())
            assert torch.all(maps[1, b, :, :n][..., far[:n]] == 0) and torch.any(maps[0, b, :, :n][..., far[:n]] > 0)


# ------------------------------------------------------------------------------------------ masking, disabling
@pytest.mark.parametrize("family", FAMILIES)
def test_masking_equals_zeroed_output_columns(family, planted):
    model, tokenizer = load(planted(family))
    enc = encode(tokenizer)
    heads = heads_for(family)
    reference = copy.deepcopy(model)
    for layer, head in heads:
        edit(reference, family, layer, "o", head)
    hooks = n_hooks(model)
    with masked(model, heads):
        got = logits(model, enc)
    assert n_hooks(model) == hooks
    assert_close(got, logits(reference, enc))
    assert not torch.allclose(got, logits(model, enc), atol=1e-4)  # the heads mattered
    labels = [f"{layer + 1}-{head + 1}" for layer, head in heads]  # reader's 1-based labels mean the same
    with masked(model, labels):
        assert_close(logits(model, enc), got)
    with pytest.raises(RuntimeError), masked(model, heads):  # hooks go even when the body raises
        raise RuntimeError("boom")
    assert n_hooks(model) == hooks


def test_albert_masks_one_depth_of_a_shared_layer(planted):
    """Masking ALBERT head 1-4 acts at depth 1 only: compare with an unrolled copy (one layer group per depth,
    same weights) whose depth-1 output columns are zeroed."""
    from transformers import AlbertForMaskedLM

    model, tokenizer = load(planted("albert"))
    enc = encode(tokenizer)
    config = copy.deepcopy(model.config)
    config.num_hidden_groups = L
    unrolled = AlbertForMaskedLM(config).double().eval()
    state = model.state_dict()
    for key, value in list(state.items()):
        if ".albert_layer_groups.0." in key:
            for g in range(1, L):
                state[key.replace(".albert_layer_groups.0.", f".albert_layer_groups.{g}.")] = value
    unrolled.load_state_dict(state)
    assert_close(logits(unrolled, enc), logits(model, enc))
    with torch.no_grad():
        unrolled.albert.encoder.albert_layer_groups[0].albert_layers[0].attention.dense.weight[:, 3 * D:] = 0
    with masked(model, [(0, 3)]):
        assert_close(logits(model, enc), logits(unrolled, enc))
    with pytest.raises(Exception, match="all of them at once"):
        prune(copy.deepcopy(model), [(0, 3)])


@pytest.mark.parametrize("family", FAMILIES)
def test_disabling_equals_uniform_attention(family, planted):
    model, tokenizer = load(planted(family))
    enc = encode(tokenizer)
    heads = heads_for(family)
    reference = copy.deepcopy(model)
    for layer, head in heads:
        edit(reference, family, layer, "q", head)
        edit(reference, family, layer, "k", head)
    if family == "mpnet":
        with torch.no_grad():
            reference.mpnet.encoder.relative_attention_bias.weight[:, 1] = 0
    valid = enc["attention_mask"].bool()  # padded query rows may differ (DeBERTa masks them), real ones not
    hooks = n_hooks(model)
    with disabled(model, heads):
        got = logits(model, enc)
    assert n_hooks(model) == hooks
    assert_close(got[valid], logits(reference, enc)[valid], atol=1e-8)
    assert not torch.allclose(got[valid], logits(model, enc)[valid], atol=1e-4)
    with masked(model, heads):
        assert not torch.allclose(got[valid], logits(model, enc)[valid], atol=1e-4)  # disabling is not masking


# ------------------------------------------------------------------------------------------------ importance
@pytest.mark.parametrize("family", FAMILIES)
def test_importance_equals_finite_differences(family, planted):
    model, tokenizer = load(planted(family))
    batches = [encode(tokenizer, SENTENCES[0:2], labels=True), encode(tokenizer, SENTENCES[5:8], labels=True)]
    importance = head_importance(model, batches, mlm_loss)
    assert importance.shape == (L, H) and np.all(importance > 0)
    assert all(p.grad is None for p in model.parameters())
    eps = 1e-3  # ModernBERT has float32-level noise even in float64 (FD error is O(eps^2) ~ 1e-6 here)
    fd = np.zeros((L, H))
    with torch.no_grad():
        for layer in range(L):
            for head in range(H):
                for batch in batches:
                    loss = []
                    for sign in (1, -1):
                        gate = torch.ones(L, H, dtype=torch.float64)
                        gate[layer, head] += sign * eps
                        with gated(model, gate):
                            loss.append(mlm_loss(model, batch).item())
                    fd[layer, head] += abs(loss[0] - loss[1]) / (2 * eps)
    np.testing.assert_allclose(importance, fd, rtol=1e-3, atol=1e-6 * fd.max())


# --------------------------------------------------------------------------------------------------- pruning
def _check_pruned(family, model, tokenizer, heads, extra=None):
    enc = encode(tokenizer)
    with masked(model, heads):
        expected = logits(model, enc)
    pruned = prune(copy.deepcopy(model), heads)
    assert_close(logits(pruned, enc), expected)
    kept = kept_heads(pruned)
    for site in sites(pruned):
        n = len(kept[site.depth])
        assert kept[site.depth] == [h for h in range(H) if (site.depth, h) not in set(heads)]
        slots = max(n, 1)  # a layer without heads keeps one inert placeholder
        if site.qkv is not None:
            assert site.qkv.out_features == 3 * slots * D
        else:
            assert site.query.out_features == site.key.out_features == site.value.out_features == slots * D
        assert site.output.in_features == slots * D and site.output.out_features == H * D
    # original numbering survives: masking more heads of the pruned model = masking all of them in the original
    if extra:
        with masked(pruned, extra):
            got = logits(pruned, enc)
        with masked(model, list(heads) + list(extra)):
            assert_close(got, logits(model, enc))
    maps = attention_maps(pruned.to(maps_dtype(family)), **enc)
    n = int(enc["attention_mask"][0].sum())
    for layer in range(L):
        for head in range(H):  # pruned heads are NaN, kept heads are maps (on real tokens)
            assert bool(torch.isnan(maps[layer, 0, head, :n, :n]).all()) == ((layer, head) in set(heads))
    importance = head_importance(pruned.double(), [encode(tokenizer, labels=True)], mlm_loss)
    assert all(np.isnan(importance[layer, head]) for layer, head in heads)
    return pruned


@pytest.mark.parametrize("family", FAMILIES)
def test_pruning_equals_masking(family, planted):
    model, tokenizer = load(planted(family))
    if family == "albert":  # shared weights: a head goes at every depth or not at all
        heads = [(layer, 1) for layer in range(L)]
    else:  # one head in layers 1 and 3, every head of layer 2
        heads = [(0, 1), (2, 1)] + [(1, h) for h in range(H)]
    _check_pruned(family, model, tokenizer, heads, extra=[(0, 2), (2, 3)])


def test_pruning_deberta_with_separate_position_projections(planted):
    """DeBERTa without ``share_att_key`` has per-head positional projections; pruning shrinks them too."""
    model, tokenizer = load(planted("deberta-v2", share_att_key=False))
    attn = model.deberta.encoder.layer[0].attention.self
    assert attn.pos_key_proj.out_features == H * D
    pruned = _check_pruned("deberta-v2", model, tokenizer, [(0, 1), (0, 2), (2, 0)])
    attn = pruned.deberta.encoder.layer[0].attention.self
    assert attn.pos_key_proj.out_features == attn.pos_query_proj.out_features == 2 * D
    assert attn.num_attention_heads == 2


# ----------------------------------------------------------------------------------------------- unsupported
def test_unsupported_models_name_the_families():
    from transformers import BertConfig, GPT2Config, GPT2LMHeadModel, T5Config

    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=1, n_head=2))
    with pytest.raises(UnsupportedModelError, match="decoder") as info:
        family_of(gpt2)
    message = str(info.value)
    assert all(label in message for label in ("BERT", "RoBERTa", "ALBERT", "ModernBERT", "DeBERTa"))
    assert "attnbook/engine/families.py" in message and "Family" in message
    with pytest.raises(UnsupportedModelError, match="encoder-decoder"):
        family_of(T5Config(vocab_size=50, d_model=16, num_layers=1, num_heads=2))
    with pytest.raises(UnsupportedModelError, match="decoder"):
        family_of(BertConfig(is_decoder=True))
    with pytest.raises(UnsupportedModelError):
        masked(gpt2, [(0, 0)]).__enter__()
