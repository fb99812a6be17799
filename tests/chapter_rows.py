"""The "paper vs this run" rows of chapters 4, 5, 6 and 8 made by the chapters' own row functions from constructed
measurements (no model runs), and saved as a chapter's results file: what the reviewed-outcomes test
(``test_reviewed_outcomes.py``) judges again and the results overview's layout test (``test_results_overview.py``)
lays out. The inputs are chosen so that every outcome occurs: agreeing, disagreeing, undecided and not comparable
claims, the book's own questions and experiments not reproduced."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from attnbook.chapters.results import ChapterResults
from attnbook.stats import Estimate

MODEL = {"name": "all-MiniLM-L6-v2 (embedded, test)", "fingerprint": "f", "n_layers": 6, "n_heads": 12}


def save(folder: Path, chapter: str, rows, profile: str = "quick") -> Path:
    """``rows`` as ``<chapter>.json`` in ``folder`` (through :meth:`ChapterResults.compare`, as a chapter does)."""
    res = ChapterResults(chapter, {"profile": profile, "seed": 0}, dict(MODEL))
    res.compare(*rows)
    return res.save(Path(folder))


# ----------------------------------------------------------------------------------------------- chapter 4
def _logits(pred: np.ndarray) -> np.ndarray:
    out = np.zeros((len(pred), 2), dtype=np.float32)
    out[np.arange(len(pred)), pred] = 1.0
    return out


def _table1_row(task: str, init: str, paper: float, labels: np.ndarray | None, pred: np.ndarray | None,
                note: str = "") -> dict:
    """A row of :func:`attnbook.studies.kovaleva.table1.table1` for one seed's predictions (or one not run)."""
    from attnbook.studies.heads_off.learned import constant_outputs, learned, score_of, versus_constant
    from attnbook.studies.kovaleva.table1 import score_estimate

    nan = float("nan")
    if labels is None:
        return {"task": task, "init": init, "metric": "accuracy", "paper": paper, "ours": nan, "ours_low": nan,
                "ours_high": nan, "unit": "", "note": note, "n_dev": 0, "n_dev_total": 0, "n_train": 0,
                "top_class_share": nan, "constant": nan, "vs_constant_low": nan, "vs_constant_high": nan,
                "outputs": None, "learned": {}, "seed_scores": {}}
    logits = _logits(pred)
    est = score_estimate(task, logits, labels, n_resamples=300)
    vs = versus_constant(task, logits, labels, n_resamples=300)
    return {"task": task, "init": init, "metric": "F1" if task == "MRPC" else "accuracy", "paper": paper,
            "ours": est.value, "ours_low": est.low, "ours_high": est.high, "unit": "dev examples", "note": note,
            "n_dev": len(labels), "n_dev_total": len(labels), "n_train": 1000,
            "top_class_share": float(np.max(np.bincount(pred, minlength=2)) / len(pred)),
            "constant": score_of(task, constant_outputs(task, labels), labels), "vs_constant_low": vs.low,
            "vs_constant_high": vs.high, "outputs": [(logits, labels)],
            "learned": {0: learned(task, logits, labels, n_resamples=300).reason}, "seed_scores": {0: est.value}}


def chapter4_rows() -> list:
    """Table 1 (constant-predictor cells of the paper judged on both sides, cells without data not reproduced),
    §4.1, Fig. 2, §4.2, §4.3 (relative depth) and §4.4-4.5."""
    from attnbook.studies.kovaleva import paper as kovaleva

    rng = np.random.default_rng(0)
    sst = np.r_[np.zeros(428), np.ones(444)].astype(int)
    mrpc = np.r_[np.ones(279), np.zeros(129)].astype(int)
    rte = np.r_[np.zeros(146), np.ones(131)].astype(int)
    noisy = lambda y, p: np.where(rng.random(len(y)) < p, y, 1 - y)  # noqa: E731
    missing = "not run: train.tsv not in the data directory"
    df = pd.DataFrame([
        _table1_row("SST-2", "pretrained", 49.1, sst, rng.integers(0, 2, len(sst))),
        _table1_row("SST-2", "random_ft", 80.5, sst, noisy(sst, 0.78)),
        _table1_row("SST-2", "pretrained_ft", 92.0, sst, noisy(sst, 0.86)),
        _table1_row("MRPC", "pretrained", 0.0, mrpc, np.zeros(len(mrpc), int)),
        _table1_row("MRPC", "random_ft", 81.2, mrpc, np.ones(len(mrpc), int)),
        _table1_row("MRPC", "pretrained_ft", 87.9, mrpc, noisy(mrpc, 0.8)),
        _table1_row("RTE", "pretrained", 52.7, rte, rng.integers(0, 2, len(rte))),
        _table1_row("RTE", "random_ft", 52.7, rte, np.zeros(len(rte), int)),
        _table1_row("RTE", "pretrained_ft", 64.6, rte, noisy(rte, 0.55)),
        *[_table1_row(t, i, p, None, None, missing) for t, i, p in (
            ("QQP", "random_ft", 0.0), ("QQP", "pretrained_ft", 65.2), ("QNLI", "random_ft", 49.5),
            ("QNLI", "pretrained_ft", 84.4), ("MNLI-m", "random_ft", 61.0), ("MNLI-m", "pretrained_ft", 78.6))],
    ])
    learned = kovaleva.learned_tasks(df)
    rows = kovaleva.table1_comparisons(df, n_resamples=300)
    rows += kovaleva.taxonomy_comparisons(Estimate(0.62, 0.55, 0.69, 250, "labelled maps"),
                                          Estimate(0.31, 0.25, 0.37, 250, "reviewed maps"), reviewed=True, n_maps=250)
    share = lambda het, ver, w: {"Heterogeneous": Estimate(het, het - w, het + w, 200, "inputs"),  # noqa: E731
                                 "Vertical": Estimate(ver, ver - w, ver + w, 200, "inputs")}
    rows += kovaleva.fig2_comparisons({"SST-2": share(0.45, 0.5, 0.03), "MRPC": share(0.1, 0.2, 0.02),
                                       "RTE": share(0.45, 0.3, 0.2)}, learned)
    rows += kovaleva.framenet_comparisons(51, 1, 72, Estimate(0.30, 0.22, 0.37, 51, "instances"), "3-4",
                                          Estimate(0.05, -0.02, 0.12, 49, "instances (paired)"))

    def changes(top, noise):
        change = np.full(6, 0.1)
        change[list(top)] = [0.5, 0.4]
        return {"change": change, "resampled": change[None] + noise * rng.standard_normal((300, 6)), "n": 200}

    rows += kovaleva.change_comparisons({"SST-2": changes((5, 4), 0.0), "MRPC": changes((4, 5), 0.0),
                                         "RTE": changes((5, 4), 0.3)}, learned)
    claims = {"SST-2": {"dominate": np.ones(300, bool), "order": np.zeros(300, bool),
                        "cls_top": rng.random(300) < 0.6, "small_gain": np.ones(300, bool)},
              "RTE": {"dominate": np.ones(300, bool)}}
    point = {"SST-2": {"dominate": True, "order": False, "cls_top": True, "small_gain": True}, "RTE": {"dominate": True}}
    rows += kovaleva.feature_comparisons(claims, point, {"SST-2": 200, "RTE": 200}, learned)
    return rows


# ----------------------------------------------------------------------------------------------- chapter 5
def chapter5_rows() -> list:
    """§4.6 over seeds and one seed, Fig. 9's layers, §5's word matching."""
    from attnbook.studies.kovaleva import paper as kovaleva

    e = lambda v: Estimate(v[0], v[1], v[2], 96, "dev examples (paired)")  # noqa: E731

    from attnbook.studies.kovaleva.crossfit import SplitChanges

    def split(layers, seed=0):
        """Each layer's change on two halves of 96 examples, and in 200 resamples (the layer's centre, spread 1)."""
        centre = np.array([v[0] for v in layers])
        draws = centre[None, None, :] + np.random.default_rng(seed).normal(0.0, 1.0, (2, 200, len(layers)))
        return SplitChanges(np.stack([centre, centre]), draws, [f"layer {i + 1}" for i in range(len(layers))], 96)

    def effects(best, mean, layers):
        return {"best_head": "2-3", "best": e(best), "mean": e(mean), "layers": [e(v) for v in layers],
                "survives": False, "layer_split": split(layers)}

    sst = {s: effects(b, (0.1, -0.3, 0.5), ((0.3, -1.2, 1.8), (-0.4, -1.9, 1.1))) for s, b in
           ((0, (1.0, 0.2, 1.8)), (1, (0.9, 0.1, 1.7)), (2, (0.2, -0.6, 1.0)))}
    mrpc = {s: effects(b, (0.4, 0.1, 0.7), ((2.5, 1.0, 4.0), (-0.2, -0.8, 0.4))) for s, b in
            ((0, (1.5, 0.4, 2.6)), (1, (1.1, 0.2, 2.0)), (2, (1.3, 0.3, 2.3)))}
    sts = effects((0.4, -0.9, 1.7), (0.0, -0.2, 0.2), ((-3.0, -4.5, -1.5), (0.1, -0.4, 0.6)))
    matches = {"STS-B": {"mean_percentile": Estimate(0.9, 0.8, 0.97, 96), "percentiles": {"2-3": 0.9, "4-1": 0.95}},
               "RTE": {"mean_percentile": Estimate(0.5, 0.2, 0.8, 64), "percentiles": {"1-1": 0.5}}}
    return kovaleva.disabling_comparisons(
        {"SST-2": sst[0], "MRPC": mrpc[0], "STS-B": sts},
        {"SST-2": "", "MRPC": "", "STS-B": "", "RTE": "no seed's classifier beats its constant predictor"},
        {"STS-B": matches["STS-B"]}, 3, "quick", seed_effects={"SST-2": sst, "MRPC": mrpc},
        agreement={"SST-2": {"spearman": 0.4, "overlap": 0.33, "chance": 0.04, "pairs": 3}})


# ----------------------------------------------------------------------------------------------- chapter 6
def _flip_sweep(n: int, flips: list[int], shape=(6, 12), correct: float = 0.8):
    """A masking sweep on ``n`` examples where head ``i`` flips ``flips[i]`` examples (positive: to right)."""
    from attnbook.engine.sweeps import SweepResult

    gold = np.zeros(n, dtype=np.int64)
    n_ok = int(round(correct * n))
    base = np.zeros((n, 2))
    base[:n_ok, 0] = 1.0
    base[n_ok:, 1] = 1.0
    k = int(np.prod(shape))
    outs = np.repeat(base[None], k, axis=0)
    for i, f in enumerate(flips):
        for r in (range(n_ok, n_ok + f) if f > 0 else range(0, -f)):
            outs[i, r] = [1.0, 0.0] if f > 0 else [0.0, 1.0]
    scores = np.array([100.0 * np.mean(o.argmax(1) == gold) for o in outs]).reshape(shape)
    return SweepResult("single_heads", "mask", scores, 100.0 * n_ok / n, outs.reshape(*shape, n, 2), base, gold,
                       [f"{i // shape[1] + 1}-{i % shape[1] + 1}" for i in range(k)])


def _curve_stats(safe: dict, area: dict, spread: float, n: int = 160) -> dict:
    from attnbook.studies.michel import pruning as mp

    rng = np.random.default_rng(1)
    out = {}
    for name in (mp.BY_IMPORTANCE, mp.BY_ABLATION, mp.RANDOM):
        sd = safe[name] + spread * rng.standard_normal(400)
        ad = area[name] + 2.0 * rng.standard_normal(400)
        out[name] = {"safe": Estimate(safe[name], *np.quantile(sd, [0.025, 0.975]), n, "dev examples"),
                     "area": Estimate(area[name], *np.quantile(ad, [0.025, 0.975]), n, "dev examples"),
                     "safe_draws": sd, "area_draws": ad}
    return out


def chapter6_rows() -> list:
    """Every row of :func:`attnbook.studies.michel.paper.comparisons` on three constructed seeds."""
    from attnbook.studies.heads_off import effects as hs
    from attnbook.studies.michel import paper
    from attnbook.studies.michel import pruning as mp

    rng = np.random.default_rng(2)
    runs = []
    for seed in range(3):
        sweep = _flip_sweep(160, list(rng.integers(-3, 2, 72)))
        effects, draws = hs.effect_intervals(sweep, "SST-2", n_resamples=300, seed=seed)
        runs.append(SimpleNamespace(seed=seed, ablation=sweep, effects=effects, effect_draws=draws,
                                    curve_stats=_curve_stats({mp.BY_IMPORTANCE: 0.2, mp.BY_ABLATION: 0.3,
                                                              mp.RANDOM: 0.1}, {mp.BY_IMPORTANCE: 75.0,
                                                                                mp.BY_ABLATION: 76.0,
                                                                                mp.RANDOM: 70.0}, 0.08)))
    chosen = pd.DataFrame({"layer": range(1, 7), "label": [f"{i + 1}-1" for i in range(6)],
                           "delta": [0.0, -0.6, 0.6, -1.2, 0.0, -4.0], "low": [-2.5, -3.1, -1.9, -3.7, -2.5, -6.5],
                           "high": [2.5, 1.9, 3.1, 1.3, 2.5, -1.5], "n": 80})
    agreement = {"rho_importance": Estimate(0.55, 0.3, 0.8, 3, "seed pairs"),
                 "rho_ablation": Estimate(0.1, -0.4, 0.6, 3, "seed pairs"),
                 "top_importance": Estimate(0.5, 0.35, 0.65, 3, "seed pairs"),
                 "top_ablation": Estimate(0.2, 0.05, 0.35, 3, "seed pairs"),
                 "pairs": pd.DataFrame({"seeds": ["0 vs 1", "0 vs 2", "1 vs 2"]}), "k": 10, "chance": 0.14}
    gains = [[1.0, 1.5, 0.5, 1.2, 0.8, 1.1], [3.0, -2.0, 4.0, 1.0, -1.0, 2.0]]
    speed = mp.speed_summary(pd.DataFrame([{"batch_size": b, "repeat": r, "original": 10.0,
                                            "pruned": 10.0 * (1 + g[r] / 100), "gain_pct": g[r], "n_pruned": 14}
                                           for b, g in zip((1, 4), gains) for r in range(len(g))]))
    dyn = {"10% of training": {"unpruned": Estimate(52.0, 45.0, 59.0, 160), "safe": Estimate(0.9, 0.8, 1.0, 160),
                               "safe_draws": np.full(10, 0.9)},
           "50% of training": {"unpruned": Estimate(78.0, 72.0, 84.0, 160), "safe": Estimate(0.1, 0.0, 0.2, 160),
                               "safe_draws": np.full(10, 0.1)},
           "100% of training": {"unpruned": Estimate(82.0, 76.0, 88.0, 160), "safe": Estimate(0.2, 0.1, 0.3, 160),
                                "safe_draws": np.full(10, 0.2)}}
    return paper.comparisons(
        runs=runs, analysable=True, chosen=chosen, one_head=Estimate(-18.8, -30.0, -8.0, 80),
        across=[Estimate(0.3, 0.1, 0.5, 160), Estimate(0.5, 0.3, 0.7, 160), Estimate(0.2, 0.0, 0.4, 160)],
        between="dev half A vs half B", out_of_domain=False, task_pairs=[("SST-2", "MRPC", 0.12), ("SST-2", "RTE", 0.3)],
        agreement=agreement, speed=speed, share=0.2, dynamics=dyn, constant=50.9,
        disable_vs_mask={"spearman": 0.45}, tolerance=1.0)


# ----------------------------------------------------------------------------------------------- chapter 8
def chapter8_rows() -> list:
    """Every question of the head atlas on a constructed 6 x 12 model: some relations planted, some not."""
    from attnbook.atlas import questions
    from attnbook.atlas.sources import Measurements

    rng = np.random.default_rng(5)
    L, H = 6, 12
    margin = rng.uniform(0, 0.5, size=(L, H))
    classes = ("Vertical", "Diagonal", "Vertical+diagonal", "Block", "Heterogeneous")
    cls = rng.integers(0, 3, size=(L, H))
    entropy = rng.uniform(1, 4, size=(L, H))
    order = [divmod(int(k), H) for k in np.argsort(-entropy.ravel(), kind="stable")]  # broad heads pruned first
    surface = {k: rng.uniform(0, 0.3, size=(L, H)) for k in ("prev", "next", "self", "cls", "sep", "punct")}
    surface["entropy"] = entropy
    flat = rng.normal(scale=0.1, size=(L, H))
    m = Measurements(
        n_layers=L, n_heads=H, surface=surface,
        syntax={"relations": ["nsubj"], "accuracy": (margin + 0.2)[None], "baseline": np.array([0.2]),
                "offset": np.array([1])},
        patterns={"pre-trained": np.eye(len(classes))[cls] * 10}, pattern_classes=classes,
        framenet={"mean": flat, "heads": [(1, 2), (4, 7)]},
        disabling={"SST-2": {"delta": flat, "low": flat - 0.4, "high": flat + 0.4, "n": 872},
                   "MRPC": {"delta": flat - 2.5, "low": flat - 3.5, "high": flat - 1.5, "n": 408},
                   "STS-B": {"delta": flat, "low": flat - 3.0, "high": flat + 3.0, "n": 96}},
        importance={"SST-2": margin + rng.normal(scale=0.05, size=(L, H)), "MRPC": rng.normal(size=(L, H))},
        main_task="SST-2",
        pruning={"order": order, "safe_share": 0.1, "n_safe": 7, "tolerance": 1.0, "step": 0.1, "first_step": 7},
        notes={"disabling/RTE": "not swept in chapter 5: not learned"})
    answers = (questions.syntax_vs_importance(m, n_permutations=199, n_resamples=300)
               + questions.pattern_vs_effects(m, n_permutations=199)
               + questions.framenet_switched_off(m, n_permutations=199)
               + questions.pruned_first(m, n_permutations=199, n_resamples=300))
    return questions.comparison_rows(answers)


#: chapter id -> its rows
BUILDERS = {"04_kovaleva_taxonomy": chapter4_rows, "05_kovaleva_disabling": chapter5_rows,
            "06_michel_pruning": chapter6_rows, "08_head_atlas": chapter8_rows}
