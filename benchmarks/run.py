"""`make bench`: speed and memory targets, measured side by side in one run, reported as ratios.

Writes ``benchmarks/results/latest.json`` (with the machine described) and the table in
``benchmarks/README.md``. Nothing here asserts a time; the targets are printed beside the measurements.

    python benchmarks/run.py [--quick] [--only extraction,memory,...]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from attnbook.chapters.params import chapter_params  # noqa: E402
from attnbook.core.io import atomic_write_json, atomic_write_text  # noqa: E402
from attnbook.engine.extract import make_batches, stream_attention  # noqa: E402
from attnbook.engine.models import load_encoder, wrap_model  # noqa: E402
from attnbook.studies.clark.segments import clark_segments  # noqa: E402
from attnbook.studies.clark.surface import SurfaceStats, surface_stats_reference  # noqa: E402
from measures import interleaved_pairs, overhead_text, paired_overhead  # noqa: E402


def machine() -> dict:
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    import psutil

    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "torch": torch.__version__, "threads": torch.get_num_threads(), "python": platform.python_version()}


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved_best(a, b, repeats: int = 5) -> tuple[float, float]:
    """Best-of-``repeats`` times of ``a`` and ``b``, run alternately so both see the same machine state."""
    ta, tb = interleaved_pairs(a, b, repeats)
    return min(ta), min(tb)


# ---- 1. extraction overhead ----------------------------------------------------------------------
def bench_extraction(loaded, segments, batch_size: int, repeats: int = 7, naive: bool = True) -> dict:
    pad = loaded.tokenizer.pad_token_id or 0
    batches = list(make_batches(segments, batch_size, pad))

    def bare():
        with torch.inference_mode():
            for b in batches:
                out = loaded.model(input_ids=b.input_ids, token_type_ids=b.token_type_ids,
                                   attention_mask=b.attention_mask, output_attentions=True)
                del out

    def streamed():
        stream_attention(loaded, segments, [SurfaceStats.for_tokenizer(loaded.tokenizer)],
                         batch_size=batch_size, progress=False)

    bare(); streamed()  # warm-up
    ta, tb = interleaved_pairs(bare, streamed, repeats=repeats)
    result = {"segments": len(segments), "batch_size": batch_size, "bare_forward_s": round(min(ta), 3),
              "with_all_statistics_s": round(min(tb), 3), **paired_overhead(ta, tb),
              "target": "overhead <= 0.10 (median of paired ratios)"}
    if not naive:
        return result
    n_naive = min(40, len(segments))

    def naive():
        maps = []
        with torch.inference_mode():
            for ex in segments[:n_naive]:  # one example at a time, every map kept
                ids = torch.tensor([ex.input_ids])
                out = loaded.model(input_ids=ids, token_type_ids=torch.tensor([ex.token_type_ids]),
                                   output_attentions=True)
                maps.append(torch.stack(out.attentions, 1)[0].numpy())
        surface_stats_reference(maps, [e.tokens for e in segments[:n_naive]], loaded.tokenizer)

    t_naive = best_of(naive, 1) * len(segments) / n_naive
    return {**result, "naive_s_extrapolated": round(t_naive, 2), "naive_over_streamed": round(t_naive / min(tb), 1)}


def bench_batch_sizes(loaded, segments) -> dict:
    out = {}
    for bs in (4, 8, 16, 32):
        t = best_of(lambda: stream_attention(loaded, segments, [SurfaceStats.for_tokenizer(loaded.tokenizer)],
                                             batch_size=bs, progress=False), 2)
        out[str(bs)] = round(len(segments) / t, 1)
    return {"segments_per_s_by_batch_size": out, "best": max(out, key=out.get)}


def bench_threads(loaded, segments) -> dict:
    out = {}
    for n in sorted({1, os.cpu_count() or 1}):
        torch.set_num_threads(n)
        t = best_of(lambda: stream_attention(loaded, segments, [SurfaceStats.for_tokenizer(loaded.tokenizer)],
                                             batch_size=16, progress=False), 2)
        out[str(n)] = round(len(segments) / t, 1)
    torch.set_num_threads(os.cpu_count() or 1)
    return {"segments_per_s_by_threads": out}


# ---- 2. memory -----------------------------------------------------------------------------------
MEMORY_CHILD = r"""
import json, re, sys, torch
from attnbook.engine.extract import stream_attention
from attnbook.engine.models import load_encoder
from attnbook.studies.clark.segments import clark_segments
from attnbook.studies.clark.surface import SurfaceStats


def rss(field):  # MiB, from /proc/self/status
    return int(re.search(field + r":\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024


loaded = load_encoder("embedded")
segs = clark_segments(loaded.tokenizer, int(sys.argv[1]), 128, seed=0)
stats = SurfaceStats.for_tokenizer(loaded.tokenizer)
stream_attention(loaded, segs[:16], [SurfaceStats.for_tokenizer(loaded.tokenizer)], batch_size=16, progress=False)
before = rss("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # reset the high-water mark: the peak below is the extraction's
stream_attention(loaded, segs, [stats], batch_size=16, progress=False)
print(json.dumps({"n": len(segs), "before_extraction_mib": before, "peak_rss_mib": rss("VmHWM"),
                  "extraction_peak_over_before_mib": rss("VmHWM") - before}))
"""


def bench_memory(repeats: int = 3) -> dict:
    """Peak RSS of the whole process for 100 and 1000 segments, each in ``repeats`` fresh processes (the median
    counts: glibc's heap makes single runs vary by about 10%), as the book runs (the engine lowers glibc's mmap
    threshold while batches stream: :mod:`attnbook.core.memory`) and, for reference, with glibc's default dynamic
    threshold (``ATTNBOOK_HEAP=default``)."""
    out: dict = {"target": "ratio <= 1.10", "repeats": repeats}
    for label, env in (("default", {}), ("glibc_default_heap", {"ATTNBOOK_HEAP": "default"})):
        runs = []
        for n in (100, 1000):
            for _ in range(repeats if label == "default" else 1):
                proc = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(n)], capture_output=True, text=True,
                                      check=True, env={**os.environ, **env})
                runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        peak = {n: float(np.median([r["peak_rss_mib"] for r in runs if r["n"] == n])) for n in (100, 1000)}
        ratio = round(peak[1000] / peak[100], 3)
        if label == "default":
            out.update(runs=runs, median_peak_mib=peak, ratio_1000_over_100=ratio)
        else:
            out[label] = {"runs": runs, "ratio_1000_over_100": ratio}
    return out


def matmul_gflops() -> float:
    a, b = torch.randn(1024, 768), torch.randn(768, 3072)
    torch.matmul(a, b)
    t = best_of(lambda: [torch.matmul(a, b) for _ in range(10)], 3)
    return 10 * 2 * 1024 * 768 * 3072 / t / 1e9


def forward_flops(n_layers: int, hidden: int, seq: int, intermediate: int) -> float:
    """Multiply-adds x 2 of one encoder forward pass over one sequence (attention maps included)."""
    per_layer = 4 * seq * hidden * hidden + 2 * seq * hidden * intermediate + 2 * seq * seq * hidden
    return 2.0 * n_layers * per_layer


def bench_paper_cost(tokenizer, n_measure: int = 48) -> dict:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(attn_implementation="eager")  # bert-base: 12 layers, 12 heads, hidden 768
    loaded = wrap_model(BertModel(cfg).eval(), tokenizer, "random bert-base-sized")
    segs = clark_segments(tokenizer, n_measure, 128, seed=0)
    segs = [s for s in segs]
    stream_attention(loaded, segs[:8], [SurfaceStats.for_tokenizer(tokenizer)], batch_size=8, progress=False)
    overhead = bench_extraction(loaded, segs, 16, repeats=3, naive=False)  # the same measurement as for the embedded model
    t = overhead["with_all_statistics_s"]
    mean_len = float(np.mean([len(s) for s in segs]))
    rate = matmul_gflops()
    floor_per_seg = forward_flops(12, 768, int(round(mean_len)), 3072) / (rate * 1e9)
    return {"measured_segments": n_measure, "mean_length": round(mean_len, 1),
            "minutes_for_1000_segments": round(t / n_measure * 1000 / 60, 2),
            "flop_floor_minutes_for_1000": round(floor_per_seg * 1000 / 60, 2),
            "ratio_to_floor": round((t / n_measure) / floor_per_seg, 2), "matmul_gflops": round(rate, 1),
            "bare_forward_s": overhead["bare_forward_s"], "with_all_statistics_s": t,
            "extraction_overhead": overhead["overhead"]}


# ---- optional parts owned by other modules -------------------------------------------------------
def bench_optional(name: str, fn) -> dict:
    try:
        return fn()
    except Exception as exc:  # a module that is missing is reported, not hidden
        return {"error": f"{type(exc).__name__}: {exc}"}


def _rte_classifier_batches(n: int = 48):
    """The embedded model with a (seeded, untrained) classification head and RTE dev batches: timing needs
    the real architecture and real inputs, not a trained head."""
    from transformers import AutoModelForSequenceClassification

    from attnbook.data.glue import load_split
    from attnbook.engine import sweeps
    from attnbook.engine.models import embedded_model_path, load_encoder

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(embedded_model_path()), num_labels=2, attn_implementation="eager").eval()
    tok = load_encoder("embedded").tokenizer
    split = load_split("RTE", "dev")
    exs = list(split.examples)[:n]
    batches = sweeps.classification_batches(tok, [e.text_a for e in exs], [e.text_b for e in exs],
                                            [int(e.label) for e in exs], batch_size=16, max_length=128)
    return model, batches


def bench_sweeps() -> dict:
    from measures import benchmark_sweep

    model, batches = _rte_classifier_batches()
    out = {mode: benchmark_sweep(model, batches, mode) for mode in ("disable", "mask")}
    out["target"] = "fast >= 2x naive, max abs logit diff < 1e-5"
    return out


def bench_importance() -> dict:
    """Michel §4.1: one forward+backward pass per batch gives every head's importance; compared with a forward."""
    from attnbook.studies.michel.importance import head_importance

    model, batches = _rte_classifier_batches()

    def forward():
        with torch.inference_mode():
            for b in batches:
                model(**b.inputs)

    t_fwd = best_of(forward, 2)
    t_imp = best_of(lambda: head_importance(model, batches), 2)
    return {"batches": len(batches), "forward_s": round(t_fwd, 3), "importance_s": round(t_imp, 3),
            "importance_over_forward": round(t_imp / t_fwd, 2),
            "passes": "one forward+backward per batch for all heads"}


def bench_training() -> dict:
    from measures import benchmark_throughput

    return benchmark_throughput()


def bench_speedups(loaded) -> dict:
    """This round's speed-ups, each timed against the code it replaced, alternately in one run (best of 3)."""
    import tempfile

    from measures import benchmark_arct_grouping, benchmark_checkpoint_load, benchmark_ranks

    from attnbook.engine.checkpoints import save_checkpoint
    from attnbook.engine.classifiers import build_classifier
    from attnbook.engine.finetune import base_encoder

    def timed(parts: dict, repeats: int = 3) -> dict:
        new, old = interleaved_best(parts.pop("fn_new"), parts.pop("fn_old"), repeats)
        return {**parts, "new_s": round(new, 4), "old_s": round(old, 4), "speedup": round(old / new, 2)}

    out = {"ranks": timed(benchmark_ranks()), "arct_grouping": timed(benchmark_arct_grouping(loaded), 2)}
    with tempfile.TemporaryDirectory() as tmp:
        save_checkpoint(build_classifier(base_encoder("embedded"), "SST-2", "pretrained_ft", 0), "bench", {},
                        root=Path(tmp))
        out["checkpoint_load"] = timed(benchmark_checkpoint_load(Path(tmp), "bench"), 5)
    return out


def bench_plan() -> dict:
    """``attnbook plan``'s estimates (quick and paper) with the rates it measured here, for the comparison with the
    measured book times in the table."""
    from attnbook.chapters.plan import make_plan

    out = {}
    for profile in ("quick", "paper"):
        plan = make_plan(profile)
        out[profile] = {"seconds": {c: round(v, 1) for c, v in plan.chapter_seconds().items()},
                        "rates": {k: float(f"{v:.4g}") for k, v in plan.rates.items()},  # in the plan's units
                        "model": plan.model,
                        "workers": plan.wall_time_rows([1, 2, 8, 64])}  # attnbook plan --workers 1 2 8 64
    return out


def book_times(previous: dict | None = None) -> dict:
    """Chapter times of the last ``make book`` per profile; else the ones of the previous report."""
    out = {}
    for p in sorted((HERE.parent / "book" / "results").glob("_times-*.json")):
        out[p.stem.removeprefix("_times-")] = json.loads(p.read_text())
    return out or previous or {"note": "run `make book` first to time the chapters"}


def previous_book_times() -> dict | None:
    try:
        return json.loads((RESULTS / "latest.json").read_text()).get("book_times")
    except (OSError, ValueError):
        return None


# ---- report --------------------------------------------------------------------------------------
def table(report: dict) -> str:
    ex, mem, paper = report.get("extraction", {}), report.get("memory", {}), report.get("paper_cost", {})
    rows = [
        ("extraction (embedded 6x12, hidden 384): all chapter-1 statistics vs bare forward with attentions",
         f"overhead {overhead_text(ex)}", "<= 0.10"),
        ("extraction (random bert-base 12x12, hidden 768): the same", f"overhead {paper.get('extraction_overhead')}",
         "<= 0.10"),
        ("extraction: naive per-example loop vs streamed", f"{ex.get('naive_over_streamed')}x slower", "(reference)"),
        ("memory: peak RSS, 1000 vs 100 segments (median of fresh processes, as the book runs)",
         f"ratio {mem.get('ratio_1000_over_100')}", "<= 1.10"),
        ("memory: the same with glibc's default dynamic mmap threshold (ATTNBOOK_HEAP=default)",
         f"ratio {mem.get('glibc_default_heap', {}).get('ratio_1000_over_100')}", "(reference)"),
        ("paper profile on CPU: random bert-base, 1000 x 128 tokens",
         f"{paper.get('minutes_for_1000_segments')} min (floor {paper.get('flop_floor_minutes_for_1000')} min)",
         "(cost)"),
    ]
    sw = report.get("sweeps", {})
    for mode in ("disable", "mask"):
        m = sw.get(mode)
        if isinstance(m, dict):
            rows.append((f"single-head {mode} sweep: fast vs naive", f"{m.get('speedup'):.2f}x, max diff "
                         f"{m.get('max_abs_output_diff'):.1e}" if m.get("max_abs_output_diff") is not None else
                         str(m), ">= 2x, diff < 1e-5"))
    from heap import rows as heap_rows
    from readers import rows as reader_rows

    rows += reader_rows(report.get("readers"))

    rows += heap_rows(report.get("heap"))
    from families import rows as family_rows

    rows += family_rows(report.get("families"))
    from libraries import rows as library_rows

    rows += library_rows(report.get("libraries"))
    from speed_row import rows as speed_row_rows

    rows += speed_row_rows(report.get("speed_row"))
    from precision import rows as precision_rows

    rows += precision_rows(report.get("precision"))
    imp = report.get("importance", {})
    if "importance_over_forward" in imp:
        rows.append(("importance scores (all heads) vs one forward pass", f"{imp['importance_over_forward']}x",
                     "one fwd+bwd per batch"))
    tr = report.get("training", {})
    if isinstance(tr, dict) and "embedded" in tr:
        rows.append(("fine-tuning throughput, batch 32 x 128 tokens",
                     f"embedded {tr['embedded']['examples_per_s']:.1f} ex/s, random bert-base "
                     f"{tr['bert_base_random']['examples_per_s']:.1f} ex/s ({tr['bert_base_slowdown']:.1f}x slower)",
                     "(cost)"))
    th, bs = report.get("threads", {}), report.get("batch_sizes", {})
    if th:
        rows.append(("extraction throughput by torch threads (segments/s)",
                     ", ".join(f"{k}: {v}" for k, v in th.get("segments_per_s_by_threads", {}).items()), "(choice)"))
    if bs:
        rows.append(("extraction throughput by batch size (segments/s)",
                     ", ".join(f"{k}: {v}" for k, v in bs.get("segments_per_s_by_batch_size", {}).items()), "(choice)"))
    sp = report.get("speedups", {})
    labels = {"ranks": "tie-averaged ranks (STS-B bootstraps): vectorised vs the loop it replaced",
              "arct_grouping": "chapter 7 training epoch: length-grouped vs random batches",
              "checkpoint_load": "loading a stored classifier: without vs with the throw-away initialisation"}
    for key, label in labels.items():
        m = sp.get(key)
        if isinstance(m, dict) and "speedup" in m:
            extra = (f", padding {m['padding_random']:.0%} -> {m['padding_grouped']:.0%}" if "padding_grouped" in m
                     else ", same logits" if m.get("same_logits") else "")
            rows.append((label, f"{m['speedup']:.2f}x ({m['old_s']} -> {m['new_s']} s){extra}", "(speed-up)"))
    times = report.get("book_times", {})
    plan = report.get("plan", {})
    for profile, t in times.items():
        if isinstance(t, dict) and "total" in t:
            est = plan.get(profile, {}).get("seconds", {})
            for chapter, seconds in t.items():
                if chapter != "total":
                    guess = (f"; `attnbook plan` said {est[chapter] / 60:.1f} min (measured/estimated "
                             f"{seconds / est[chapter]:.2f})" if est.get(chapter) else "")
                    rows.append((f"{profile} book: {chapter}", f"{seconds / 60:.1f} min{guess}",
                                 "plan within 1.5x" if guess else ""))
            first8 = sum(v for k, v in t.items() if k[:2].isdigit() and 1 <= int(k[:2]) <= 8)
            rows.append((f"{profile} book, chapters 1-8 (cold cache)", f"{first8 / 60:.1f} min",
                         "<= 30 min (issue 30)" if profile == "quick" else ""))
            rows.append((f"whole {profile} book (every page executed; cold cache)", f"{t['total'] / 60:.1f} min",
                         "<= 40 min with chapter 9 (issue 31)" if profile == "quick" else ""))
    from cluster import plan_rows
    from cluster import rows as cluster_rows

    rows += plan_rows(plan)
    rows += cluster_rows(report.get("cluster"))
    if "paper" in plan:
        rows.append(("`attnbook plan --profile paper` on this machine", f"{sum(plan['paper']['seconds'].values()) / 3600:.1f} h",
                     "(cost)"))
    lines = ["| benchmark | measured | target |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer segments (for a fast look)")
    ap.add_argument("--only", default="", help="comma-separated parts")
    ap.add_argument("--table", action="store_true", help="only re-render README.md from results/latest.json")
    args = ap.parse_args()
    if args.table:
        report = json.loads((RESULTS / "latest.json").read_text())
        report["book_times"] = book_times(report.get("book_times"))
        atomic_write_json(RESULTS / "latest.json", report)
        write_readme(report)
        return 0
    os.environ.setdefault("TQDM_DISABLE", "1")
    torch.set_num_threads(os.cpu_count() or 1)
    only = set(filter(None, args.only.split(",")))
    want = lambda name: not only or name in only  # noqa: E731
    loaded = load_encoder("embedded")
    n = 64 if args.quick else 200
    segments = clark_segments(loaded.tokenizer, n, 128, seed=0)
    report: dict = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M")}
    if only:  # a partial run updates the parts it measured in the last full report, and says so
        try:
            previous = json.loads((RESULTS / "latest.json").read_text())
            report = {**previous, "machine": report["machine"], "date": previous.get("date"),
                      "partial_updates": [*previous.get("partial_updates", []),
                                          {"date": time.strftime("%Y-%m-%d %H:%M"), "parts": sorted(only)}]}
        except (OSError, ValueError):
            pass
    if want("extraction"):
        report["batch_sizes"] = bench_batch_sizes(loaded, segments[:64])
        report["threads"] = bench_threads(loaded, segments[:64])
        # the overhead at the batch size chapter 1's quick profile uses (chosen from the sweep above)
        report["extraction"] = bench_extraction(loaded, segments, int(chapter_params("01_clark_surface_patterns", "quick").batch_size))
    if want("memory"):
        report["memory"] = bench_memory()
    if want("heap"):  # the engine's speed with glibc's mmap threshold fixed vs scoped (benchmarks/heap.py)
        from heap import bench_heap

        report["heap"] = bench_optional("heap", bench_heap)
    if want("paper_cost"):
        report["paper_cost"] = bench_paper_cost(loaded.tokenizer, 24 if args.quick else 48)
    if want("sweeps"):
        report["sweeps"] = bench_optional("sweeps", bench_sweeps)
    if want("importance"):
        report["importance"] = bench_optional("importance", bench_importance)
    if want("training"):
        report["training"] = bench_optional("training", bench_training)
    if want("speedups"):
        report["speedups"] = bench_optional("speedups", lambda: bench_speedups(loaded))
    if want("plan"):
        report["plan"] = bench_optional("plan", bench_plan)
    if want("cluster"):  # the smoke book serial, on a two-worker local cluster, and before Dask (cluster.py)
        from cluster import bench_cluster

        report["cluster"] = bench_optional("cluster", bench_cluster)
    if want("speed_row"):
        from speed_row import bench_speed_row

        report["speed_row"] = bench_optional("speed_row", lambda: bench_speed_row(loaded))
    if want("families"):
        from families import bench_families
        from measures import benchmark_sweep

        report["families"] = bench_optional("families", lambda: bench_families(bench_extraction, benchmark_sweep,
                                                                               n_segments=n))
    if want("libraries"):
        from libraries import bench_libraries

        report["libraries"] = bench_optional("libraries", lambda: bench_libraries(quick=args.quick))
    if want("readers"):  # the corpora through datasets vs the parsers they replaced (benchmarks/readers.py)
        from readers import bench_readers

        report["readers"] = bench_optional("readers", bench_readers)
    if want("precision"):  # the tolerance study of reduced precision (benchmarks/precision.py)
        import precision

        # the book's own quick recipe (its bf16 classifiers come from the cache after `make book`); --quick: a
        # smaller one (2,000 examples, two seeds) that still compares the precisions on the same seeds
        precision.main(["--train-cap", "2000", "--seeds", "0,1"] if args.quick else [])
        report["precision"] = json.loads((RESULTS / "precision.json").read_text())
    report["book_times"] = book_times(previous_book_times())
    RESULTS.mkdir(parents=True, exist_ok=True)
    atomic_write_json(RESULTS / "latest.json", report)
    write_readme(report)
    return 0


def write_readme(report: dict) -> None:
    md = table(report)
    partial = "".join(f" Re-measured {u['date']}: {', '.join(u['parts'])}." for u in report.get("partial_updates", []))
    atomic_write_text(HERE / "README.md", "# Benchmarks\n\n`make bench` measures these side by side in one run on "
                      f"{report['machine']['cpu']} ({report['machine']['cores']} cores), {report['date']}.{partial} "
                      "Raw numbers: `results/latest.json`. The book times come from `make book` "
                      "(`book/results/_times-<profile>.json`, copied into the report when `make bench` runs).\n\n"
                      + md + "\n")
    print(md)


if __name__ == "__main__":
    sys.exit(main())
