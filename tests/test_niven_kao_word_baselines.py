"""The BoV and BiLSTM baselines of Niven & Kao (§3): vocabulary, GloVe matrix, softmax, learning, cached runs."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from arct_items import FakeGloVe, planted_cue_items
from attnbook.core.errors import ParameterError
from attnbook.studies.niven_kao import pairwise
from attnbook.studies.niven_kao import word_baselines as M


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
    p = M.predict_word_proba(model, data["test"])
    assert np.allclose(p.sum(1), 1)
    assert pairwise.accuracy_of(p, data["test"].labels) >= 0.9


def test_word_scorer_inputs_and_errors():
    vectors = np.ones((5, 4), dtype=np.float32)
    with pytest.raises(ParameterError):
        M.WordPairScorer(vectors, kind="cnn")
    with pytest.raises(ParameterError):
        M.WordPairScorer(vectors, inputs="CRW")
    assert M.WordPairScorer(vectors, "bov", "W").out.in_features == 4  # the warrant alone
    assert M.WordPairScorer(vectors, "bov", "full").out.in_features == 8  # claim + reason pooled together
    assert M.WordPairScorer(vectors, "bilstm", "RW", hidden=3).out.in_features == 2 * 3 * 2


def test_word_config_takes_the_chapter_sizes():
    from attnbook.chapters.params import chapter_params

    P = chapter_params("07_arct_cues", "smoke").replace(train_threads=1, bilstm_epochs=2, bilstm_hidden=8)
    assert M.word_config("bov", P) == replace(M.PAPER_WORD_CONFIGS["bov"], threads=1)
    bilstm = M.word_config("bilstm", P)
    assert (bilstm.epochs, bilstm.hidden, bilstm.lr, bilstm.threads) == (2, 8, 0.06, 1)


def test_run_word_baselines_every_kind_and_input():
    torch.set_num_threads(1)
    train, dev, test = planted_cue_items(24, 0), planted_cue_items(8, 1), planted_cue_items(8, 2)
    from attnbook.chapters.params import chapter_params

    P = chapter_params("07_arct_cues", "smoke").replace(seed=3, word_seeds=2, probes=["full", "W"], train_threads=1,
                                                         bilstm_epochs=1, bilstm_hidden=4)
    runs = M.run_word_baselines(FakeGloVe(), train, dev, {"test": test}, P)
    assert list(runs) == list(M.KINDS)
    for kind, frame in runs.items():
        assert list(frame["inputs"]) == ["full", "full", "W", "W"] and list(frame["seed"]) == [3, 4, 3, 4]
        assert set(frame["model"]) == {kind} and frame["test_accuracy"].between(0, 1).all()
        assert list(frame.index) == [0, 1, 2, 3]
    again = M.run_word_baselines(FakeGloVe(), train, dev, {"test": test}, P)  # from the cache
    assert all(again[k].equals(runs[k]) for k in runs)
