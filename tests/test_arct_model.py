"""The pairwise argument–warrant scorers of Niven & Kao: inputs, softmax over two warrants, training."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.studies.niven_kao import cues as A
from attnbook.studies.niven_kao import scorers as M
from attnbook.core.errors import ParameterError
from conftest import make_tiny_bert


def item(i, w0, w1, label, claim="Cats are good pets", reason="they sleep"):
    return A.ArctItem(id=f"id{i}", warrant0=w0, warrant1=w1, label=label, reason=reason, claim=claim)


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
    model = M.PairwiseScorer(make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=1))
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
        pooled = scorer._pool(hidden)
    assert torch.allclose(hidden, ref.last_hidden_state, atol=1e-5)
    assert torch.allclose(pooled, ref.pooler_output, atol=1e-5)


def test_rejects_inputs_without_two_warrants(scorer):
    ids, mask, types = random_pairs()
    with pytest.raises(ValueError):
        scorer(ids[:, :1], mask[:, :1], types[:, :1])
    with pytest.raises(ParameterError):
        M.PairwiseScorer(scorer.encoder, trainable_layers=5)


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
    model = M.PairwiseScorer(encoder, trainable_layers=k).eval()
    cached = M.cache_lower_states(model, enc)
    assert cached.start == 2 - k
    direct = M.predict_proba(model, enc)
    via_cache = M.predict_proba(model, cached)
    np.testing.assert_allclose(via_cache, direct, atol=2e-3)  # states are stored in float16
    assert np.allclose(direct.sum(1), 1.0)


def planted_cue_items(n, seed, cue="indeed"):
    """Correct warrant = the one that contains ``cue``; all other words are random fillers."""
    rng = np.random.default_rng(seed)
    fillers = ["people", "should", "water", "city", "rules", "money", "school", "the", "green", "fast"]
    out = []
    for i in range(n):
        w = [" ".join(rng.choice(fillers, 4)) for _ in range(2)]
        y = int(rng.integers(0, 2))
        w[y] = f"{w[y]} {cue}"
        claim, reason = (" ".join(rng.choice(fillers, 3)) for _ in range(2))
        out.append(item(i, w[0], w[1], y, claim=claim, reason=reason))
    return out


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


def test_summarize_and_schedule():
    s = M.summarize([0.5, 0.7, 0.6, 0.9])
    assert s == {"mean": pytest.approx(0.675), "std": pytest.approx(np.std([0.5, 0.7, 0.6, 0.9])),
                 "median": pytest.approx(0.65), "max": 0.9, "n": 4}


def test_paper_numbers_are_consistent():
    P = M.PAPER
    assert P["table3"]["BERT"]["full"] == {k: P["table1"]["BERT (Large)"][k] for k in ("mean", "std", "median", "max")}
    assert P["table3"]["BERT"]["W"]["max"] == 0.712 and P["table3"]["BERT"]["RW"]["max"] == 0.750
    assert P["table4"]["BERT"]["full"]["max"] == 0.533
    assert P["not_cue"]["all"] == {"productivity": 0.61, "coverage": 0.64}


class FakeGloVe:
    dim = 8

    def lookup(self, words):
        rng = np.random.default_rng(0)
        vecs = rng.normal(size=(len(words), self.dim)).astype(np.float32)
        oov = np.array([w.startswith("<") or w == "indeed" for w in words])
        vecs[oov] = 0
        return vecs, oov


@pytest.mark.parametrize("kind", ["bov", "bilstm"])
def test_word_baselines_softmax_and_learning(kind):
    torch.set_num_threads(1)
    train, dev, test = planted_cue_items(80, 0), planted_cue_items(20, 1), planted_cue_items(40, 2)
    vocab = M.build_vocabulary([train, dev, test])
    vectors, oov = M.embedding_matrix(vocab, FakeGloVe())
    assert vocab[0] == "<pad>" and np.all(vectors[0] == 0) and 0 < oov < 1
    data = {k: M.encode_words(v, vocab) for k, v in (("train", train), ("dev", dev), ("test", test))}
    cfg = M.WordTrainConfig(kind, epochs=8, lr=0.05, batch_size=16, hidden=8)
    model, dev_acc, epoch = M.train_word_model(vectors, data["train"], data["dev"], cfg, "full", seed=0)
    with torch.no_grad():
        z = model.logits_for(data["test"], [0, 1, 2])
    assert z.shape == (3, 2)
    p = M._word_proba(model, data["test"])
    assert np.allclose(p.sum(1), 1)
    assert M.accuracy_of(p, data["test"].labels) >= 0.9


def fake_runs(acc, inputs="full", **extra):
    import pandas as pd

    return pd.DataFrame({"inputs": inputs, "seed": range(len(acc)), "test_accuracy": acc, **extra})


def test_paper_comparison_verdicts_follow_the_numbers():
    toy = [item(0, "it is not good", "it is good", 0), item(1, "no", "not so", 1)]
    not_rows = A.not_cue_table({"train": toy, "dev": toy, "test": toy, "all": toy})
    bert = {"full": fake_runs([0.70, 0.77, 0.74], test_adv_accuracy=[0.45, 0.48, 0.47]),
            "W": fake_runs([0.50, 0.52, 0.51], "W")}
    adv = {"full": fake_runs([0.50, 0.53], original_half_accuracy=[0.6, 0.5], negated_half_accuracy=[0.4, 0.5])}
    rows = M.paper_comparison(not_rows=not_rows, bert=bert, adversarial=adv, adversarial_cue_gap=0.0,
                              words={"bov": fake_runs([0.56, 0.57])})
    by = {(r["experiment"], r["quantity"]): r for r in rows}
    assert by[("§3 BERT, full input (C, R, W)", "test accuracy, max")]["verdict"] == "agrees"
    assert by[("§5 probe, BERT (W)", "test accuracy, max")]["verdict"] == "disagrees"  # 0.52 vs 0.712
    gap = by[("§5 finding: warrants alone", "max(full) − max(W), points")]
    assert gap["ours"] == pytest.approx(0.25) and gap["verdict"] == "disagrees"
    assert by[("§6 trained on original data, tested adversarially", "test accuracy, mean")]["verdict"] == "agrees"
    assert by[("§6 adversarial test, BERT (C, R, W)", "original half + negated half")]["ours"] == pytest.approx(1.0)
    assert by[("§3/§5 BoV (C, R, W)", "test accuracy, mean")]["verdict"] == "agrees"
    assert by[('§4 cue "not" (train+dev+test)', "productivity")]["verdict"] == "disagrees"  # 0.5 vs 0.61
    from attnbook.chapters.results import VERDICTS

    assert all(r["verdict"] in VERDICTS for r in rows)


def test_config_from_params_and_seed_table():
    base = dict(epochs=2, lr=1e-3, batch_size=4, warmup=0.1, weight_decay=0.0, dropout=0.0, freeze_embeddings=True)
    assert M.config_from_params({**base, "trainable_layers": "all"}).trainable_layers is None
    assert M.config_from_params({**base, "trainable_layers": 1}).trainable_layers == 1
    table = M.seed_table({"x": fake_runs([0.5, 0.7])}, paper={"x": {"mean": 0.6, "max": 0.8}})
    assert table.loc[0, "max"] == 0.7 and table.loc[0, "paper max"] == 0.8 and table.loc[0, "seeds"] == 2
    bars = M.probe_bars_frame({"full": fake_runs([0.6]), "W": fake_runs([0.55], "W")})
    assert list(bars["input"]) == ["C, R, W", "C, R, W", "W", "W"] and bars["accuracy"].iloc[0] == 0.77


def test_cls_only_layer_equals_the_full_layer_at_cls(scorer):
    from transformers.masking_utils import create_bidirectional_mask

    ids, mask, types = random_pairs()
    flat = [t.reshape(6, -1) for t in (ids, mask, types)]
    with torch.no_grad():
        hidden = scorer.lower(*flat, stop=scorer.n_layers - 1)
        layer = scorer.encoder.encoder.layer[-1]
        full = layer(hidden, create_bidirectional_mask(config=scorer.encoder.config, inputs_embeds=hidden,
                                                       attention_mask=flat[1]))
        cls = M.cls_only_layer(layer, hidden, flat[1])
    assert cls.shape == (6, 1, hidden.shape[-1])
    assert torch.allclose(cls[:, 0], full[:, 0], atol=1e-5)
