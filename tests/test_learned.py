"""The book's one decision on whether a fine-tuned classifier learned its task (studies/heads_off/learned.py)."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from attnbook.studies.heads_off.learned import CONSTANT_PREDICTOR_SHARE, Learned, constant_outputs, learned

ROOT = Path(__file__).resolve().parents[1] / "attnbook"


def _labels(n=400, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    labels[:60] = 1  # a majority class
    return rng, labels


def test_a_constant_predictor_did_not_learn_and_says_why():
    _, labels = _labels()
    verdict = learned("SST-2", constant_outputs("SST-2", labels), labels)
    assert isinstance(verdict, Learned) and not verdict.learned
    assert "gives one class to 100% of dev examples" in verdict.reason
    assert verdict.top_class_share == 1.0 >= CONSTANT_PREDICTOR_SHARE


def test_a_good_classifier_learned():
    rng, labels = _labels()
    good = np.eye(2, dtype=np.float32)[np.where(rng.random(400) < 0.9, labels, 1 - labels)]
    verdict = learned("SST-2", good, labels)
    assert verdict.learned and verdict.reason == "" and verdict.low > verdict.constant
    assert verdict.versus_constant_low > 0 and verdict.n == 400
    assert verdict.text("seed 0").startswith("seed 0: SST-2 ")


def test_a_classifier_at_chance_fails_the_paired_check():
    rng, labels = _labels()
    noise = np.eye(2, dtype=np.float32)[rng.integers(0, 2, size=400)]  # mixed answers, unrelated to the labels
    verdict = learned("SST-2", noise, labels)
    assert not verdict.learned and "no better than its constant predictor" in verdict.reason


def test_pearson_tasks_are_judged_against_zero():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=300)
    assert learned("STS-B", (scores + rng.normal(scale=0.5, size=300))[:, None], scores).learned
    noise = learned("STS-B", rng.normal(size=(300, 1)), scores)
    assert not noise.learned and "Pearson 0" in noise.reason


def test_no_other_module_decides_whether_a_classifier_learned():
    """Regression (issue 28): the decision was made in 8+ places (score_interval's "learned", Kovaleva's
    learned_reason, the heads-off learned_status, ...). Only heads_off/learned.py may compare a score's interval with
    the constant predictor's or compute a top-class share threshold."""
    offenders = []
    for path in ROOT.rglob("*.py"):
        if path.name == "learned.py":
            continue
        text = path.read_text()
        for needle in ('"learned": bool(lo', '"learned": bool(m[', "lo > floor", "lo > constant", "def learned_reason",
                       "CONSTANT_PREDICTOR_SHARE ="):
            if needle in text:
                offenders.append(f"{path.relative_to(ROOT)}: {needle}")
    assert not offenders, offenders
    tree = ast.parse((ROOT / "studies" / "heads_off" / "learned.py").read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"learned", "learned_status"} <= names


@pytest.mark.parametrize("task", ["SST-2", "MRPC", "RTE"])
def test_kovaleva_and_michel_read_the_same_verdict(task):
    from attnbook.studies.kovaleva import table1

    rng, labels = _labels(seed=3)
    logits = rng.normal(size=(400, 2)).astype(np.float32) + 2.0 * np.eye(2)[labels]
    assert table1.seed_learned_reason(task, {"logits": logits, "labels": labels}) == learned(task, logits, labels).reason


def test_recorded_recipe_trials_read_as_a_table_with_their_provenance(tmp_path):
    """The RTE recipe attempts chapter 4 shows come from the recorded file, with where and when they ran."""
    import json

    from attnbook.studies.heads_off.learned import recipe_trials_markdown

    assert recipe_trials_markdown(tmp_path / "none.json") == ""
    trial = {"epochs": 5.0, "lr": 5e-05, "batch_size": 16, "seed": 0, "bf16": False, "accuracy": 58.1, "low": 52.1,
             "high": 63.9, "constant": 52.7, "n_dev": 277, "versus_constant": [-1.0, 11.0], "learned": False,
             "reason": "no better than its constant predictor", "train_cpu_s": 1234.0, "train_wall_s": 2000.0}
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"cpu": "AVX2, native bfloat16: False", "date": "2026-11-29", "commit": "abc1234",
                                "trials": [trial, dict(trial, epochs=8.0, learned=True, reason="", accuracy=61.0)]}))
    text = recipe_trials_markdown(path)
    assert "2 trials" in text and "2026-11-29" in text and "abc1234" in text and "float32" in text
    assert "| 5 | 5e-05 | 16 | 0 | 58.1 [52.1, 63.9] | 52.7 | no: no better than its constant predictor | 1,234 |" in text
    assert "| 8 | 5e-05 | 16 | 0 | 61.0 [52.1, 63.9] | 52.7 | yes | 1,234 |" in text
    assert "277 dev pairs" in text
