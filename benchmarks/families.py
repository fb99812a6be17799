"""`make bench`, one row per encoder family: extraction overhead and the fast single-head sweep against the naive one.

Each family's model is random, of the embedded model's size (6 layers x 12 heads, hidden 384, feed-forward 1536),
with a tokenizer of the family's kind built offline (``tests/tiny_families.py``): speed depends on the shapes and the
attention code, not on the weights. The segments are chapter 1's WikiText-2 pairs framed by that tokenizer, as many
as the embedded model's own extraction row uses (200; 64 with ``--quick``). Measured on the AVX2 machine of
2026-11-26: with 48 segments (three batches) the random BERT's overhead read 0.138 and 0.147 in two runs; with 200 it
read 0.081, 0.023, 0.021 and 0.056 in four (the embedded model 0.079). Fewer segments inflated it; the spread that
remains at 200 is the machine's, and a ratio of best times is a fragile statistic for it. So the row times the two
in 7 alternating pairs and reports the median of the pairs' ratios with its interval (:func:`measures.
paired_overhead`, as chapter 6 times pruning). In the run of 2026-11-26 14:26 (the same machine, slower that day:
8.2 s for a bare pass over the 200 segments) the best-times ratio read 0.129 for ELECTRA, 0.146 for RoBERTa and 0.113
for MPNet, and the paired medians 0.070, 0.054 and 0.066; every family's median was 0.040-0.093.

The sweep's "same logits" is judged against float32's own rounding, not a fixed number: a random classifier's logits
reached 2.5 to 29 in that run, and the same unmasked forward run as one batch and one input at a time already
differed by up to 1.3e-5. The row gives the fast-vs-naive difference, the largest logit,
and that batch-shape difference (``float32_reference``); the target is a difference under 1e-5 of the largest logit.
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
from measures import overhead_text  # noqa: E402

#: the embedded model's shape, for every family
MINILM_SHAPE = {"hidden": 384, "layers": 6, "heads": 12, "intermediate": 1536, "positions": 512}


def _classifier(folder: Path, loaded):
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(folder), num_labels=2, attn_implementation="eager")
    return wrap_model(model.eval(), loaded.tokenizer, f"{loaded.name} (random classifier)", check=False)


def batch_shape_difference(model, batches) -> float:
    """The largest |difference| between the unmasked model's outputs on each batch run whole and one input at a
    time (the sweeps' own inputs and output, :func:`attnbook.engine.sweeps.as_batches` and ``output_of``): how far
    float32 rounding alone moves the same computation when only the batch's shape changes."""
    from attnbook.engine import sweeps

    net = model.model
    worst = 0.0
    with torch.inference_mode():
        for b in sweeps.as_batches(batches):
            whole = sweeps.output_of(net(**b.inputs))
            n = len(next(iter(b.inputs.values())))
            single = torch.cat([sweeps.output_of(net(**{k: v[i:i + 1] for k, v in b.inputs.items()})) for i in range(n)])
            worst = max(worst, float((whole - single).abs().max()))
    return worst


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
            out["float32_reference"] = batch_shape_difference(clf, batches)
            out["sweep_mask"] = sweep(clf, batches, "mask")
        except Exception as exc:  # noqa: BLE001 - the report says which family's sweep could not run, and why
            out["sweep_mask"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def bench_families(extraction, sweep, families: list[str] | None = None, n_segments: int = 200) -> dict:
    from tiny_families import FAMILIES

    return {f: bench_family(f, n_segments, extraction, sweep) for f in (families or FAMILIES)}


def rows(report: dict) -> list[tuple[str, str, str]]:
    """The README table's rows for :func:`bench_families`' report."""
    out = []
    for family, r in (report or {}).items():
        if not isinstance(r, dict) or "extraction" not in r:
            continue
        ex, sw = r["extraction"], r.get("sweep_mask", {})
        if "speedup" in sw and sw.get("max_abs_output"):
            sweep = (f"sweep {sw['speedup']:.2f}x, diff {sw['max_abs_output_diff']:.1e} = "
                     f"{sw['max_abs_output_diff'] / sw['max_abs_output']:.1e} of the largest logit "
                     f"({sw['max_abs_output']:.1f}; one batch vs one input at a time: {r['float32_reference']:.1e})")
        elif "speedup" in sw:  # a report from before the largest logit was recorded
            sweep = f"sweep {sw['speedup']:.2f}x, diff {sw['max_abs_output_diff']:.1e}"
        else:
            sweep = f"sweep: {sw.get('error', 'not run')}"
        out.append((f"{r['family']} (random, 6x12, hidden 384, {ex.get('segments')} segments): extraction overhead; "
                    "fast mask sweep vs naive", f"overhead {overhead_text(ex)}; {sweep}",
                    "<= 0.10; >= 2x, diff < 1e-5 of the largest logit"))
    return out
