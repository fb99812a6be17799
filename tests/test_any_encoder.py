"""Chapters 1-2's engine on every encoder family: loading by path, the tokenizer's own framing of inputs, the
family's MLM head, and a clear refusal of anything outside the family table (tiny planted models,
:mod:`tests.tiny_families`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from attnbook.core import cache
from attnbook.engine.extract import collect_maps
from attnbook.engine.families import UnsupportedModelError
from attnbook.engine.gradients import _load_pretrained_head, mask_tokens
from attnbook.engine.inputs import encode_words, template
from attnbook.engine.models import has_mlm_head, load_encoder
from attnbook.studies.clark import surface
from attnbook.studies.clark.segments import encode_pair
from tiny_families import FAMILIES, plant

TEXT_A = "The cat sat on the mat, and the dog slept."
TEXT_B = "A bird sang in the tree."


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield {f: plant(f, root / f, "masked-lm") for f in FAMILIES}
    torch.set_num_threads(threads)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_pair_is_framed_as_the_tokenizer_frames_it(planted, family):
    """Regression: segments were built as [CLS] a [SEP] b [SEP] with segment ids 0/1 whatever the model, so a
    RoBERTa (one token type) failed with "IndexError: index out of range in self" in its embedding layer."""
    loaded = load_encoder(str(planted[family]))
    tok = loaded.tokenizer
    enc = encode_pair(tok, TEXT_A, TEXT_B, max_tokens=100)
    own = tok(TEXT_A, TEXT_B)
    assert enc.input_ids == list(own["input_ids"])
    assert enc.tokens[0] == tok.cls_token and enc.tokens[-1] == tok.sep_token
    with torch.no_grad():
        out = loaded.model(input_ids=torch.tensor([enc.input_ids]), token_type_ids=torch.tensor([enc.token_type_ids]),
                           output_attentions=True)
    assert len(out.attentions) == loaded.n_layers and loaded.describe()["family"] == loaded.family.label


def test_roberta_pairs_have_a_double_separator(planted):
    tok = load_encoder(str(planted["roberta"])).tokenizer
    t = template(tok)
    assert (t.before, t.between, t.after) == (("<s>",), ("</s>", "</s>"), ("</s>",))
    enc = encode_words(tok, ["the", "cat"], ["a", "dog"], max_tokens=32)
    specials = [enc.words[i] for i in enc.meta["special_words"]]
    assert [[enc.tokens[p] for p in run] for run in specials] == [["<s>"], ["</s>", "</s>"], ["</s>"]]
    assert sorted(p for w in enc.words for p in w) == list(range(len(enc.tokens)))  # every piece in one word


@pytest.mark.parametrize("family", FAMILIES)
def test_surface_statistics_run_and_find_the_families_special_tokens(planted, family):
    loaded = load_encoder(str(planted[family]))
    segments = [encode_pair(loaded.tokenizer, TEXT_A, TEXT_B, 64), encode_pair(loaded.tokenizer, TEXT_B, TEXT_A, 64)]
    with cache.disabled():
        stats = surface.surface_statistics(loaded, segments, batch_size=2, progress=False)
    assert stats["cls"].shape == (loaded.n_layers, loaded.n_heads)
    assert np.all(stats["cls"] > 0) and np.all(stats["sep"] > 0)  # the start and separator tokens were found
    punct = surface.punct_ids(loaded.tokenizer)
    assert punct and loaded.tokenizer.unk_token_id not in punct
    # the slow reference finds the same roles by the tokenizer's pieces (it matched BERT's '[SEP]' by name before)
    ref = surface.surface_stats_reference(collect_maps(loaded, segments), [e.tokens for e in segments],
                                          loaded.tokenizer)
    for name in surface.STAT_NAMES:
        np.testing.assert_allclose(stats[name], ref[name], rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_checkpoints_own_mlm_head_is_used(planted, family):
    """Every family's masked-LM checkpoint is recognised as having a head, and the head applied to the analysed
    encoder's hidden states gives the checkpoint's own logits."""
    from transformers import AutoModelForMaskedLM

    path = planted[family]
    assert has_mlm_head(path)
    loaded = load_encoder(str(path))
    head = _load_pretrained_head(loaded)
    ids = torch.tensor([loaded.tokenizer(TEXT_A)["input_ids"]])
    mlm = AutoModelForMaskedLM.from_pretrained(str(path), attn_implementation="eager").eval()
    with torch.no_grad():
        ours = head(loaded.model(input_ids=ids).last_hidden_state)
        theirs = mlm(input_ids=ids).logits
    torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_the_embedded_model_has_no_mlm_head_and_random_pieces_skip_berts_unused_slots():
    loaded = load_encoder("embedded")
    assert loaded.family.name == "bert" and not has_mlm_head(loaded.path)
    enc = encode_pair(loaded.tokenizer, TEXT_A * 3, TEXT_B * 3, 64)
    ids, _ = mask_tokens(enc, loaded.tokenizer, np.random.default_rng(0), rate=0.9)
    changed = [i for i, j in zip(ids, enc.input_ids) if i != j and i != loaded.tokenizer.mask_token_id]
    assert changed and min(changed) >= 1000


@pytest.mark.parametrize("family", ["roberta", "modernbert"])
def test_random_pieces_of_other_vocabularies_are_never_special(planted, family):
    tok = load_encoder(str(planted[family])).tokenizer
    enc = encode_pair(tok, TEXT_A * 3, TEXT_B * 3, 120)
    ids, _ = mask_tokens(enc, tok, np.random.default_rng(0), rate=0.9)
    assert not set(ids) - set(enc.input_ids) & set(tok.all_special_ids) - {tok.mask_token_id}
    assert all(0 <= i < tok.vocab_size for i in ids)


def test_a_model_outside_the_family_table_is_refused_before_its_weights_load(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=50)).save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not weights")  # loading them would fail differently
    with pytest.raises(UnsupportedModelError) as err:
        load_encoder(str(tmp_path))
    message = str(err.value)
    assert "gpt2" in message and "RoBERTa" in message and "ModernBERT" in message and "families.py" in message


@pytest.mark.parametrize("family", ["bert", "roberta", "deberta-v2", "modernbert"])
def test_the_public_heads_api_on_a_planted_model(planted, family):
    """attnbook.heads: maps whose rows sum to one, masking that changes the output and is undone on exit,
    importance of every head, pruning that shrinks the model."""
    from attnbook import heads

    model = heads.load(str(planted[family]))
    assert heads.family(model).name == family
    tokens, attn = heads.attention(model, TEXT_A, TEXT_B)
    assert attn.shape == (model.n_layers, model.n_heads, len(tokens), len(tokens))
    np.testing.assert_allclose(attn.sum(-1), 1.0, atol=1e-5)
    enc = model.tokenizer(TEXT_A, return_tensors="pt")
    with torch.no_grad():
        before = model.model(**enc).last_hidden_state
        with heads.masked(model, ["1-1", (2, 3)]):
            during = model.model(**enc).last_hidden_state
        after = model.model(**enc).last_hidden_state
    assert not torch.allclose(before, during) and torch.equal(before, after)
    I = heads.importance(model, [enc], loss_fn=lambda m, b: m(**b).last_hidden_state.pow(2).mean())
    assert I.shape == (model.n_layers, model.n_heads) and np.all(I >= 0) and I.sum() > 0
    n_params = sum(p.numel() for p in model.model.parameters())
    heads.prune(model, ["1-1"])
    assert sum(p.numel() for p in model.model.parameters()) < n_params


def test_the_short_name_mpnet_loads_the_fetched_model(planted, monkeypatch):
    """`-p model=mpnet` resolves through `attnbook fetch model mpnet` (checksum-verified, cached), not the hub."""
    from attnbook.data import models_fetch

    asked = []
    monkeypatch.setattr(models_fetch, "fetch_model", lambda name, **kw: asked.append(name) or planted["mpnet"])
    loaded = load_encoder("mpnet")
    assert asked == ["mpnet"] and loaded.name == "all-mpnet-base-v2" and loaded.family.name == "mpnet"


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_each_chapter_names_the_models_own_special_tokens(planted, family):
    loaded = load_encoder(str(planted[family]), device="cpu")
    line = loaded.headline()
    assert line.startswith(f"Model **{loaded.name}** ({loaded.family.label}): 3 layers x 4 heads.")
    assert ("`<s>` plays the role the papers give `[CLS]`" in line) == (family == "roberta")
    notebooks = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("0[1-8]_*.ipynb"))
    assert all(".headline()" in nb.read_text() for nb in notebooks)  # every chapter states its model this way
