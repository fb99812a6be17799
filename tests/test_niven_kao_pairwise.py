"""The pairwise BERT scorer of Niven & Kao: inputs, softmax over two warrants, cached lower states, training."""
from __future__ import annotations


import numpy as np
import pytest

from attnbook.core import cache
import torch

from arct_items import planted_cue_items
from attnbook.core.errors import ParameterError
from attnbook.data.arct import ArctItem
from attnbook.engine.layers import first_query_only
from attnbook.engine import pairwise as S
from attnbook.studies.niven_kao import pairwise as M
from conftest import make_tiny_bert


def item(i, w0, w1, label, claim="Cats are good pets", reason="they sleep"):
    return ArctItem(id=f"id{i}", warrant0=w0, warrant1=w1, label=label, reason=reason, claim=claim)


def random_pairs(batch=3, length=7, seed=0, vocab=(1000, 2000)):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(*vocab, (batch, 2, length), generator=g)
    mask = torch.ones_like(ids)
    mask[0, 1, -2:] = 0  # one padded sequence
    types = torch.zeros_like(ids)
    types[..., length // 2 :] = 1
    return ids, mask, types


@pytest.fixture
def scorer(tokenizer):
    torch.manual_seed(0)
    model = S.PairwiseScorer(make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=1))
    return model.eval()


def test_softmax_over_two_warrants(scorer):
    ids, mask, types = random_pairs()
    p = scorer.probabilities(ids, mask, types)
    assert p.shape == (3, 2)
    assert torch.allclose(p.sum(-1), torch.ones(3), atol=1e-6)
    assert not torch.allclose(p[:, 0], p[:, 1])  # the two warrants get different scores
    swapped = scorer.probabilities(ids.flip(1), mask.flip(1), types.flip(1))
    assert torch.allclose(swapped, p.flip(1), atol=1e-6)


def test_each_warrant_is_scored_independently(scorer):
    """z_j depends on pair j only: changing warrant 1 leaves z_0 unchanged (shared θ, §2)."""
    ids, mask, types = random_pairs()
    z = scorer(ids, mask, types)
    ids2 = ids.clone()
    ids2[:, 1, 1] = 1999
    z2 = scorer(ids2, mask, types)
    assert torch.allclose(z[:, 0], z2[:, 0], atol=1e-6) and not torch.allclose(z[:, 1], z2[:, 1])


def test_forward_matches_the_transformers_model(scorer):
    ids, mask, types = random_pairs()
    flat = [t.reshape(6, -1) for t in (ids, mask, types)]
    with torch.no_grad():
        ref = scorer.encoder(input_ids=flat[0], attention_mask=flat[1], token_type_ids=flat[2])
        hidden = scorer.lower(*flat, stop=scorer.n_layers)
        pooled = scorer._stack.run_from(scorer.n_layers, hidden, None)  # no layer left: the pooler alone
    assert torch.allclose(hidden, ref.last_hidden_state, atol=1e-5)
    assert torch.allclose(pooled, ref.pooler_output, atol=1e-5)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_last_layer_at_cls_only_equals_the_full_layer(scorer, attention):
    """score_hidden runs the last layer for [CLS] only (the engine's first_query_only): the same logits as the
    whole layer followed by the pooler, padded sequences included."""
    scorer.encoder.set_attn_implementation(attention)
    ids, mask, types = random_pairs()
    flat = [t.reshape(6, -1) for t in (ids, mask, types)]
    with torch.no_grad():
        ref = scorer.encoder(input_ids=flat[0], attention_mask=flat[1], token_type_ids=flat[2])
        want = scorer.classifier(ref.pooler_output).squeeze(-1)
        hidden = scorer.lower(*flat, stop=scorer.n_layers - 1)
        got = scorer.score_hidden(hidden, flat[1], start=scorer.n_layers - 1)
        layer, attn_mask = scorer.encoder.encoder.layer[-1], scorer._stack.mask(hidden, flat[1])
        cls = first_query_only(layer, hidden, attn_mask)
        full = layer(hidden, attn_mask)
    assert got.shape == (6,)
    assert torch.allclose(got, want, atol=1e-5)
    assert cls.shape == (6, 1, hidden.shape[-1])
    assert torch.allclose(cls[:, 0], full[:, 0], atol=1e-5)


def test_rejects_inputs_without_two_warrants(scorer):
    ids, mask, types = random_pairs()
    with pytest.raises(ValueError):
        scorer(ids[:, :1], mask[:, :1], types[:, :1])
    with pytest.raises(ParameterError):
        S.PairwiseScorer(scorer.encoder, trainable_layers=5)


def test_encode_pairs_layout(tokenizer):
    items = [item(0, "cats are clean", "cats are dirty", 0)]
    full = M.encode_pairs(tokenizer, items, "full", 40)
    toks = tokenizer.convert_ids_to_tokens(full.input_ids[1])
    sep = toks.index("[SEP]")
    assert toks[:5] == ["[CLS]", "cats", "are", "good", "pets"]  # claim first (authors' code)
    assert toks[sep - 1] == "." and "sleep" in toks[:sep]  # full stops added
    assert toks[sep + 1 :] == ["cats", "are", "dirty", ".", "[SEP]"]
    assert full.token_type_ids[1] == [0] * (sep + 1) + [1] * (len(toks) - sep - 1)
    only_w = M.encode_pairs(tokenizer, items, "W", 40)
    assert tokenizer.convert_ids_to_tokens(only_w.input_ids[0]) == ["[CLS]", "cats", "are", "clean", ".", "[SEP]"]
    rw = tokenizer.convert_ids_to_tokens(M.encode_pairs(tokenizer, items, "RW", 40).input_ids[0])
    cw = tokenizer.convert_ids_to_tokens(M.encode_pairs(tokenizer, items, "CW", 40).input_ids[0])
    assert "sleep" in rw and "pets" not in rw and "pets" in cw and "sleep" not in cw
    short = M.encode_pairs(tokenizer, items, "full", 10)
    assert max(short.lengths()) == 10 and short.n_truncated == 2
    with pytest.raises(ParameterError):
        M.encode_pairs(tokenizer, items, "CRW", 40)


@pytest.mark.parametrize("k", [0, 1])
def test_cached_lower_states_give_the_same_scores(tokenizer, k):
    encoder = make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=2)
    items = [item(i, f"warrant number {i} is fine", "a much longer other warrant text here", i % 2) for i in range(5)]
    enc = M.encode_pairs(tokenizer, items, "full", 40)
    model = S.PairwiseScorer(encoder, trainable_layers=k).eval()
    cached = M.cache_lower_states(model, enc)
    assert cached.start == 2 - k
    direct = M.predict_proba(model, enc)
    via_cache = M.predict_proba(model, cached)
    np.testing.assert_allclose(via_cache, direct, atol=2e-3)  # states are stored in float16
    assert np.allclose(direct.sum(1), 1.0)


def test_tiny_bert_learns_a_planted_cue(tokenizer):
    """A 2-layer random BERT fine-tuned on a toy set where "indeed" marks the correct warrant learns to use it."""
    torch.set_num_threads(1)
    train, dev, test = planted_cue_items(64, 0), planted_cue_items(16, 1), planted_cue_items(40, 2)
    encoder = make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=0)
    cfg = M.TrainConfig(epochs=6, lr=3e-3, batch_size=8, warmup=0.1, dropout=0.0, attn_implementation="eager")
    enc = {k: M.encode_pairs(tokenizer, v, "W", 24) for k, v in (("train", train), ("dev", dev), ("test", test))}
    before = M.accuracy_of(M.predict_proba(M.build_scorer(encoder, cfg, 0), enc["test"]), enc["test"].labels)
    run = M.train_pairwise(encoder, enc["train"], enc["dev"], cfg, seed=0)
    after = M.accuracy_of(M.predict_proba(run.model, enc["test"]), enc["test"].labels)
    assert after >= 0.9 > before
    assert 1 <= run.best_epoch <= 6 and len(run.history) == 6
    assert run.history[-1]["loss"] < run.history[0]["loss"]
    # the pretrained encoder given to train_pairwise is untouched (each seed starts from a copy)
    fresh = make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(encoder.state_dict().values(), fresh.state_dict().values()))


def test_short_runs_do_not_warm_up_for_a_rounded_away_share(tokenizer):
    """Regression: with 10% warm-up of 4 updates (0 after rounding) the pairwise BERT's learning rate
    decays from its first update; its own schedule used to hold the full rate for a second update."""
    items = planted_cue_items(16, 4)
    encoder = make_tiny_bert(tokenizer, n_layers=1, n_heads=2, hidden=16, seed=0)
    cfg = M.TrainConfig(epochs=2, lr=1e-3, batch_size=8, warmup=0.1, dropout=0.0, attn_implementation="eager")
    enc = M.encode_pairs(tokenizer, items, "W", 24)
    run = M.train_pairwise(encoder, enc, None, cfg, seed=0)
    assert run.lrs == pytest.approx([1e-3, 0.75e-3, 0.5e-3, 0.25e-3])


def test_run_seeds_rows(tokenizer):
    from attnbook.engine.models import wrap_model

    loaded = wrap_model(make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=0), tokenizer, "tiny")
    items = planted_cue_items(12, 3)
    cfg = M.TrainConfig(epochs=1, lr=1e-3, batch_size=4, trainable_layers=1)
    df = M.run_seeds(loaded, items, items[:4], {"test": items[4:], "again": items[:6]}, inputs="CW",
                     seeds=[0, 1], cfg=cfg, max_length=32)
    assert list(df["seed"]) == [0, 1] and set(df["inputs"]) == {"CW"}
    for col in ("dev_accuracy", "test_accuracy", "again_accuracy", "train_accuracy"):
        assert df[col].between(0, 1).all()
    assert all(p.requires_grad for p in loaded.model.parameters())  # the frozen view was undone


def test_run_seeds_computes_once(tokenizer, monkeypatch):
    from attnbook.engine.models import wrap_model

    loaded = wrap_model(make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=0), tokenizer, "tiny")
    items = planted_cue_items(12, 5)
    cfg = M.TrainConfig(epochs=1, lr=1e-3, batch_size=4, trainable_layers=1)
    kwargs = dict(inputs="W", seeds=[0], cfg=cfg, max_length=32)
    first = M.run_seeds(loaded, items, items[:4], {"test": items[4:]}, **kwargs)
    assert list(first.columns) == ["inputs", "seed", "best_epoch", "train_accuracy", "dev_accuracy", "train_seconds",
                                   "test_accuracy"]
    assert (first["train_seconds"] >= 0).all()
    monkeypatch.setattr(M, "_seed_row", lambda **k: pytest.fail("recomputed a cached run"))
    again = M.run_seeds(loaded, items, items[:4], {"test": items[4:]}, **kwargs)
    assert again.equals(first)
    with pytest.raises(pytest.fail.Exception):  # other data: another key
        M.run_seeds(loaded, items, items[:5], {"test": items[4:]}, **kwargs)


def test_summarize():
    s = M.summarize([0.5, 0.7, 0.6, 0.9])
    assert s == {"mean": pytest.approx(0.675), "std": pytest.approx(np.std([0.5, 0.7, 0.6, 0.9])),
                 "median": pytest.approx(0.65), "max": 0.9, "n": 4}
    assert M.accuracy_of(np.array([[0.6, 0.4], [0.3, 0.7], [0.5, 0.5]]), np.array([0, 0, 0])) == pytest.approx(2 / 3)


def test_config_from_params():
    from attnbook.chapters.params import chapter_params

    base = chapter_params("07_arct_cues", "smoke").replace(
        epochs=2, lr=1e-3, batch_size=4, warmup=0.1, weight_decay=0.0, dropout=0.0, freeze_embeddings=True, bf16=False)
    assert M.config_from_params(base.replace(trainable_layers="all")).trainable_layers is None
    assert M.config_from_params(base.replace(trainable_layers=1)).trainable_layers == 1
    assert M.config_from_params(base.replace(trainable_layers=1), epochs=7).epochs == 7
    assert M.config_from_params(base.replace(trainable_layers="all", bf16=True)).bf16 is True
    assert M.config_from_params(base.replace(trainable_layers="all")).bf16 is False


def test_whole_encoder_trains_every_layer_under_bf16_and_times_itself(tokenizer):
    """Issue 18: the quick model fine-tunes the whole encoder (embeddings and every layer change), its training
    passes run under bfloat16 autocast when asked (evaluation in float32), and the run records its seconds."""
    from attnbook.engine.models import wrap_model

    loaded = wrap_model(make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=0), tokenizer, "tiny")
    items = planted_cue_items(12, 3)
    enc = M.encode_pairs(tokenizer, items, "full", 32)
    dtypes: list = []
    hook = loaded.model.encoder.layer[0].attention.self.query.register_forward_hook(
        lambda mod, inp, out: dtypes.append((mod.training, out.dtype)))
    try:
        cfg = M.TrainConfig(epochs=1, lr=1e-2, batch_size=4, trainable_layers=None, bf16=True)
        run = M.train_pairwise(loaded.model, enc, enc, cfg, seed=0)
    finally:
        hook.remove()
    assert {d for training, d in dtypes if training} == {torch.bfloat16}
    assert {d for training, d in dtypes if not training} == {torch.float32}
    before = dict(loaded.model.named_parameters())
    after = dict(run.model.encoder.named_parameters())
    for name in ("embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight",
                 "encoder.layer.1.output.dense.weight"):
        assert not torch.equal(before[name], after[name]), name
    assert run.seconds > 0


@pytest.mark.integration
def test_seeds_as_jobs_on_worker_processes_train_the_same_models(tokenizer, tmp_path, monkeypatch):
    """``workers=2`` trains the seeds as jobs on two one-thread worker processes (attnbook.core.executor), each
    loading the model by its folder, and gives the same runs as the sequential loop, for the whole encoder and for
    the top layer only (whose frozen lower states each job computes itself); a model that loads other weights where
    the job runs is refused, naming the fix."""
    from attnbook.core import executor
    from attnbook.engine.models import load_encoder

    folder = tmp_path / "tiny"
    make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    loaded = load_encoder(str(folder))
    items = planted_cue_items(12, 3)
    monkeypatch.delenv(executor.SCHEDULER_ENV, raising=False)
    for layers in (None, 1):
        cfg = M.TrainConfig(epochs=1, lr=1e-3, batch_size=4, bf16=True, train_threads=1, trainable_layers=layers)
        kw = dict(inputs="full", seeds=[0, 1], cfg=cfg, max_length=32)
        with cache.disabled():  # both runs train (the cache ignores workers)
            one = M.run_seeds(loaded, items, items[:4], {"test": items[4:]}, **kw)
            two = M.run_seeds(loaded, items, items[:4], {"test": items[4:]}, workers=2, model=str(folder), **kw)
        columns = [c for c in one.columns if c != "train_seconds"]
        assert one[columns].equals(two[columns]), layers
    other = tmp_path / "other"
    make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=1).save_pretrained(other)
    tokenizer.save_pretrained(other)
    with cache.disabled(), pytest.raises(ParameterError, match="loads other weights where this job runs"):
        M.run_seeds(loaded, items, items[:4], {"test": items[4:]}, workers=2, model=str(other), **kw)


def test_length_grouped_batches_cover_every_item_and_pad_less(tokenizer, monkeypatch):
    """Chapter 7's quick profile groups training items by length (issue 18's speed-up): each epoch still uses
    every item exactly once, and the batches are padded less than random ones; ``group_by_length=False`` keeps the
    paper's random batches."""
    from attnbook.engine.models import wrap_model

    loaded = wrap_model(make_tiny_bert(tokenizer, n_layers=1, n_heads=2, hidden=32, seed=0), tokenizer, "tiny")
    items = [item(i, "short", " ".join(["a much longer warrant"] * (1 + i % 7)), i % 2) for i in range(40)]
    enc = M.encode_pairs(tokenizer, items, "full", 64)
    lengths = S.item_lengths(enc)
    assert lengths.shape == (40,) and lengths.min() < lengths.max()
    seen: list[list[int]] = []
    original = S.PairwiseScorer.logits_for

    def spy(self, data, idx, pad_id=0):
        if self.training:
            seen.append(list(idx))
        return original(self, data, idx, pad_id)

    monkeypatch.setattr(S.PairwiseScorer, "logits_for", spy)
    padded = {}
    for group in (False, True):
        seen.clear()
        cfg = M.TrainConfig(epochs=2, lr=1e-3, batch_size=4, group_by_length=group, select_on_dev=False)
        M.train_pairwise(loaded.model, enc, None, cfg, seed=0)
        assert len(seen) == 20
        for epoch in (seen[:10], seen[10:]):
            assert sorted(i for batch in epoch for i in batch) == list(range(40))
        padded[group] = sum(int(lengths[b].max()) * len(b) for b in seen)
    assert padded[True] < 0.8 * padded[False]
    from attnbook.chapters.params import chapter_params

    assert M.config_from_params(chapter_params("07_arct_cues", "smoke").replace(
        epochs=1, lr=1e-3, batch_size=4, freeze_embeddings=False, trainable_layers="all",
        group_by_length=True)).group_by_length is True
