"""Chapter 7 (Niven & Kao 2019, statistical cues in ARCT): parameters in the three profiles.

* ``n_seeds`` runs per experiment (seeds ``seed .. seed + n_seeds - 1``); the paper: 20. Runs that stay at chance
  on dev (degenerate, the paper's filter) are reported and left out of the means.
* ``epochs``, ``lr``, ``batch_size`` (items per step; each item is two sequences; the paper: 8), ``max_length``
  (WordPiece cap of the full input; the probes use min(this, the authors' 36/60)). The paper
  profile uses the authors' BERT Base recipe (lr 8e-5, 30 epochs, batch 8, length 80); for
  ``bert-large-uncased`` pass ``-p model bert-large-uncased -p lr 2e-5 -p epochs 20 -p adversarial_epochs 20``.
* ``adversarial_epochs``: epochs on ``train-swapped`` (§6). That file holds every training item
  twice (once with the warrants swapped, which a pairwise scorer cannot tell apart), so one epoch there is two
  passes over each training item.
* ``trainable_layers``: ``"all"`` fine-tunes the whole encoder as the paper does (quick and paper); an integer k
  trains only the top k layers plus pooler and classifier on cached lower-layer states
  (``attnbook.studies.niven_kao.pairwise``), a compute knob the smoke profile uses to stay within seconds.
* ``bf16``: training passes under bfloat16 autocast (evaluation in float32); ``"auto"`` (smoke, quick): where the
  hardware runs bfloat16 natively (:mod:`attnbook.engine.precision`), float32 elsewhere.
* ``group_by_length``: training batches hold items of similar length (each epoch's shuffle cut into chunks of 50
  batches, each sorted by length, the batches then shuffled: the GLUE chapters' grouping), so less of each batch is
  padding. The paper profile keeps the authors' random batches. ``make bench`` times one epoch of 200 training
  items both ways (quick recipe, one thread) and reports the ratio and the padding shares (benchmarks/README.md).
* ``seed_workers``: processes that train the seeds of one experiment side by side (1: one after the other).
* ``train_threads``: torch threads during the training steps (0: leave the chapter's setting). On two shared
  cores one thread per run trained faster than two.
* ``train_cap`` / ``eval_cap``: use only that many training / dev-and-test items (0: all).
* ``probes``: input variants run (§5); ``adversarial``: input variants run on the adversarial data (§6).
* ``word_baselines``: run BoV and BiLSTM (GloVe 6B 50d here; the paper: 840B 300d) on every probe and on the
  adversarial data (Table 4), ``word_seeds`` seeds each, ``bilstm_hidden`` units, ``bilstm_epochs`` epochs.
* ``min_applicability``: cues shown in the cue table/figure apply to at least this many items.

**The quick recipe, measured** (this machine, the embedded 6-layer model, whole encoder fine-tuned, lr 5e-5,
batch 8, 3 epochs, max length 64, one thread, float32): seeds 0/1/2 reached test accuracy 54.3 / 62.4 / 55.0,
adversarial test accuracy 50.5 / 51.8 / 50.5 and dev accuracy 67.7 / 69.6 / 66.8, in about 300 CPU s per seed
(1,210 training items, 456 updates). bf16 autocast, checked on seed 0: dev 68.4, test 55.6, adversarial test 50.5
(float32: 67.7 / 54.3 / 50.5), 265 CPU s with evaluation on a busy machine; 0.58 instead of 0.79 CPU s per update on
the same batches.

**Quick cost, estimated from those numbers** (265 CPU s per full-input run): full input 3 seeds x 265 = 795 CPU s;
W probe (mean 14 instead of 38 pieces per sequence, about 0.4 of the cost) 3 x 105 = 315; adversarial full input,
1 epoch on ``train-swapped`` (2 passes, 2/3 of a full run, plus the 888-item test) 3 x 190 = 570; about 1,680 CPU s
of training. ``seed_workers`` trains the seeds of an experiment in that many processes of one thread each (the same
runs as one after the other); with 3 workers on 2 free cores an experiment takes about half its CPU time, some 840 s,
plus about 15 s per experiment to start the workers and under two minutes for BoV, BiLSTM and the cue statistics:
about 16 minutes, twice the 8-minute target. Left: reading the §6 runs off the §3 runs (a pairwise scorer sees
``train-swapped`` as ``train`` twice, so only the epoch choice on the claim-negated dev set differs: about 285 s
less), and 2 epochs instead of 3 (2/3 of the training; not measured).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.chapters.spec import NIVEN_KAO, Chapter, count_text
from attnbook.core.parameters import Parameters


@dataclass(frozen=True, kw_only=True)
class ArctParams(Parameters):
    """Chapter 7's parameters (what each means: the module docstring); one instance per profile below;
    a default is the value all three share."""

    seed: int = 0
    warmup: float = 0.1
    weight_decay: float = 0.01
    dropout: float = 0.1
    probes: list[str] = field(default_factory=lambda: ["full", "W", "RW", "CW"])
    word_baselines: bool = True
    min_applicability: int = 20
    model: str
    n_seeds: int
    epochs: int
    adversarial_epochs: int
    lr: float
    batch_size: int
    max_length: int
    trainable_layers: int | str
    freeze_embeddings: bool
    bf16: bool | str
    train_threads: int
    seed_workers: int
    group_by_length: bool
    train_cap: int
    eval_cap: int
    adversarial: list[str]
    word_seeds: int
    bilstm_hidden: int
    bilstm_epochs: int


register_chapter(Chapter(
    "07_arct_cues", "Cues in ARCT (Niven & Kao)", NIVEN_KAO,
    datasets=("arct", "glove"),
    pipeline="attnbook.studies.niven_kao.pipeline:CuesPipeline",
    sizes=lambda p: (
        f"ARCT (original and adversarial): {count_text(p.train_cap, 'training items')}, {count_text(p.eval_cap, 'dev/test items')};"
        f" {p.n_seeds} seeds x {p.epochs} epochs per BERT experiment; BoV/BiLSTM with {p.word_seeds} seeds"),
    differs=lambda p, r: [
        *([f"{p.n_seeds} seeds instead of 20"] if p.n_seeds != 20 else []),
        *([f"{p.epochs} epochs instead of 30"] if p.epochs != 30 else []),
        "GloVe 6B 50d instead of 840B 300d for BoV and BiLSTM"],
    profiles={
        "smoke": ArctParams(
            model="embedded", n_seeds=2, epochs=2, adversarial_epochs=1, lr=2e-3, batch_size=32,
            max_length=48, trainable_layers=1, freeze_embeddings=True, bf16="auto", train_threads=1, seed_workers=1,
            group_by_length=True,
            train_cap=48, eval_cap=24, adversarial=["full"],
            word_seeds=2, bilstm_hidden=8, bilstm_epochs=1,
        ),
        "quick": ArctParams(
            model="embedded", n_seeds=3, epochs=3, adversarial_epochs=1, lr=5e-5, batch_size=8,
            max_length=64, trainable_layers="all", freeze_embeddings=False, bf16="auto", train_threads=1, seed_workers=3,
            group_by_length=True,
            train_cap=0, eval_cap=0, probes=["full", "W"], adversarial=["full"],
            word_seeds=3, bilstm_hidden=32, bilstm_epochs=1,
        ),
        "paper": ArctParams(
            model=PAPER_MODEL, n_seeds=20, epochs=30, adversarial_epochs=30, lr=8e-5, batch_size=8,
            max_length=80, trainable_layers="all", freeze_embeddings=False, bf16=False, train_threads=0, seed_workers=1,
            group_by_length=False,
            train_cap=0, eval_cap=0, adversarial=["full", "W", "RW", "CW"], word_seeds=20, bilstm_hidden=512,
            bilstm_epochs=20,
        ),
    },
))
