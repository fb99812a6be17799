"""Kovaleva et al.'s Table 1 (attnbook.studies.kovaleva.table1) on a tiny random BERT and fixture GLUE tasks."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_finetune import SMALL, base, env  # noqa: F401  (fixtures: SST-2, STS-B, RTE dev-only; a tiny BERT)

from attnbook.core.errors import MissingDataError
from attnbook.engine.classifiers import INITS
from attnbook.studies.kovaleva.paper import PAPER_TABLE1
from attnbook.studies.kovaleva.table1 import INIT_LABELS, data_files, metric_label, numbers, sizes, table1, table1_wide


def test_table1(env, base):  # noqa: F811
    df = table1(base, ["SST-2", "STS-B", "RTE"], {**SMALL, "epochs": 1}, seeds=(0, 1), random_seeds=(0, 1),
                progress=False)
    assert len(df) == 9 and list(df["init"][:3]) == list(INITS)
    sst = df[df.task == "SST-2"].set_index("init")
    assert sst.loc["pretrained_ft", "paper"] == PAPER_TABLE1["SST-2"]["pretrained_ft"][0] == 92.0
    assert np.isfinite(sst["ours"]).all() and np.isfinite(sst.loc[["random_ft", "pretrained_ft"], "ours_std"]).all()
    # issue 18: fine-tuned cells over the seeds (t interval), the untrained classifier once (interval over dev examples)
    assert sst.loc["pretrained_ft", "seeds"] == "0,1" and sst.loc["pretrained", "seeds"] == "0"
    assert sst.loc["pretrained_ft", "unit"] == "seeds" and sst.loc["pretrained", "unit"] == "dev examples"
    assert set(sst.loc["pretrained_ft", "learned"]) == {0, 1} and len(sst.loc["pretrained_ft", "outputs"]) == 2
    once = table1(base, ["SST-2"], {**SMALL, "epochs": 1}, seeds=(0, 1), random_seeds=(0,), inits=["random_ft"],
                  progress=False)
    assert once.loc[0, "seeds"] == "0" and len(once.loc[0, "outputs"]) == 1
    assert (sst["n_dev"] == 16).all() and sst.loc["random_ft", "n_train"] == 32
    assert ((sst["top_class_share"] >= 0.5) & (sst["top_class_share"] <= 1)).all()
    assert df.set_index(["task", "init"]).loc[("STS-B", "random_ft"), "metric"] == "Pearson r"
    rte = df[df.task == "RTE"].set_index("init")
    assert np.isfinite(rte.loc["pretrained", "ours"])  # needs the dev file only
    assert np.isnan(rte.loc["pretrained_ft", "ours"]) and "train.tsv" in rte.loc["pretrained_ft", "note"]
    wide = table1_wide(df)
    assert list(wide.index) == ["SST-2", "STS-B", "RTE"] and "(92)" in wide.loc["SST-2", "pre-trained + fine-tuning"]
    with pytest.raises(MissingDataError):
        table1(base, ["RTE"], SMALL, missing="raise", progress=False)
    # what the chapter records and shows of it
    rec = numbers(df)
    assert rec["table1"]["SST-2/pretrained_ft"] == sst.loc["pretrained_ft", "ours"]
    assert set(rec["table1_seeds"]["SST-2/pretrained_ft"]) == {0, 1}
    assert rec["table1_seeds"]["SST-2/pretrained_ft"][0] == pytest.approx(
        sst.loc["pretrained_ft", "seed_scores"][0]) and rec["table1_intervals"]["SST-2/pretrained_ft"][2] == "seeds"
    assert rec["table1_sizes"]["SST-2/random_ft"] == [32, 16] and rec["table1_sizes"]["RTE/pretrained_ft"] == [0, 0]
    # per task and seed: the score with its interval over dev examples, and what training cost (issue 18)
    runs = rec["table1_seed_runs"]["SST-2/pretrained_ft"]
    assert set(runs) == {0, 1} and runs[0]["score"] == pytest.approx(rec["table1_seeds"]["SST-2/pretrained_ft"][0])
    assert all(r["low"] <= r["score"] <= r["high"] and r["train_seconds"] > 0 for r in runs.values())
    assert rec["table1_seed_runs"]["SST-2/pretrained"][0]["train_seconds"] == 0  # never trained
    assert sizes(df)["task"].tolist() == ["SST-2", "STS-B"]  # RTE has no training file: not run
    assert [p.parent.name + "/" + p.name for p in data_files(["SST-2", "RTE"])] == [
        "SST-2/train.tsv", "SST-2/dev.tsv", "RTE/dev.tsv"]


def test_metric_labels_and_wide_layout():
    assert [metric_label(t) for t in ("MRPC", "STS-B", "SST-2", "QQP")] == ["F1", "Pearson r", "accuracy", "F1"]
    df = pd.DataFrame([
        dict(task="MRPC", init=i, paper=PAPER_TABLE1["MRPC"][i][0], paper_acc=PAPER_TABLE1["MRPC"][i][1],
             ours=81.25 if i != "pretrained" else float("nan"), ours_acc=70.0)
        for i in INITS])
    wide = table1_wide(df)
    assert list(wide.columns) == ["metric", *INIT_LABELS.values()] and wide.loc["MRPC", "metric"] == "F1/accuracy"
    assert wide.loc["MRPC", "pre-trained + fine-tuning"] == "81.2/70.0 (87.9/82.3)"
    assert wide.loc["MRPC", "pre-trained, no fine-tuning"] == "n/a/70.0 (0/31.6)"


def test_table1_trains_each_seed_once_for_every_chapter(env, base, monkeypatch):  # noqa: F811
    """Regression (issue 18): Table 1 trained seeds 1 and 2 without the recipe's snapshots, so chapter 5, which asks
    for them (heads_off.effects.classifier), found no complete cache entry and trained the same classifiers again
    (about 1,000 CPU s of a fresh quick build)."""
    from attnbook.engine import finetune
    from attnbook.studies.heads_off.effects import classifier

    recipe = {**SMALL, "epochs": 1, "save_at": [0.5, 1.0]}
    trained: list[int] = []
    real = finetune._train_and_cache
    monkeypatch.setattr(finetune, "_train_and_cache", lambda *a, **k: trained.append(a[4]) or real(*a, **k))
    table1(base, ["SST-2"], recipe, seeds=(0, 1), random_seeds=(0,), inits=["pretrained_ft"], progress=False)
    assert sorted(trained) == [0, 1]
    for seed in (0, 1):
        classifier(base, "SST-2", recipe, seed)
    assert sorted(trained) == [0, 1], "chapter 5 retrained a classifier Table 1 had trained"


def test_a_classifiers_table1_verdict_reads_back_from_the_cache(env, base, monkeypatch):  # noqa: F811
    """What the head atlas reads of chapter 4 (whether each analysed classifier learned its task) is Table 1's own
    verdict: the same cached dev outputs (no classifier is run again) judged by the same rule."""
    import attnbook.engine.evaluate as evaluate
    from attnbook.engine.finetune import get_finetuned
    from attnbook.studies.kovaleva import table1 as t1

    recipe, caps = {**SMALL, "epochs": 1}, {"default": 12}
    df = table1(base, ["SST-2", "STS-B"], recipe, seeds=(0, 1), inits=["pretrained_ft"], dev_caps=caps, progress=False)

    def no_forward(*a, **k):
        raise AssertionError("a classifier ran again: Table 1's dev outputs were not read back")

    monkeypatch.setattr(evaluate, "predict_logits", no_forward)
    for task in ("SST-2", "STS-B"):
        row = df[(df.task == task) & (df.init == "pretrained_ft")].iloc[0]
        for seed in (0, 1):
            clf, _ = get_finetuned(base, task, "pretrained_ft", recipe, seed, evaluate_dev=False)
            out = t1.seed_outputs(clf, task, recipe, caps)
            assert len(out["labels"]) == 12 == row["n_dev"]
            assert t1.seed_learned_reason(task, out, n_resamples=t1.N_RESAMPLES) == row["learned"][seed]


def test_table1_reads_the_engines_dev_outputs_keyed_on_the_dev_file(env, base):  # noqa: F811
    """One cached ``dev_outputs``: Table 1's cells and the recipe's dev metrics read the same entry, whose key
    holds the dev file's checksum."""
    from attnbook.core import cache
    from attnbook.data import hf
    from attnbook.data.glue import task_path
    from attnbook.engine import evaluate
    from attnbook.engine.finetune import get_finetuned, recipe_dev_outputs
    from attnbook.studies.kovaleva import table1 as t1

    assert not hasattr(t1, "dev_outputs")
    recipe = {**SMALL, "epochs": 1, "dev_cap": 12}
    clf, _ = get_finetuned(base, "SST-2", "pretrained_ft", recipe, 0, evaluate_dev=False)
    cache.forget_used()
    out = t1.seed_outputs(clf, "SST-2", recipe, {"default": 12})
    again, _ = recipe_dev_outputs(clf, "SST-2", recipe)
    np.testing.assert_array_equal(out["logits"], again["logits"])
    used = [e for e in cache.used_entries() if e.startswith(evaluate.dev_outputs.namespace + "/")]
    assert len(used) == 1, used
    parts = evaluate.dev_outputs.parts(clf, "SST-2", 12, SMALL["max_length"], hf.file_sha256(task_path("SST-2", "dev")))
    assert used[0].endswith(cache.key(parts)) and int(out["n_total"]) >= 12


def test_a_cell_interval_over_seeds_counts_seeds_not_dev_examples():
    """``attnbook plan --decide`` priced a Table 1 cell's interval over 3 seeds as "872 seeds" (the cell's n was its
    dev examples with the unit "seeds"): the count now matches the unit it is in."""
    from attnbook.studies.kovaleva.paper.table1_rows import _cell_estimate

    seeds = {"task": "SST-2", "ours": 85.8, "ours_low": 83.3, "ours_high": 88.3, "n_dev": 872, "unit": "seeds",
             "seed_scores": {"0": 85.7, "1": 86.2, "2": 85.4}}
    est = _cell_estimate(seeds)
    assert (est.n, est.unit) == (3, "seeds")
    borrowed = dict(seeds, unit="seed (seed spread borrowed)", seed_scores={"0": 63.9})
    assert _cell_estimate(borrowed).n == 1
    examples = dict(seeds, unit="dev examples", seed_scores=None)
    assert (_cell_estimate(examples).n, _cell_estimate(examples).unit) == (872, "dev examples")
