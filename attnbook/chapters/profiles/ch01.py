"""Every chapter's parameters in the three profiles (see :mod:`attnbook.chapters.params`).

``model`` names what :func:`attnbook.engine.models.load_encoder` loads: ``"embedded"``
is all-MiniLM-L6-v2 shipped in site-packages; ``"bert-base-uncased"`` is the
papers' model (needs it in the Hugging Face cache or a network).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.chapters.spec import CLARK, Chapter, count_text
from attnbook.core.parameters import Parameters


@dataclass(frozen=True, kw_only=True)
class SurfaceParams(Parameters):
    """Chapter 1's parameters (what each means: the module docstring); one instance per profile below."""

    model: str
    n_segments: int
    max_tokens: int
    batch_size: int
    seed: int
    mlm_fit_steps: int
    mlm_fit_batch: int
    mlm_fit_segments: int
    mlm_fit_lr: float
    mlm_eval_every: int
    grad_segments: int


# quick: batch size 16; `make bench` measures segments/s by batch size (8 and 16 are within its noise on 2 cores)
# and the statistics' overhead at this size.
# MLM head (issue 18), measured on this machine with the embedded model: held-out top-1 7.0% for the unigram
# baseline; 10.3% after 200 steps on 300 fitting segments (then the held-out loss rises); 11.2-11.6% on 920 segments
# (lr 1e-3, 16 segments = ~249 masked positions per step, best held-out loss at step 500 of 1000, 222 CPU s). WikiText-2
# gives 1,980 paragraph pairs; 1,000 feed the statistics, so 980 remain for the head: 60 validation + 60 held-out
# segments leave 860 to fit on. So the quick profile fits on 860 segments for at most 1000 steps, evaluating every 50 and stopping after 3 evaluations
# without a lower validation loss (the best weights kept).
register_chapter(Chapter(
    "01_clark_surface_patterns", "Surface patterns (Clark §3)", CLARK,
    datasets=("wiki",),
    pipeline="attnbook.studies.clark.pipeline:SurfacePipeline",
    sizes=lambda p: (
        f"{count_text(p.n_segments)} WikiText-2 segments of at most {p.max_tokens} word pieces; attention gradients on "
        f"{count_text(p.grad_segments)} of them"),
    differs=lambda p, r: [
        "WikiText-2 paragraphs instead of the paper's Wikipedia segments",
        *(["the §3.2 gradients use an MLM head fitted on the frozen encoder (the model has none of its own)"]
          if (r.get("mlm_head") or {}).get("source", "pretrained") != "pretrained" else [])],
    profiles={
        "smoke": SurfaceParams(
            model="embedded", n_segments=12, max_tokens=64, batch_size=4, seed=0,
            mlm_fit_steps=30, mlm_fit_batch=4, mlm_fit_segments=24, mlm_fit_lr=1e-3, mlm_eval_every=10,
            grad_segments=4,
        ),
        "quick": SurfaceParams(
            model="embedded", n_segments=1000, max_tokens=128, batch_size=16, seed=0,
            mlm_fit_steps=1000, mlm_fit_batch=16, mlm_fit_segments=860, mlm_fit_lr=1e-3, mlm_eval_every=50,
            grad_segments=200,
        ),
        "paper": SurfaceParams(
            model=PAPER_MODEL, n_segments=1000, max_tokens=128, batch_size=16, seed=0,
            mlm_fit_steps=0, mlm_fit_batch=16, mlm_fit_segments=860, mlm_fit_lr=1e-3, mlm_eval_every=50,
            grad_segments=1000,
        ),
    },
))
