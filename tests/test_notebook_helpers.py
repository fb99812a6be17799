"""Issue 28: the results-file entries the chapters used to assemble by hand come from the studies.

Each test builds the inputs a chapter has at that point and checks the entries key by key against what the chapter's
cell wrote before (the same keys, the same values), so a renamed key or a swapped field fails here, not silently in
``<chapter>.json``.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from attnbook.chapters.results import ChapterResults
from attnbook.engine.gradients import MLMHeadFit
from attnbook.stats import Estimate
from attnbook.studies.clark import gradients
from attnbook.studies.clark.gradients import MLMQuality
from attnbook.studies.heads_off.learned import Learned
from attnbook.studies.michel import runs as michel_runs
from attnbook.studies.niven_kao import pairwise

# ----------------------------------------------------------------------------- chapter 1 (Clark §3.2)


def mlm_fit() -> tuple[MLMHeadFit, MLMQuality]:
    curve = [{"step": 50, "loss": 6.1, "top1": 0.12}, {"step": 100, "loss": 5.8, "top1": 0.15}]
    fit = MLMHeadFit(head=None, source="fitted on the frozen encoder", heldout_loss=5.9, heldout_accuracy=0.14,
                     steps=150, curve=curve, best_step=100, seconds=12.5)
    quality = MLMQuality("fitted on the frozen encoder", 0.14, 0.11, 0.17, 500, 0.06, "the", list(curve), 100, 150)
    return fit, quality


def test_mlm_head_numbers_take_the_fit_and_the_interval_from_the_right_objects():
    fit, quality = mlm_fit()
    numbers = gradients.mlm_head_numbers(fit, quality)
    assert list(numbers) == ["mlm_head"]
    assert numbers["mlm_head"] == {
        "source": "fitted on the frozen encoder", "heldout_loss": 5.9, "heldout_accuracy": 0.14,
        "heldout_low": 0.11, "heldout_high": 0.17, "heldout_pieces": 500, "unigram_accuracy": 0.06,
        "steps": 150, "best_step": 100, "validation_curve": fit.curve}
    assert "seconds" not in numbers["mlm_head"]  # a timing: provenance, not results


def test_mlm_head_numbers_of_a_pretrained_head_without_a_fit():
    fit = MLMHeadFit(head=None, source="pretrained", heldout_loss=2.0, heldout_accuracy=0.5, steps=0)
    quality = MLMQuality("pretrained", 0.5, 0.45, 0.55, 300, 0.04, ".")
    entry = gradients.mlm_head_numbers(fit, quality)["mlm_head"]
    assert (entry["steps"], entry["best_step"], entry["validation_curve"]) == (0, 0, [])


def test_gradient_numbers_average_each_category_over_a_layers_heads():
    grads = {"grad_sep": np.array([[1.0, 3.0], [5.0, 7.0]]), "grad_other": np.array([[0.0, 1.0], [2.0, 2.0]]),
             "per_segment": np.zeros((4, 4, 2, 2))}
    numbers = gradients.gradient_numbers(grads)
    assert numbers == {"grad_by_layer": {"grad_sep": [2.0, 6.0], "grad_other": [0.5, 2.0]}}
    assert all(isinstance(v, list) for v in numbers["grad_by_layer"].values())  # JSON-able


# ----------------------------------------------------------------------------- chapter 6 (Michel et al.)


def status(ok: bool) -> Learned:
    return Learned("SST-2", ok, "" if ok else "below", 60.0, 55.0, 65.0, 50.0, 100, 5.0 if ok else -1.0, 15.0, 0.6)


def test_seed_numbers_list_every_seed_and_only_the_learned_ones_as_analysed():
    runs = [michel_runs.SeedRun(s, None, status(s != 2)) for s in (1, 2, 3)]
    numbers = michel_runs.seed_numbers(runs)
    assert set(numbers["seed_status"]) == {"1", "2", "3"}
    assert numbers["seed_status"]["2"] == status(False).as_dict()
    assert numbers["analysed_seeds"] == [1, 3]


def test_seed_numbers_analyse_no_seed_when_none_learned():
    runs = [michel_runs.SeedRun(s, None, status(False)) for s in (1, 2)]
    assert michel_runs.seed_numbers(runs)["analysed_seeds"] == []
    assert michel_runs.analysed(runs)[0] == runs  # the chapter still measures them, but compares nothing


def test_one_head_numbers():
    best = pd.DataFrame({"layer": [1, 2], "head": [3, 1], "delta": [-0.5, -1.0]})
    chosen = pd.DataFrame({"layer": [1, 2], "delta_b": [-0.2, -1.5], "low": [-1.0, -2.5], "high": [0.6, -0.5]})
    one_head = Estimate(-4.0, -6.0, -2.0, 200, "dev examples")
    numbers = michel_runs.one_head_numbers(best, chosen, one_head)
    assert numbers["all_but_one"] == [{"layer": 1, "head": 3, "delta": -0.5}, {"layer": 2, "head": 1, "delta": -1.0}]
    assert numbers["chosen_on_half_b"][1] == {"layer": 2, "delta_b": -1.5, "low": -2.5, "high": -0.5}
    assert numbers["one_head_per_layer_delta"] == {"value": -4.0, "low": -6.0, "high": -2.0, "n": 200,
                                                   "unit": "dev examples"}


def test_across_numbers_pair_each_seed_with_its_own_correlation():
    runs = [michel_runs.SeedRun(s, None, status(True)) for s in (7, 3)]
    across = [Estimate(0.6, 0.4, 0.8, 100, "dev examples"), Estimate(0.1, -0.2, 0.4, 100, "dev examples")]
    entry = michel_runs.across_numbers("dev half A vs half B", runs, across)["ablation_agreement"]
    assert entry["between"] == "dev half A vs half B"
    assert entry["7"]["value"] == 0.6 and entry["3"]["value"] == 0.1
    assert set(entry) == {"between", "7", "3"}


def test_task_agreement_numbers():
    pairs = [("SST-2", "MRPC", 0.25), ("SST-2", "RTE", -0.1)]
    halves = {"spearman": 0.8, "top_k_overlap": 0.7}
    skipped = ["RTE: not better than its constant predictor"]
    numbers = michel_runs.task_agreement_numbers(pairs, halves, skipped)
    assert numbers == {"importance_across_tasks": {"SST-2 vs MRPC": 0.25, "SST-2 vs RTE": -0.1},
                       "importance_across_halves": halves, "agreement_tasks_skipped": skipped}


def test_chapter_6_entries_are_what_the_cells_wrote_by_hand(tmp_path):
    """The results file is byte-identical whether a chapter adds the entries by hand or through the functions."""
    runs = [michel_runs.SeedRun(s, None, status(s != 1)) for s in (0, 1)]
    todo, analysable = michel_runs.analysed(runs)
    across = [Estimate(0.5, 0.3, 0.7, 50, "dev examples")]
    by_hand, helped = ChapterResults("t", {"seed": 0}, {}), ChapterResults("t", {"seed": 0}, {})
    by_hand.add("seed_status", {str(r.seed): r.status.as_dict() for r in runs})
    by_hand.add("analysed_seeds", [r.seed for r in todo] if analysable else [])
    by_hand.add("ablation_agreement", {"between": "x vs y", **{str(r.seed): e.as_dict() for r, e in zip(todo, across)}})
    helped.add_all(michel_runs.seed_numbers(runs))
    helped.add_all(michel_runs.across_numbers("x vs y", todo, across))
    assert json.dumps(by_hand.numbers, sort_keys=True) == json.dumps(helped.numbers, sort_keys=True)


# ----------------------------------------------------------------------------- chapter 7 (Niven & Kao)


def test_runs_numbers_name_each_model_and_round_its_columns():
    frame = pd.DataFrame({"seed": [0, 1], "test_accuracy": [0.123456, 0.654321]})
    numbers = pairwise.runs_numbers({"bov": frame, "bilstm": frame * 2}, "_adversarial_runs")
    assert set(numbers) == {"bov_adversarial_runs", "bilstm_adversarial_runs"}
    assert numbers["bov_adversarial_runs"] == {"seed": [0, 1], "test_accuracy": [0.1235, 0.6543]}
    assert numbers["bilstm_adversarial_runs"]["test_accuracy"] == [pytest.approx(0.2469), pytest.approx(1.3086)]
    assert list(pairwise.runs_numbers({"bov": frame})) == ["bov_runs"]
    assert pairwise.runs_numbers({}) == {}  # no word baselines: no entry
