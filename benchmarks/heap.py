"""`make bench` part ``heap``: the engine's speed with each glibc heap setting (:mod:`attnbook.core.memory`).

From 26 to 27 November 2026 the engine fixed glibc's mmap threshold at 128 KiB for the whole process, and every
forward pass and training step ran at about two thirds of the machine's speed before anyone saw it. This row keeps
that from happening unseen again: fresh processes, alternately with ``ATTNBOOK_HEAP=fixed`` (the old behaviour) and
the book's default (``scoped``: the low threshold only while batches stream), each timing

* ``train``: fine-tuning updates of the embedded model (batch 32 x 128 tokens, float32, as
  :func:`measures.training_throughput` runs them),
* ``forward``: classification forward passes over RTE dev batches (what sweeps and evaluation run),
* ``stream``: chapter 1's statistics streamed over 100 segments, after the training and forward passes above. Both
  settings stream with the low threshold, but glibc maps fresh pages only when no free heap chunk fits: in a
  ``scoped`` process the heap that earlier work grew serves the batches, while a ``fixed`` one maps every large
  tensor. The first streaming in a fresh process (``make bench``'s memory child) maps in both.

The ratio fixed / scoped per measure is taken within each pair of processes, and the median over pairs is reported.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import torch
torch.set_num_threads(1)
from attnbook.core.memory import configure_heap
from attnbook.engine.extract import stream_attention
from attnbook.engine.models import load_encoder
from attnbook.studies.clark.segments import clark_segments
from attnbook.studies.clark.surface import SurfaceStats
from measures import training_throughput
from run import _rte_classifier_batches

def best(fn, k=3):
    out = []
    for _ in range(k):
        t = time.perf_counter(); fn(); out.append(time.perf_counter() - t)
    return min(out)

mode = configure_heap()
loaded = load_encoder("embedded")
segs = clark_segments(loaded.tokenizer, 100, 128, seed=0)
stats = lambda: [SurfaceStats.for_tokenizer(loaded.tokenizer)]
model, batches = _rte_classifier_batches(64)

def forward():
    with torch.inference_mode():
        for b in batches:
            model(**b.inputs)

forward()
stream_attention(loaded, segs[:16], stats(), batch_size=16, progress=False)
train = training_throughput("embedded", n_steps=4, warmup_steps=1, threads=1)
print(json.dumps({"mode": mode, "train_examples_per_s": train["examples_per_s"],
                  "forward_s": best(forward),
                  "stream_s": best(lambda: stream_attention(loaded, segs, stats(), batch_size=16, progress=False), 2)}))
"""


def run_child(mode: str) -> dict:
    env = {**os.environ, "ATTNBOOK_HEAP": mode, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(HERE.parent), str(HERE)], capture_output=True,
                          text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"heap bench child ({mode}) failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_heap(pairs: int = 3) -> dict:
    """``pairs`` pairs of fresh one-thread processes, ``fixed`` and ``scoped`` alternating (which goes first
    alternates too); per measure the median over pairs of the within-pair ratio fixed / scoped (above 1: the fixed
    threshold is slower; for training, examples/s are inverted so that above 1 means slower too)."""
    runs: list[dict] = []
    for i in range(pairs):
        order = ("fixed", "scoped") if i % 2 == 0 else ("scoped", "fixed")
        pair = {m: run_child(m) for m in order}
        runs.append(pair)
    ratios = {
        "train": [p["scoped"]["train_examples_per_s"] / p["fixed"]["train_examples_per_s"] for p in runs],
        "forward": [p["fixed"]["forward_s"] / p["scoped"]["forward_s"] for p in runs],
        "stream": [p["fixed"]["stream_s"] / p["scoped"]["stream_s"] for p in runs],
    }
    return {"pairs": runs, "fixed_over_scoped": {k: round(float(np.median(v)), 3) for k, v in ratios.items()},
            "ratios": {k: [round(x, 3) for x in v] for k, v in ratios.items()},
            "target": "train and forward: fixed slower than scoped (ratio > 1)"}


def rows(report: dict | None) -> list[tuple[str, str, str]]:
    """The README rows (benchmark, measured, target) of this part."""
    if not report:
        return []
    if "error" in report:
        return [("heap: fixed vs scoped mmap threshold", report["error"], "")]
    r, med = report["ratios"], report["fixed_over_scoped"]
    scoped = [p["scoped"] for p in report["pairs"]]
    fmt = lambda k: f"{med[k]:.2f}x ({', '.join(f'{x:.2f}' for x in r[k])})"  # noqa: E731
    return [
        ("heap: fine-tuning updates, embedded, 1 thread, `ATTNBOOK_HEAP=fixed` vs the default (scoped)",
         f"fixed {fmt('train')} slower; scoped "
         f"{np.median([s['train_examples_per_s'] for s in scoped]):.1f} ex/s", "> 1 (the book's setting faster)"),
        ("heap: classification forward passes (RTE dev, 64 pairs), fixed vs scoped", f"fixed {fmt('forward')} slower",
         "> 1"),
        ("heap: chapter 1's statistics streamed over 100 segments after that work, fixed vs scoped",
         f"fixed {fmt('stream')} slower (both stream with the low threshold; the scoped process reuses the heap its "
         "training grew)", "(reference)"),
    ]


if __name__ == "__main__":
    print(json.dumps(bench_heap(int(sys.argv[1]) if len(sys.argv) > 1 else 1), indent=1))
