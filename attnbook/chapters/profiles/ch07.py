"""Chapter 7 (Niven & Kao 2019, statistical cues in ARCT): parameters in the three profiles.

* ``n_seeds`` runs per experiment (seeds ``seed .. seed + n_seeds - 1``); the paper: 20.
* ``epochs``, ``lr``, ``batch_size`` (items per step; each item is two sequences; the paper: 8), ``max_length``
  (WordPiece cap of the full input; the probes use min(this, the authors' 36/60)). The paper
  profile uses the authors' BERT Base recipe (lr 8e-5, 30 epochs, batch 8, length 80); for
  ``bert-large-uncased`` pass ``-p model bert-large-uncased -p lr 2e-5 -p epochs 20 -p adversarial_epochs 20``.
* ``adversarial_epochs``: epochs on ``train-swapped`` (§6). That file holds every training item
  twice (once with the warrants swapped, which a pairwise scorer cannot tell apart), so the quick
  profile halves the epochs: the same number of passes over each item as ``epochs`` on ``train``.
* ``trainable_layers``: ``"all"`` fine-tunes the whole encoder as the paper does; an integer k
  trains only the top k layers plus pooler and classifier on cached lower-layer states
  (``attnbook.studies.niven_kao.bert``), the quick profile's compute knob.
* ``train_threads``: torch threads during the training steps (0: leave the chapter's setting). The
  quick profile's steps are small; on two cores one thread trained about twice as fast as two,
  while the state cache (large batched forward passes) keeps using every thread.
* ``train_cap`` / ``eval_cap``: use only that many training / dev-and-test items (0: all).
* ``probes``: input variants run (§5); ``adversarial``: input variants run on the adversarial data (§6).
* ``word_baselines``: run BoV and BiLSTM (GloVe 6B 50d here; the paper: 840B 300d) on every probe,
  ``word_seeds`` seeds each, ``bilstm_hidden`` units, ``bilstm_epochs`` epochs.
* ``min_applicability``: cues shown in the cue table/figure apply to at least this many items.
"""
from __future__ import annotations

from attnbook.chapters.params import register_chapter

from attnbook.chapters.profiles import PAPER_MODEL

_COMMON = dict(
    seed=0, warmup=0.1, weight_decay=0.01, dropout=0.1, probes=["full", "W", "RW", "CW"],
    word_baselines=True, min_applicability=20, use_cache=True,
)

register_chapter(
    "07_arct_cues",
    {
        "smoke": dict(
            _COMMON, model="embedded", n_seeds=2, epochs=2, adversarial_epochs=1, lr=2e-3, batch_size=32,
            max_length=48, trainable_layers=1, freeze_embeddings=True, train_threads=1, train_cap=48, eval_cap=24,
            adversarial=["full"],
            word_seeds=1, bilstm_hidden=8, bilstm_epochs=1,
        ),
        "quick": dict(
            _COMMON, model="embedded", n_seeds=3, epochs=4, adversarial_epochs=2, lr=2e-3, batch_size=32,
            max_length=64, trainable_layers=1, freeze_embeddings=True, train_threads=1, train_cap=0, eval_cap=0,
            adversarial=["full"],
            word_seeds=2, bilstm_hidden=32, bilstm_epochs=1,
        ),
        "paper": dict(
            _COMMON, model=PAPER_MODEL, n_seeds=20, epochs=30, adversarial_epochs=30, lr=8e-5, batch_size=8,
            max_length=80, trainable_layers="all", freeze_embeddings=False, train_threads=0, train_cap=0, eval_cap=0,
            adversarial=["full", "W", "RW", "CW"], word_seeds=20, bilstm_hidden=512, bilstm_epochs=20,
        ),
    },
)
