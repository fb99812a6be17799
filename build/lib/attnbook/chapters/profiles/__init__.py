"""Every chapter's parameters in the three profiles, one module per chapter (``chNN.py``).

Importing this package registers all of them with :mod:`attnbook.chapters.params`.
``model`` names what :func:`attnbook.engine.models.load_encoder` loads: ``"embedded"``
is all-MiniLM-L6-v2 shipped in site-packages; ``"bert-base-uncased"`` is the
papers' model (needs it in the Hugging Face cache or a network).
"""
from __future__ import annotations

import importlib
import pkgutil

PAPER_MODEL = "bert-base-uncased"

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_mod}")
