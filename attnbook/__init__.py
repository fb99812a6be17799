"""attnbook: the helper package of an executable book on BERT's attention heads.

It reproduces Clark et al. (2019), Kovaleva et al. (2019), Michel et al. (2019) and Niven & Kao (2019).
The front door holds the names a reader of the book uses; everything else lives in its layer:

* :mod:`attnbook.core` - errors, head labels, paths, atomic files, the content-hash cache;
* :mod:`attnbook.stats`, :mod:`attnbook.verdict`, :mod:`attnbook.charts` - statistics, the one verdict rule, charts;
* :mod:`attnbook.data` - one reader per dataset, and ``attnbook fetch``;
* :mod:`attnbook.engine` - the only code that runs models: loading, extraction, interventions, sweeps, training;
  ``attnbook.heads`` (:mod:`attnbook.engine.heads`) - load, maps, mask, disable, score and prune any encoder's heads,
  the front door's one way to do each (the chapters run the same engine underneath);
* :mod:`attnbook.studies` - the science, one folder per paper;
* :mod:`attnbook.chapters` - making the book: profiles, results, the runner, the command line.

Arrays are 0-based ``attn[layer, head, query, key]``; labels shown to readers are 1-based ``layer-head``.
Names are imported on first use, so ``import attnbook`` stays cheap.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_encoder": "attnbook.engine.models",
    "wrap_model": "attnbook.engine.models",
    "LoadedModel": "attnbook.engine.models",
    "Encoded": "attnbook.engine.inputs",
    "Batch": "attnbook.engine.inputs",
    "make_batches": "attnbook.engine.inputs",
    "stream_attention": "attnbook.engine.extract",
    "collect_maps": "attnbook.engine.extract",
    "Reducer": "attnbook.engine.extract",
    "fit": "attnbook.engine.train",
    "Recipe": "attnbook.engine.train",
    "get_finetuned": "attnbook.engine.finetune",
    "head_label": "attnbook.core.heads",
    "parse_head_label": "attnbook.core.heads",
    "data_path": "attnbook.data.registry",
    "ChapterResults": "attnbook.chapters.results",
    "Comparison": "attnbook.verdict",
    "memoized": "attnbook.core.cache",
    "heads": "attnbook.engine.heads",  # a module: the calls on your own model's heads
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module = import_module(_EXPORTS[name])
        value = module if module.__name__.rsplit(".", 1)[-1] == name else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'attnbook' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
