"""Every chapter's parameters in the three profiles (see :mod:`attnbook.chapters.params`).

``model`` names what :func:`attnbook.engine.models.load_encoder` loads: ``"embedded"``
is all-MiniLM-L6-v2 shipped in site-packages; ``"bert-base-uncased"`` is the
papers' model (needs it in the Hugging Face cache or a network).
"""
from __future__ import annotations

from attnbook.chapters.params import register_chapter

from attnbook.chapters.profiles import PAPER_MODEL

# quick: batch size 16; `make bench` measures segments/s by batch size (8 and 16 are within its noise on 2 cores)
# and the statistics' overhead at this size.
register_chapter(
    "01_clark_surface_patterns",
    {
        "smoke": dict(
            model="embedded", n_segments=12, max_tokens=64, batch_size=4, seed=0,
            mlm_fit_steps=4, mlm_fit_batch=4, grad_segments=4, use_cache=True,
        ),
        "quick": dict(
            model="embedded", n_segments=1000, max_tokens=128, batch_size=16, seed=0,
            mlm_fit_steps=300, mlm_fit_batch=16, grad_segments=200, use_cache=True,
        ),
        "paper": dict(
            model=PAPER_MODEL, n_segments=1000, max_tokens=128, batch_size=16, seed=0,
            mlm_fit_steps=0, mlm_fit_batch=16, grad_segments=1000, use_cache=True,
        ),
    },
)
