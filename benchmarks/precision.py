"""`make bench` (or ``python benchmarks/precision.py``): the tolerance study of reduced precision, one row per use.

Issue 30: a use runs in reduced precision only after both precisions ran on the same seeds and showed (1) metric
differences within the seed spread, (2) head-effect rank correlation >= 0.95 between precisions where the use
computes head effects, and (3) the same verdict in every comparison row the use feeds. Each use below is measured
with the quick profile's recipe on the embedded model, and the table says per use whether it passed and whether the
book runs it in reduced precision.

* ``fine-tuning`` (bf16 autocast of the training passes; weights, optimiser and evaluation in float32): the quick
  recipe on ``--tasks`` over ``--seeds``, trained in float32 and in bf16 (every classifier cached, so the bf16 ones
  are the book's own). Per task: each seed's dev score (full dev set), the difference of the precisions' means
  against the larger seed standard deviation; Table 1's cell and gain rows (:func:`attnbook.studies.kovaleva.paper.
  rows.table1_comparisons`) judged on each precision's classifiers, verdicts compared. Head effects: two trainings
  follow different paths in either precision, so their single-head effects are compared against the same figure for
  two float32 seeds (the spread training itself has), not against 0.95.
* ``checkpoint storage`` (float16 changes against the encoder, :mod:`attnbook.engine.checkpoints`): per task, seed
  0's classifier trained in memory (float32, never stored) and its compact rebuild: dev scores, the share of equal
  predictions, the single-head effects' and the importance scores' rank correlations, the Table 1 cell verdicts.
* ``sweeps, importance, extraction`` (bf16 autocast at inference): the same float32 classifier swept (chapter 6's
  single-head masking on its dev sample) and scored (importance) in float32 and under bf16 autocast; chapter 1's
  statistics of 200 WikiText segments extracted both ways; the rank correlations per statistic and the speed-up
  (interleaved, best of 3).

Writes ``benchmarks/results/precision.json``; ``benchmarks/run.py`` puts its rows into the README's table.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE.parent))

from attnbook.core import cache
from attnbook.core.io import atomic_write_json

RANK_TARGET = 0.95


def spearman(a, b) -> float:
    from attnbook import stats

    return float(stats.spearman(np.ravel(a), np.ravel(b)))


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def _bf16():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def _sample(tokenizer, task: str, p6, recipe: dict):
    from attnbook.engine.evaluate import DEV_SAMPLE_SEED
    from attnbook.studies.heads_off import effects as heads_off

    _, batches = heads_off.task_data(tokenizer, task, "dev", p6.dev_cap, DEV_SAMPLE_SEED,
                                     batch_size=p6.batch_size, max_length=recipe["max_length"])
    _, imp = heads_off.task_data(tokenizer, task, "train", p6.importance_cap, 0, batch_size=p6.batch_size,
                                 max_length=recipe["max_length"])
    return batches, imp


def _effects(clf, batches, task: str, *, bf16: bool = False):
    """Single-head masking effects (chapter 6's sweep) and importance scores, never from the cache."""
    from attnbook.engine.scores import task_score_fn
    from attnbook.engine.sweeps import sweep_single_heads

    with cache.disabled(), (_bf16() if bf16 else torch.autocast("cpu", enabled=False)):
        sweep = sweep_single_heads(clf.model, batches, "mask", task_score_fn(task))
    return sweep


def _importance(clf, imp_batches, *, bf16: bool = False) -> np.ndarray:
    from attnbook.studies.michel.importance import head_importance

    with cache.disabled(), (_bf16() if bf16 else torch.autocast("cpu", enabled=False)):
        return np.asarray(head_importance(clf.model, imp_batches))


def _table(base, tasks, recipe, seeds):
    from attnbook.studies.kovaleva.paper.table1_rows import table1_comparisons
    from attnbook.studies.kovaleva.table1 import table1

    df = table1(base, tasks, recipe, seeds=seeds, random_seeds=seeds[:1], inits=("pretrained", "pretrained_ft"),
                progress=False)
    rows = table1_comparisons(df)
    return df, {f"{r.experiment}: {r.quantity}": r.verdict for r in rows}


def use_finetuning(base, tasks, seeds, recipe, p6, workers: int) -> dict:
    from attnbook.engine.finetune import get_finetuned, train_checkpoints

    out = {"use": "fine-tuning (bf16 autocast)", "tasks": {}}
    tables = {}
    for name, bf16 in (("bf16", True), ("fp32", False)):
        r = {**recipe, "bf16": bf16}
        jobs = [(t, "pretrained_ft", s) for t in tasks for s in seeds]
        (_, secs) = _timed(train_checkpoints, recipe["model"], jobs, r, workers=workers)
        df, verdicts = _table(base, tasks, r, seeds)
        tables[name] = (df, verdicts)
        out[f"train_seconds_{name}"] = round(secs, 1)
    effects_rho, seed_rho = {}, {}
    for task in tasks:
        dfs = {n: tables[n][0] for n in tables}
        per = {}
        for n, df in dfs.items():
            row = df[(df["task"] == task) & (df["init"] == "pretrained_ft")].iloc[0]
            per[n] = [float(row["seed_scores"][s]) if isinstance(row["seed_scores"], dict) and s in row["seed_scores"]
                      else float("nan") for s in seeds]
        diff = float(np.nanmean(per["bf16"]) - np.nanmean(per["fp32"]))
        spread = float(max(np.nanstd(per["bf16"], ddof=1), np.nanstd(per["fp32"], ddof=1)))
        batches, _ = _sample(base.tokenizer, task, p6, recipe)
        fx = {n: [] for n in ("bf16", "fp32")}
        for s in seeds[:2]:
            for n, bf16 in (("bf16", True), ("fp32", False)):
                clf, _ = get_finetuned(base, task, "pretrained_ft", {**recipe, "bf16": bf16}, s, evaluate_dev=False,
                                       progress=False)
                fx[n].append(_effects(clf, batches, task).delta)
        effects_rho[task] = spearman(fx["bf16"][0], fx["fp32"][0])
        seed_rho[task] = spearman(fx["fp32"][0], fx["fp32"][1]) if len(fx["fp32"]) > 1 else float("nan")
        out["tasks"][task] = {"scores": per, "mean_difference": round(diff, 3), "seed_sd": round(spread, 3),
                              "within_spread": bool(abs(diff) <= spread),
                              "effects_rho_precisions": round(effects_rho[task], 3),
                              "effects_rho_fp32_seeds": round(seed_rho[task], 3)}
    v16, v32 = tables["bf16"][1], tables["fp32"][1]
    out["verdicts_equal"] = v16 == v32
    out["verdict_differences"] = {k: [v16.get(k), v32.get(k)] for k in set(v16) | set(v32) if v16.get(k) != v32.get(k)}
    out["speedup"] = round(out["train_seconds_fp32"] / max(out["train_seconds_bf16"], 1e-9), 2) \
        if out["train_seconds_bf16"] > 1 else None
    out["passed"] = bool(out["verdicts_equal"] and all(t["within_spread"] for t in out["tasks"].values())
                         and all(effects_rho[t] >= min(RANK_TARGET, seed_rho[t]) for t in tasks))
    return out


def use_storage(base, tasks, recipe, p6) -> dict:
    """Seed 0 of each task trained in memory (float32), then rebuilt from its compact form."""
    import copy

    from attnbook.engine import checkpoints as C
    from attnbook.engine.finetune import _reference, get_finetuned

    out = {"use": "checkpoint storage (float16 changes)", "tasks": {}}
    ok = True
    for task in tasks:
        torch.set_num_threads(1)  # as the book's training workers
        with cache.disabled():
            exact, _ = get_finetuned(base, task, "pretrained_ft", recipe, 0, evaluate_dev=False, progress=False)
        torch.set_num_threads(os.cpu_count() or 1)
        state = exact.model.state_dict()
        ref = C._reference_of(exact.model, _reference(base, "pretrained_ft"))
        stored, deltas = C.compact_state(state, ref)
        rebuilt = copy.deepcopy(exact)
        rebuilt.model.load_state_dict(C.rebuild_state(stored, deltas, ref, {k: v.dtype for k, v in state.items()}))
        batches, imp = _sample(base.tokenizer, task, p6, recipe)
        a, b = _effects(exact, batches, task), _effects(rebuilt, batches, task)
        # a share of equal predicted classes; a regression head (one output) has no classes to compare
        same = float(np.mean(np.argmax(a.baseline_outputs, -1) == np.argmax(b.baseline_outputs, -1))) \
            if a.baseline_outputs.ndim > 1 and a.baseline_outputs.shape[-1] > 1 else None
        ia, ib = _importance(exact, imp), _importance(rebuilt, imp)
        rho_fx, rho_imp = spearman(a.delta, b.delta), spearman(ia, ib)
        row = {"score_exact": round(float(a.baseline_score), 4), "score_compact": round(float(b.baseline_score), 4),
               "max_output_difference": float(np.abs(a.baseline_outputs - b.baseline_outputs).max()),
               "equal_predictions": same, "effects_rho": round(rho_fx, 4), "importance_rho": round(rho_imp, 4),
               "bytes_exact": int(sum(t.numel() * t.element_size() for t in state.values())),
               "bytes_compact": int(sum(t.numel() * t.element_size() for t in stored.values()))}
        row["passed"] = bool(rho_fx >= RANK_TARGET and rho_imp >= RANK_TARGET
                             and abs(row["score_exact"] - row["score_compact"]) <= 0.5)
        ok &= row["passed"]
        out["tasks"][task] = row
    out["passed"] = bool(ok)
    return out


def use_inference(base, tasks, recipe, p6, n_segments: int = 200) -> dict:
    from attnbook.engine.extract import stream_attention
    from attnbook.engine.finetune import get_finetuned
    from attnbook.studies.clark.segments import clark_segments
    from attnbook.studies.clark.surface import SurfaceStats

    out = {"use": "sweeps, importance, extraction (bf16 autocast)", "tasks": {}}
    ok = True
    for task in tasks:
        clf, _ = get_finetuned(base, task, "pretrained_ft", recipe, 0, evaluate_dev=False, progress=False)
        batches, imp = _sample(base.tokenizer, task, p6, recipe)
        (a, ta) = _timed(_effects, clf, batches, task)
        (b, tb) = _timed(_effects, clf, batches, task, bf16=True)
        (ia, tia) = _timed(_importance, clf, imp)
        (ib, tib) = _timed(_importance, clf, imp, bf16=True)
        row = {"score_fp32": round(float(a.baseline_score), 4), "score_bf16": round(float(b.baseline_score), 4),
               "effects_rho": round(spearman(a.delta, b.delta), 4), "importance_rho": round(spearman(ia, ib), 4),
               "sweep_speedup": round(ta / tb, 2), "importance_speedup": round(tia / tib, 2)}
        row["passed"] = bool(row["effects_rho"] >= RANK_TARGET and row["importance_rho"] >= RANK_TARGET)
        ok &= row["passed"]
        out["tasks"][task] = row
    segs = clark_segments(base.tokenizer, n_segments=n_segments, max_tokens=128, seed=0)

    def extract(bf16: bool):
        stats = SurfaceStats.for_tokenizer(base.tokenizer)
        with (_bf16() if bf16 else torch.autocast("cpu", enabled=False)):
            stream_attention(base, segs, [stats], batch_size=16, progress=False)
        return stats.result()

    (ra, t32), (rb, t16) = _timed(extract, False), _timed(extract, True)
    rhos = {k: round(spearman(ra[k], rb[k]), 4) for k in ra
            if isinstance(ra[k], np.ndarray) and ra[k].shape == (base.n_layers, base.n_heads)}
    out["extraction"] = {"rho_by_statistic": rhos, "min_rho": min(rhos.values()), "speedup": round(t32 / t16, 2)}
    ok &= min(rhos.values()) >= RANK_TARGET
    out["passed"] = bool(ok)
    return out


def _fmt_scores(v) -> str:
    return " / ".join("nan" if np.isnan(x) else f"{x:.1f}" for x in v)


def rows(report: dict | None) -> list[tuple[str, str, str]]:
    """The README's rows: one per use and task, what was measured, and the decision."""
    if not report:
        return []
    out = []
    m = report.get("machine", {})
    where = f"{m.get('cpu', '?')}, native bf16: {'yes' if m.get('native_bf16') else 'no'}"
    ft = report.get("finetuning")
    if ft:
        cap = (ft.get("recipe") or report.get("recipe") or {}).get("train_cap")
        size = f"{cap} examples" if isinstance(cap, int) else "the book's quick recipe"
        for task, t in ft["tasks"].items():
            out.append((f"precision, fine-tuning {task} (bf16 vs fp32 training; {size}; {where})",
                        f"seeds {_fmt_scores(t['scores']['bf16'])} vs {_fmt_scores(t['scores']['fp32'])}; "
                        f"mean difference {t['mean_difference']:+.2f} (seed sd {t['seed_sd']:.2f}); head effects "
                        f"rho {t['effects_rho_precisions']:.2f} (two fp32 seeds: {t['effects_rho_fp32_seeds']:.2f})",
                        "difference <= seed sd; rho >= min(0.95, fp32 seeds')"))
        speed = ft.get("speedup")
        out.append(("precision, fine-tuning: verdicts of Table 1's rows, training time",
                    f"verdicts {'equal' if ft['verdicts_equal'] else 'differ: ' + str(ft['verdict_differences'])}; "
                    + (f"bf16 {ft['train_seconds_bf16']} s vs fp32 {ft['train_seconds_fp32']} s ({speed:.2f}x)" if speed
                       else "the bf16 classifiers came from the cache (trained by `make book`), so no training time "
                            "was compared in this run")
                    + f"; {'passed' if ft['passed'] else 'failed'}",
                    "bf16 where the hardware runs it natively (bf16=\"auto\"), else fp32"))
    st = report.get("storage")
    if st:
        for task, t in st["tasks"].items():
            out.append((f"precision, checkpoint storage {task} (float16 changes vs exact)",
                        f"score {t['score_exact']} vs {t['score_compact']}, equal predictions "
                        f"{'n/a (regression)' if t['equal_predictions'] is None else format(t['equal_predictions'], '.3f')}, effects rho {t['effects_rho']:.4f}, importance rho "
                        f"{t['importance_rho']:.4f}, {t['bytes_compact'] / 2**20:.0f} vs {t['bytes_exact'] / 2**20:.0f} MiB"
                        f"; {'passed' if t['passed'] else 'failed'}",
                        "rho >= 0.95, score within 0.5: adopted" if st["passed"] else "failed: stays exact"))
    for use, why in (report.get("not_run") or {}).items():
        out.append((f"precision, {use} ({where})", f"not measured in this run: {why}", "stays float32 here"))
    inf = report.get("inference")
    if inf:
        beside = f" ({inf['note']})" if inf.get("note") else ""
        for task, t in inf["tasks"].items():
            out.append((f"precision, sweeps and importance {task} (bf16 vs fp32 inference)",
                        f"effects rho {t['effects_rho']:.3f}, importance rho {t['importance_rho']:.3f}, sweep "
                        f"{t['sweep_speedup']:.2f}x, importance {t['importance_speedup']:.2f}x{beside}",
                        f"rho >= 0.95: {'passed' if t['passed'] else 'failed'}; the book's sweeps and importance stay fp32"))
        ex = inf.get("extraction")
        if ex:
            out.append(("precision, extraction (chapter 1's statistics, bf16 vs fp32)",
                        f"min rho over statistics {ex['min_rho']:.3f}, {ex['speedup']:.2f}x{beside}",
                        f"rho >= 0.95: {'passed' if ex['min_rho'] >= RANK_TARGET else 'failed'}; extraction stays fp32 "
                        "(its numbers stay those of the published book)"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default="SST-2,STS-B")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", default="finetuning,storage,inference")
    ap.add_argument("--train-cap", type=int, default=0,
                    help="training examples per classifier (0: the quick recipe's); smaller is cheaper and still "
                         "compares the precisions on the same seeds")
    args = ap.parse_args(argv)
    from attnbook.chapters.params import chapter_params
    from attnbook.chapters.profiles import glue
    from attnbook.engine.finetune import base_encoder

    tasks = args.tasks.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    p6 = chapter_params("06_michel_pruning", "quick")
    recipe = glue.recipe(chapter_params("04_kovaleva_taxonomy", "quick"))
    if args.train_cap:
        recipe = {**recipe, "train_cap": args.train_cap}
    recipe = {**recipe, "bf16": False, "save_at": []}  # the uses compare against float32; fine-tuning sets its own
    base = base_encoder(recipe["model"])
    only = set(args.only.split(","))
    path = RESULTS / "precision.json"
    report = json.loads(path.read_text()) if path.exists() else {}
    from attnbook.engine.precision import native_bf16

    report["measured"] = time.strftime("%Y-%m-%d %H:%M")
    report["machine"] = {"cpu": torch.backends.cpu.get_cpu_capability(), "native_bf16": native_bf16("cpu"),
                         "threads": torch.get_num_threads()}
    uses = {"finetuning": lambda: use_finetuning(base, tasks, seeds, recipe, p6, args.workers),
            "storage": lambda: use_storage(base, tasks, recipe, p6),
            "inference": lambda: use_inference(base, tasks, recipe, p6)}
    for use, measure in uses.items():
        if use not in only:
            continue
        # each use keeps the recipe it was measured with: uses measured in different runs may differ in it
        report[use] = {**measure(), "recipe": {"train_cap": recipe["train_cap"], "tasks": tasks, "seeds": seeds},
                       "measured": time.strftime("%Y-%m-%d %H:%M"), "machine": report["machine"]}
        (report.get("not_run") or {}).pop(use, None)  # measured now: no longer "not measured"
        print(json.dumps(report[use], indent=1), flush=True)
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(path, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
