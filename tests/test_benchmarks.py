"""The benchmark report renders every part it measured (the measuring itself runs in `make bench`, not here)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def load_runner():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_has_a_row_per_measurement():
    run = load_runner()
    report = {
        "extraction": {"overhead": 0.08, "naive_over_streamed": 3.0},
        "memory": {"ratio_1000_over_100": 1.02},
        "paper_cost": {"minutes_for_1000_segments": 1.7, "flop_floor_minutes_for_1000": 1.0, "extraction_overhead": 0.03},
        "sweeps": {"disable": {"speedup": 2.2, "max_abs_output_diff": 0.0}, "mask": {"speedup": 2.4, "max_abs_output_diff": 1e-7}},
        "importance": {"importance_over_forward": 2.1},
        "training": {"embedded": {"examples_per_s": 15.0}, "bert_base_random": {"examples_per_s": 2.5},
                     "bert_base_slowdown": 6.0},
        "threads": {"segments_per_s_by_threads": {"1": 30.0, "2": 60.0}},
        "batch_sizes": {"segments_per_s_by_batch_size": {"8": 60.0, "16": 61.0}},
        "book_times": {"quick": {"01_clark_surface_patterns": 120.0, "total": 1200.0}},
    }
    md = run.table(report)
    for expected in ("overhead 0.08", "overhead 0.03", "ratio 1.02", "2.20x", "2.40x", "2.1x", "15.0 ex/s",
                     "1: 30.0, 2: 60.0", "01_clark_surface_patterns | 2.0 min", "chapters 1-8 (cold cache) | 2.0 min", "20.0 min"):
        assert expected in md, expected
    assert md.count("\n") + 1 == 2 + 15  # header, separator and one row per measurement (15 here)


def load_measures():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import measures

    return measures


def test_benchmark_sweep_reports_both_times():
    from test_sweeps import dev_batches, tiny_classifier

    out = load_measures().benchmark_sweep(tiny_classifier(seed=7), dev_batches(n_batches=1, seed=7), "mask")
    assert out["fast_seconds"] > 0 and out["naive_seconds"] > 0
    assert out["max_abs_output_diff"] < 1e-5
    assert out["n_configs"] == 12
    assert out["max_abs_output"] > 0  # the scale the family rows judge the difference against


def test_extraction_overhead_is_the_median_of_paired_ratios_not_one_lucky_run():
    """One lucky bare forward (a pair's base time halved) made the ratio of best times read +110% for a +5% cost;
    the median of the pairs' ratios stays at +5%, with an interval, and the pairs alternate which side runs first."""
    measures = load_measures()
    base = [1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0]
    out = measures.paired_overhead(base, [1.05] * 7)
    assert out["overhead"] == 0.05 and out["overhead_of_best_times"] == 1.1
    assert out["pairs"] == 7 and out["overhead_interval"] == [0.05, 1.1]  # with 7 pairs the 95% interval is their range
    assert measures.overhead_text(out) == "0.05 [0.05, 1.1] (7 pairs)"
    assert "overhead_interval" not in measures.paired_overhead([1.0] * 3, [1.1] * 3)  # too few pairs for one
    calls: list[str] = []
    ta, tb = measures.interleaved_pairs(lambda: calls.append("a"), lambda: calls.append("b"), repeats=4)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"] and len(ta) == len(tb) == 4


def test_family_rows_judge_the_sweep_difference_against_the_largest_logit():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import families

    report = {"electra": {"family": "ELECTRA", "segments": 200, "float32_reference": 1.0e-05,
                          "extraction": {"segments": 200, "overhead": 0.0612, "overhead_interval": [0.02, 0.1141],
                                         "pairs": 7},
                          "sweep_mask": {"speedup": 2.44, "max_abs_output_diff": 2.1e-05, "max_abs_output": 23.0}},
              "old": {"family": "BERT", "extraction": {"segments": 48, "overhead": 0.02},
                      "sweep_mask": {"speedup": 2.9, "max_abs_output_diff": 1.1e-05}},
              "broken": {"family": "X", "extraction": {"segments": 48, "overhead": 0.02},
                         "sweep_mask": {"error": "ValueError: no"}}}
    rows = families.rows(report)
    assert rows[0][1] == ("overhead 0.0612 [0.02, 0.1141] (7 pairs); sweep 2.44x, diff 2.1e-05 = 9.1e-07 of the largest logit (23.0; one batch "
                          "vs one input at a time: 1.0e-05)")
    assert "200 segments" in rows[0][0] and rows[0][2].endswith("diff < 1e-5 of the largest logit")
    assert rows[1][1] == "overhead 0.02; sweep 2.90x, diff 1.1e-05"  # a report without the largest logit
    assert rows[2][1] == "overhead 0.02; sweep: ValueError: no"


def test_training_throughput_returns_numbers(tokenizer):
    from conftest import make_tiny_bert
    from transformers import BertConfig

    from attnbook.engine.models import wrap_model

    measures = load_measures()
    tiny = BertConfig(vocab_size=200, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=64)
    r = measures.training_throughput(tiny, n_steps=2, batch_size=4, seq_len=16)
    assert r["steps"] == 2 and r["examples_per_s"] > 0 and r["parameters_m"] > 0
    base = wrap_model(make_tiny_bert(tokenizer, n_layers=2, n_heads=2), tokenizer, "tiny")
    r2 = measures.training_throughput(base, n_steps=1, batch_size=2, seq_len=8)
    assert r2["model"] == "tiny" and r2["seconds"] > 0


def test_speedup_rows_and_their_references(tmp_path):
    """`make bench` times this round's speed-ups against the code they replaced; the references compute the same
    thing (ranks equal, logits equal) and the report renders one row each."""
    from attnbook.engine.checkpoints import save_checkpoint
    from attnbook.engine.classifiers import build_classifier
    from attnbook.engine.finetune import base_encoder
    from attnbook.stats import average_ranks

    measures = load_measures()
    x = np.array([3.0, 1.0, 3.0, 2.0, 1.0])
    assert np.array_equal(measures.ranks_loop(x), average_ranks(x))
    ranks = measures.benchmark_ranks(n=50, calls=3)
    assert ranks["n"] == 50 and callable(ranks["fn_new"]) and callable(ranks["fn_old"])
    save_checkpoint(build_classifier(base_encoder("embedded"), "SST-2", "pretrained_ft", 0), "b", {}, root=tmp_path)
    load = measures.benchmark_checkpoint_load(tmp_path, "b")
    assert load["same_logits"] is True
    md = load_runner().table({"speedups": {
        "ranks": {"speedup": 20.0, "old_s": 0.2, "new_s": 0.01},
        "arct_grouping": {"speedup": 1.3, "old_s": 13.0, "new_s": 10.0, "padding_random": 0.29,
                          "padding_grouped": 0.05},
        "checkpoint_load": {"speedup": 6.0, "old_s": 0.3, "new_s": 0.05, "same_logits": True}}})
    assert "20.00x" in md and "padding 29% -> 5%" in md and "same logits" in md


def _bench_module(name):
    import importlib
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


def test_heap_rows_read_fixed_over_scoped_in_each_pair(monkeypatch):
    """The heap bench's ratios are taken within each pair of processes and point the same way for every measure
    (above 1: the fixed threshold is slower), whichever side ran first."""
    heap = _bench_module("heap")
    fake = {"fixed": {"train_examples_per_s": 10.0, "forward_s": 3.0, "stream_s": 2.0},
            "scoped": {"train_examples_per_s": 15.0, "forward_s": 2.0, "stream_s": 2.0}}
    calls = []
    monkeypatch.setattr(heap, "run_child", lambda mode: calls.append(mode) or {"mode": mode, **fake[mode]})
    report = heap.bench_heap(pairs=2)
    assert calls == ["fixed", "scoped", "scoped", "fixed"]
    assert report["fixed_over_scoped"] == {"train": 1.5, "forward": 1.5, "stream": 1.0}
    rows = heap.rows(report)
    assert len(rows) == 3 and rows[0][1].startswith("fixed 1.50x (1.50, 1.50) slower; scoped 15.0 ex/s")
    assert heap.rows({"error": "RuntimeError: x"})[0][1] == "RuntimeError: x"


def test_readers_bench_takes_medians_and_refuses_readers_that_disagree(monkeypatch):
    readers = _bench_module("readers")
    monkeypatch.setattr(readers, "CORPORA", (("tiny", "glue", "SST-2/train"),))
    times = iter([1.0, 3.0, 0.5, 2.0, 4.0, 0.4, 1.5, 3.5, 0.6])
    monkeypatch.setattr(readers, "_child", lambda side, kind, name, cache: {"s": next(times), "n": 7, "import_s": 0.5})
    (row,) = readers.bench_readers(repeats=3)
    assert row["before_s"] == 1.5 and row["first_read_s"] == 3.5 and row["cached_s"] == 0.5
    assert row["cached_over_before"] == 0.33 and row["items"] == 7
    rows = readers.rows([row])
    assert "cached 0.33x (1.500 -> 0.500 s)" in rows[0][1] and rows[1] == (
        "readers: `import datasets, pyarrow`, once per process before the first read", "0.500 s", "(cost)")
    counts = iter([7, 8, 7])
    monkeypatch.setattr(readers, "_child", lambda side, kind, name, cache: {"s": 1.0, "n": next(counts), "import_s": 0.5})
    import pytest

    with pytest.raises(RuntimeError, match="different numbers of items"):
        readers.bench_readers(repeats=1)
