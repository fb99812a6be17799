"""`make bench`: chapter 6's pruning speed-up row (Michel §4.3) measured on a quiet machine and beside a competitor.

The row's measurement is the chapter's own (:func:`attnbook.studies.michel.pruning.speed_runs` with the quick
profile's batch sizes, examples and repeats; the embedded model with a random classification head and random
importance scores: speed depends on the shapes, not the weights). It runs twice in one bench run: alone, then while
two busy processes (one per core) compete for the CPU. The row's outcome (:func:`attnbook.studies.michel.paper.
speed_rows`) must be the same both times.
"""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

BUSY = "import time\nend = time.time() + 600\nwhile time.time() < end:\n    pass\n"


def _measure(classifier, pool, importance, p) -> dict:
    from attnbook.studies.michel import paper
    from attnbook.studies.michel import pruning as mp

    start = time.perf_counter()
    runs = mp.speed_runs(classifier, pool, importance, 0.5, batch_sizes=p.speed_batch_sizes,
                         n_examples=p.speed_examples, repeats=p.speed_repeats)
    summary = mp.speed_summary(runs)
    row = paper.speed_rows(summary, 0.5)[0]
    gains = {int(b): g.text("+.1f") for b, g in zip(summary["batch_size"], summary["gain"])}
    return {"seconds": round(time.perf_counter() - start, 1), "gains": gains, "row": row.ours, "verdict": row.verdict}


def bench_speed_row(loaded) -> dict:
    from attnbook.chapters.params import chapter_params
    from attnbook.engine.classifiers import build_classifier
    from attnbook.engine.inputs import make_batches
    from attnbook.studies.clark.segments import clark_segments
    from attnbook.studies.michel import pruning as mp

    p = chapter_params("06_michel_pruning", "quick")
    classifier = build_classifier(loaded, "SST-2", "pretrained", seed=0)
    pad = loaded.tokenizer.pad_token_id or 0
    segments = clark_segments(loaded.tokenizer, p.speed_examples, 128, seed=0)
    pool = mp.throughput_pool(list(make_batches(segments, 32, pad)), p.speed_examples, pad)
    importance = np.random.default_rng(0).random((loaded.n_layers, loaded.n_heads))
    quiet = _measure(classifier, pool, importance, p)
    competitors = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    try:
        busy = _measure(classifier, pool, importance, p)
    finally:
        for proc in competitors:
            proc.kill()
            proc.wait()
    return {"quiet": quiet, "busy": busy, "same_verdict": quiet["verdict"] == busy["verdict"],
            "repeats": p.speed_repeats, "examples": p.speed_examples}


def rows(report: dict | None) -> list[tuple[str, str, str]]:
    if not isinstance(report, dict) or "quiet" not in report:
        return []
    q, b = report["quiet"], report["busy"]
    return [("chapter 6 speed-up row (§4.3), quiet vs two competing busy processes",
             f"quiet {q['row']} ({q['verdict']}); busy {b['row']} ({b['verdict']}); "
             f"same outcome: {'yes' if report['same_verdict'] else 'no'}", "same outcome")]
