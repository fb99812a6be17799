"""Score functions of the sweeps (attnbook.engine.scores) and how cached results name them."""
from __future__ import annotations

import numpy as np
import pytest

from attnbook import stats
from attnbook.engine.scores import accuracy, accuracy_points, correct, f1_positive, score_name, task_score_fn


def test_scores():
    logits = np.array([[2.0, 0.0], [0.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    gold = np.array([0, 1, 0, 1])
    assert accuracy(logits, gold) == 0.5
    # predicted positives: rows 1, 2; gold positives: rows 1, 3; tp = 1
    assert f1_positive(logits, gold) == pytest.approx(2 * 1 / 4)
    assert task_score_fn("RTE")(logits, gold) == pytest.approx(50.0)
    assert task_score_fn("MRPC")(logits, gold) == pytest.approx(50.0)
    scores = np.array([[0.1], [0.4], [0.2], [0.9]])
    assert task_score_fn("STS-B")(scores, np.array([1.0, 4.0, 2.0, 9.0])) == pytest.approx(100.0)


def test_accuracy_points_and_correct():
    logits = np.array([[2.0, 0.0], [0.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    gold = np.array([0, 1, 0, 1])
    assert accuracy_points(logits, gold) == 100.0 * accuracy(logits, gold) == 50.0
    assert correct(logits, gold).tolist() == [True, True, False, False]


def test_score_names_tell_score_functions_apart():
    assert score_name(accuracy) == "attnbook.engine.scores.accuracy"
    assert score_name(accuracy) != score_name(stats.accuracy)  # same __qualname__, other module
    assert score_name(task_score_fn("RTE")) == "task_score_fn(RTE)"
    assert score_name(task_score_fn("RTE")) != score_name(task_score_fn("MRPC"))
