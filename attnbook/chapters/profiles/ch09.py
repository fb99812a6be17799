"""Chapter 9 (what holds across encoders: chapters 1-4's pre-trained analyses on several models) in the three profiles.

``models``: the encoders compared (short names or folders, :func:`attnbook.engine.models.load_encoder`); ``model``:
the one chapters 1-8 of the same build ran with (their caches hold its measurements, so it is read back; it is
compared too, first, when ``models`` lacks it). ``sizes``: ``{model: {chapter id: {parameter: value}}}``, a model's
sample sizes where they differ from chapters 1-4's own for the profile (:func:`attnbook.atlas.encoders.
source_parameters`; chapter 3 keeps chapters 1-2's segments and sentences). ``joint_sentences``: UD EWT dev sentences
on which the heads of all models are compared with each other (Jensen-Shannon divergences of word-level maps).
``seed`` seeds the chapter (each source chapter's analyses keep their own seed). No fine-tuning here.

**smoke**: the embedded model and ``embedded-random``, its seeded random-weight copy (nothing to download), each at
chapters 1-4's smoke sizes.

**quick**: all-MiniLM-L6-v2 (embedded) at chapters 1-4's quick sizes, read back from their caches, and
all-mpnet-base-v2 (MPNet, 12 x 12, hidden 768: about 8x MiniLM's forward) at smaller sizes. Every number a row judges
carries its 95% interval over the units it averages, and a rule decides only when the interval supports it (else the
row is undecided, never counted as holding), so a smaller sample can cost a decision but cannot fake one:

* §3 surface statistics on 300 WikiText-2 segments (chapter 1: 1,000): per-head means over ~33,000 query tokens; the
  intervals over segments widen by about sqrt(1000/300) = 1.8x against chapter 1's. §3.2 gradients as chapter 1 does
  them for MiniLM: MPNet ships no MLM head, so one is fitted on the frozen encoder with chapter 1's quick recipe
  (860 segments disjoint from the analysed ones, at most 1,000 updates with early stopping on held-out segments; its
  held-out accuracy is stated beside a constant predictor's), then the gradients of the first 200 analysed segments.
  This is the largest item of MPNet's column (the hidden states of 980 segments, the head's updates over a
  30,527-piece vocabulary, and 200 backward passes).
* §4.2 dependency heads on the first 1,000 UD EWT dev sentences (chapter 2: all 2,001), bootstrap over sentences;
  §4.3 coreference on all 30 GUM dev documents, as chapter 2 (the unit of its bootstrap is the document: fewer
  documents would widen those intervals the most).
* §5 probes trained on 500 UD train sentences and scored on 500 dev sentences (chapter 2: 2,000 and 2,001): each
  probe's UAS is lower with less training data, so the rows compare the paper's margins between probes, paired over
  the dev sentences; one training run, as chapter 2.
* §6 distances on the same 300 segments, a quarter of each segment's queries (chapter 3's quick setting), bootstrap
  over 40 groups of segments; its permutation tests as chapter 3.
* Kovaleva §4.2: every FrameNet instance the filter keeps, as chapter 4.

Cost: nearly all of it is MPNet's column; its largest item is the fitted MLM head (``attnbook plan --profile quick
--chapters 09`` names the hidden states of its 980 segments first), then the probes' maps, the GUM windows and the
segments' maps for chapters 1 and 3. MiniLM's column only builds its inputs again for the cache keys (and the joint
sentences' maps). Not counted, as for every chapter: the rows' bootstrap and permutation statistics.

**paper**: bert-base-uncased beside both, at the paper profile's sizes (a GPU); the two sentence encoders have no
MLM head of their own, so their §3.2 head is fitted as in the quick profile.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.chapters.spec import ACROSS, Chapter, count_text
from attnbook.core.parameters import Parameters

#: MPNet's quick sizes (see the module docstring for why they suffice)
MPNET_QUICK = {
    "01_clark_surface_patterns": dict(n_segments=300),
    "02_clark_probing": dict(syntax_sentences=1000, probe_train_sentences=500, probe_dev_sentences=500),
    "03_clark_clustering": dict(n_segments=300, syntax_sentences=1000),
}
#: chapter 1's paper profile requires the model's own MLM head; the sentence encoders get one fitted (quick's recipe)
FITTED_MLM = {"01_clark_surface_patterns": dict(mlm_fit_steps=1000)}


@dataclass(frozen=True, kw_only=True)
class AcrossParams(Parameters):
    """Chapter 9's parameters (what each means: the module docstring); one instance per profile below."""

    model: str
    models: list[str] | str
    sizes: dict[str, Any]
    joint_sentences: int
    seed: int


register_chapter(Chapter(
    "09_across_encoders", "What holds across encoders (Clark, Kovaleva)", ACROSS,
    datasets=("wiki", "ud_ewt", "coref", "glove", "framenet"),
    pipeline="attnbook.atlas.encoders:AcrossPipeline",
    # it reads chapters 1-3's measurements of their model back from their caches; chapter 4's one stage it shares
    # (FrameNet links) is short beside chapter 4's fine-tuning, so it does not wait for that chapter
    after=("01_clark_surface_patterns", "02_clark_probing", "03_clark_clustering"),
    sizes=lambda p: (
        f"models {', '.join(map(str, p.models))}; each model's own sizes (chapters 1-4's for the model they ran "
        f"with, smaller for the others: the chapter's sizes table); {count_text(p.joint_sentences)} sentences read by every "
        "model for the joint map"),
    differs=lambda p, r: ["no paper: it sets the papers' findings on bert-base beside every model here, "
                                        "each judged by its own chapter's rule"],
    profiles={
        "smoke": AcrossParams(model="embedded", models=["embedded", "embedded-random"], sizes={}, joint_sentences=40, seed=0),
        "quick": AcrossParams(model="embedded", models=["embedded", "mpnet"], sizes={"mpnet": MPNET_QUICK},
                      joint_sentences=300, seed=0),
        "paper": AcrossParams(model=PAPER_MODEL, models=[PAPER_MODEL, "embedded", "mpnet"],
                      sizes={"embedded": FITTED_MLM, "mpnet": FITTED_MLM}, joint_sentences=500, seed=0),
    },
))
