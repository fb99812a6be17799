"""Did a fine-tuned classifier learn its task? The book's one answer, with its reason.

Every analysis of a fine-tuned classifier (Kovaleva's Table 1 and the heads it disables, Michel's masking, importance
and pruning, the head atlas) is about a model that learned something only when that model beats the task's constant
predictor (:func:`constant_outputs`: the majority class for accuracy, always the positive class for F1, a constant
score, r taken as 0, for Pearson r). :func:`learned` decides it from the classifier's dev outputs, in three checks,
the first that fails giving the reason:

1. it does not give one class to nearly every dev example (:data:`CONSTANT_PREDICTOR_SHARE`);
2. its score minus the constant predictor's, paired over the dev examples (the same bootstrap draws for both), has a
   95% interval above 0 (:func:`versus_constant`);
3. its score's own 95% interval (exact for accuracy, the percentile bootstrap for F1 and Pearson r:
   :func:`attnbook.engine.finetune.score_interval`) lies above the constant predictor's score.

Kovaleva and Michel both import this module; it imports neither.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from attnbook.data.glue import task_spec
from attnbook.data.glue_metrics import TABLE1_METRIC
from attnbook.engine.evaluate import metrics_from_logits, score_interval
from attnbook.engine.finetune import recipe_dev_outputs
from attnbook.engine.models import LoadedModel
from attnbook.stats import Estimate, bootstrap_counts, percentile_interval
from attnbook.studies.heads_off.effects import weighted_scores

#: Bootstrap resamples of the paired comparison with the constant predictor.
N_RESAMPLES = 2000

#: A classifier that gives one answer to at least this share of dev examples is a constant predictor.
CONSTANT_PREDICTOR_SHARE = 0.95


def metric_label(task: str) -> str:
    """What a task's Table 1 score measures: ``"F1"``, ``"Pearson r"`` or ``"accuracy"``."""
    return {"f1": "F1", "pearson": "Pearson r", "accuracy": "accuracy"}[TABLE1_METRIC[task_spec(task).name]]


def constant_outputs(task: str, labels: np.ndarray) -> np.ndarray:
    """Logits of the task's constant predictor on ``labels``: the majority class for accuracy, always the positive
    class for F1; for Pearson r a constant score (r taken as 0)."""
    spec = task_spec(task)
    labels = np.asarray(labels)
    out = np.zeros((len(labels), spec.num_labels), dtype=np.float32)
    if spec.is_regression:
        return out
    cls = 1 if TABLE1_METRIC[spec.name] == "f1" else int(np.argmax(np.bincount(labels.astype(np.int64),
                                                                                minlength=spec.num_labels)))
    out[:, cls] = 1.0
    return out


def resampled_scores(task: str, logits: np.ndarray, labels: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The task's Table 1 score (x 100) under each row of bootstrap ``counts[resample, example]`` (NaN as 0)."""
    return np.nan_to_num(weighted_scores(task, logits, labels, counts))


def score_of(task: str, logits: np.ndarray, labels: np.ndarray) -> float:
    """The task's Table 1 score (x 100) of ``logits`` (a Pearson r of a constant output counts as 0)."""
    return float(resampled_scores(task_spec(task).name, logits, np.asarray(labels), np.ones((1, len(labels))))[0])


def paired_difference(task: str, logits_a: np.ndarray, logits_b: np.ndarray, labels: np.ndarray, *,
                      n_resamples: int = N_RESAMPLES, seed: int = 0) -> tuple[Estimate, np.ndarray]:
    """Score of ``logits_a`` minus score of ``logits_b`` (points) on the same dev examples, with its paired
    bootstrap 95% interval (the same draws for both); also returns the resampled differences."""
    spec = task_spec(task)
    labels = np.asarray(labels)
    value = score_of(spec.name, logits_a, labels) - score_of(spec.name, logits_b, labels)
    counts = bootstrap_counts(len(labels), n_resamples, seed)
    d = resampled_scores(spec.name, logits_a, labels, counts) - resampled_scores(spec.name, logits_b, labels, counts)
    lo, hi = percentile_interval(d)
    return Estimate(value, float(lo), float(hi), len(labels), "dev examples"), d


def versus_constant(task: str, logits: np.ndarray, labels: np.ndarray, *, n_resamples: int = N_RESAMPLES,
                    seed: int = 0) -> Estimate:
    """The classifier's score minus its constant predictor's (:func:`constant_outputs`), paired over the dev
    examples: a classifier whose interval reaches 0 is no better than a constant predictor."""
    return paired_difference(task, logits, constant_outputs(task, labels), labels, n_resamples=n_resamples,
                             seed=seed)[0]


def constant_reason(top_class_share: float, vs_low: float, vs_high: float, constant: float, metric: str) -> str:
    """Checks 1 and 2 of :func:`learned` in words, or ``""`` when both pass."""
    if top_class_share == top_class_share and top_class_share >= CONSTANT_PREDICTOR_SHARE:
        return (f"our classifier gives one class to {top_class_share:.0%} of dev examples: a constant "
                "predictor, so the cell is the dev set's class balance, not what was learned")
    if vs_low == vs_low and vs_low <= 0:
        what = "Pearson 0" if metric == "Pearson r" else f"its constant predictor ({constant:.1f})"
        return (f"our classifier is no better than {what}: ours minus it "
                f"[{vs_low:+.1f}, {vs_high:+.1f}] points, paired over dev examples")
    return ""


@dataclass(frozen=True)
class Learned:
    """The verdict of :func:`learned` on one classifier: whether it learned its task, and if not why (``reason``),
    with the numbers behind it (the task's Table 1 score x 100, its 95% interval, the constant predictor's score on
    the same ``n`` dev examples, the paired difference from it, the share of the most frequent prediction)."""

    task: str
    learned: bool
    reason: str
    score: float
    low: float
    high: float
    constant: float
    n: int
    versus_constant_low: float
    versus_constant_high: float
    top_class_share: float

    def text(self, who: str = "") -> str:
        """``"seed 1: SST-2 50.2 [46.8, 53.6] on 872 dev examples, constant predictor 50.9"``."""
        lead = f"{who}: " if who else ""
        return (f"{lead}{self.task} {self.score:.1f} [{self.low:.1f}, {self.high:.1f}] on {self.n} dev examples, "
                f"constant predictor {self.constant:.1f}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def learned(task: str, logits: np.ndarray, labels: np.ndarray, *, n_resamples: int = N_RESAMPLES,
            seed: int = 0) -> Learned:
    """Whether the classifier of ``logits`` learned ``task`` on these dev examples (the module's three checks);
    the one decision every chapter uses."""
    spec = task_spec(task)
    labels = np.asarray(labels)
    m = metrics_from_logits(spec, logits, labels)
    vs = versus_constant(spec.name, logits, labels, n_resamples=n_resamples, seed=seed)
    si = score_interval(spec, logits, labels)
    constant = score_of(spec.name, constant_outputs(spec.name, labels), labels)
    share = float(m.get("top_class_share", float("nan")))
    why = constant_reason(share, vs.low, vs.high, constant, metric_label(spec.name))
    if not why and not si["score_low"] > si["constant_score"]:
        why = (f"its score's 95% interval [{si['score_low']:.1f}, {si['score_high']:.1f}] does not clear the constant "
               f"predictor's {si['constant_score']:.1f}")
    return Learned(spec.name, not why, why, float(m["score"]), float(si["score_low"]), float(si["score_high"]),
                   float(si["constant_score"]), int(len(labels)), float(vs.low), float(vs.high), share)


def learned_status(classifier: LoadedModel, task: str, recipe: Mapping[str, Any]) -> Learned:
    """:func:`learned` for a fine-tuned ``classifier`` on its recipe's dev sample (the cached dev outputs of
    :func:`attnbook.engine.finetune.recipe_dev_outputs`)."""
    out, _ = recipe_dev_outputs(classifier, task, recipe)
    return learned(task, out["logits"], out["labels"])


#: recipes tried for a task the quick recipe does not teach (written by ``benchmarks/rte_recipes.py``)
RECIPE_TRIALS = Path(__file__).resolve().parents[2] / "assets" / "rte_recipe_trials.json"


def recipe_trials_markdown(path: Path | None = None) -> str:
    """The recorded attempts to find a quick recipe that teaches RTE, as a table with where and when they were
    measured (each judged by :func:`learned` on the whole dev set); ``""`` when none is recorded. These numbers are a
    recorded measurement of ``benchmarks/rte_recipes.py``, not of the chapter's run, and the text says so."""
    path = Path(path) if path else RECIPE_TRIALS
    if not path.exists():
        return ""
    data = json.loads(path.read_text(encoding="utf-8"))
    lines = ["| epochs | learning rate | batch | seed | dev accuracy [95%] | constant predictor | learned? | "
             "training (CPU s) |", "|---|---|---|---|---|---|---|---|"]
    for t in data.get("trials", []):
        lines.append(f"| {t['epochs']:g} | {t['lr']:g} | {t['batch_size']} | {t['seed']} | {t['accuracy']:.1f} "
                     f"[{t['low']:.1f}, {t['high']:.1f}] | {t['constant']:.1f} | "
                     f"{'yes' if t['learned'] else 'no: ' + t['reason']} | {t['train_cpu_s']:,.0f} |")
    return (f"Recipes tried for RTE on the whole training set ({len(data.get('trials', []))} trials; recorded by "
            f"`benchmarks/rte_recipes.py` on {data.get('date', '?')}, {data.get('cpu', '?')}, commit "
            f"{data.get('commit', '?')}; training in {'bfloat16' if any(t.get('bf16') for t in data.get('trials', [])) else 'float32'}; "
            f"each judged on the {', '.join(sorted({str(t['n_dev']) for t in data.get('trials', [])}))} dev pairs by the "
            "same test of having learned as every chapter):\n\n"
            + "\n".join(lines))
