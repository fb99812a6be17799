"""`make bench`, one row per encoder family: extraction overhead and the fast single-head sweep against the naive one.

Each family's model is random, of the embedded model's size (6 layers x 12 heads, hidden 384, feed-forward 1536),
with a tokenizer of the family's kind built offline (``tests/tiny_families.py``): speed depends on the shapes and the
attention code, not on the weights. The segments are chapter 1's WikiText-2 pairs framed by that tokenizer.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from attnbook.engine.inputs import make_batches  # noqa: E402
from attnbook.engine.models import load_encoder, wrap_model  # noqa: E402
from attnbook.studies.clark.segments import clark_segments  # noqa: E402

#: the embedded model's shape, for every family
MINILM_SHAPE = {"hidden": 384, "layers": 6, "heads": 12, "intermediate": 1536, "positions": 512}


def _classifier(folder: Path, loaded):
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(folder), num_labels=2, attn_implementation="eager")
    return wrap_model(model.eval(), loaded.tokenizer, f"{loaded.name} (random classifier)", check=False)


def bench_family(family: str, n_segments: int, extraction, sweep) -> dict:
    """``extraction(loaded, segments, batch_size, naive=False)`` and ``sweep(model, batches, mode)`` are the bench's
    own measurements (``benchmarks/run.py``, ``benchmarks/measures.py``), run on this family's model."""
    from tiny_families import plant

    with tempfile.TemporaryDirectory() as tmp:
        folder = plant(family, Path(tmp) / family, "masked-lm", shape=MINILM_SHAPE)
        loaded = load_encoder(str(folder))
        segments = clark_segments(loaded.tokenizer, n_segments, 128, seed=0)
        out = {"family": loaded.family.label, "segments": len(segments),
               "extraction": extraction(loaded, segments, 16, naive=False)}
        clf = _classifier(folder, loaded)
        rows = clark_segments(loaded.tokenizer, 8, 64, seed=1)  # 8 x 64 pieces: 1 + 72 configs each, both ways
        labels = torch.tensor([i % 2 for i in range(len(rows))])
        batches = []
        for b in make_batches(rows, 8, loaded.tokenizer.pad_token_id or 0):
            b.labels = labels[b.index]
            batches.append(b)
        try:
            out["sweep_mask"] = sweep(clf, batches, "mask")
        except Exception as exc:  # noqa: BLE001 - the report says which family's sweep could not run, and why
            out["sweep_mask"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def bench_families(extraction, sweep, families: list[str] | None = None, n_segments: int = 48) -> dict:
    from tiny_families import FAMILIES

    return {f: bench_family(f, n_segments, extraction, sweep) for f in (families or FAMILIES)}


def rows(report: dict) -> list[tuple[str, str, str]]:
    """The README table's rows for :func:`bench_families`' report."""
    out = []
    for family, r in (report or {}).items():
        if not isinstance(r, dict) or "extraction" not in r:
            continue
        ex, sw = r["extraction"], r.get("sweep_mask", {})
        sweep = (f"sweep {sw['speedup']:.2f}x, diff {sw['max_abs_output_diff']:.1e}" if "speedup" in sw
                 else f"sweep: {sw.get('error', 'not run')}")
        out.append((f"{r['family']} (random, 6x12, hidden 384): extraction overhead; fast mask sweep vs naive",
                    f"overhead {ex.get('overhead')}; {sweep}", "<= 0.10; >= 2x, diff < 1e-5"))
    return out
