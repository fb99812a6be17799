"""Chapter 7 (Niven & Kao 2019, statistical cues in ARCT): parameters in the three profiles.

* ``n_seeds`` runs per input variant (seeds ``seed .. seed + n_seeds - 1``); the paper: 20.
* ``epochs``, ``lr``, ``batch_size`` (items per step; each item is two sequences), ``max_length``
  (WordPiece cap of the full input; the probes use min(this, the authors' 36/60));
  the paper profile uses the authors' BERT Base recipe (lr 8e-5, 30 epochs, batch 8, length 80).
  For ``bert-large-uncased`` pass ``-p model bert-large-uncased -p lr 2e-5 -p epochs 20``.
* ``trainable_layers``: ``"all"`` fine-tunes the whole encoder as the paper does; an integer k
  trains only the top k layers plus pooler and classifier on cached lower-layer states
  (``attnbook.arct_model``), the quick profile's compute knob.
* ``train_cap`` / ``eval_cap``: use only that many training / dev-and-test items (0: all).
* ``probes``: input variants run (§5); ``adversarial``: input variants run on the adversarial data (§6).
* ``word_baselines``: run BoV and BiLSTM (GloVe 6B 50d here; the paper: 840B 300d),
  ``word_seeds`` seeds each, ``bilstm_hidden`` units, ``bilstm_epochs`` epochs.
* ``min_applicability``: cues shown in the cue table/figure need at least this many items.
"""
from __future__ import annotations

from ..config import register_chapter

from . import PAPER_MODEL

_COMMON = dict(
    seed=0, warmup=0.1, weight_decay=0.01, dropout=0.1, probes=["full", "W", "RW", "CW"],
    min_applicability=20, use_cache=True,
)

register_chapter(
    "07_arct_cues",
    {
        "smoke": dict(
            _COMMON, model="embedded", adversarial=["full"], n_seeds=2, epochs=2, lr=1e-3, batch_size=8, max_length=48,
            trainable_layers=0, freeze_embeddings=True, train_cap=48, eval_cap=24,
            word_baselines=True, word_seeds=1, bilstm_hidden=8, bilstm_epochs=1,
        ),
        "quick": dict(
            _COMMON, model="embedded", adversarial=["full"], n_seeds=5, epochs=10, lr=1e-3, batch_size=8, max_length=64,
            trainable_layers=0, freeze_embeddings=True, train_cap=0, eval_cap=0,
            word_baselines=True, word_seeds=5, bilstm_hidden=64, bilstm_epochs=5,
        ),
        "paper": dict(
            _COMMON, model=PAPER_MODEL, adversarial=["full", "W", "RW", "CW"], n_seeds=20, epochs=30, lr=8e-5, batch_size=8, max_length=80,
            trainable_layers="all", freeze_embeddings=False, train_cap=0, eval_cap=0,
            word_baselines=True, word_seeds=20, bilstm_hidden=512, bilstm_epochs=20,
        ),
    },
)
