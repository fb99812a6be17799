"""``attnbook plan``: the work each chapter's parameters imply, counted once, turned into time by rates."""
from __future__ import annotations

import pytest

from attnbook.chapters import plan as P
from attnbook.chapters.params import chapter_params
from attnbook.chapters.profiles import glue
from attnbook.core import cache
from attnbook.engine import cost
from attnbook.engine.checkpoints import COMPLETE_FILE, checkpoints_root
from attnbook.engine.finetune import FinetuneParams, base_encoder, cached_checkpoint, checkpoint_parts
from attnbook.engine.jobs import snapshots

MINILM = P.Shape(6, 12, 384, 1536)
BASE = P.Shape(12, 12, 768, 3072, has_mlm_head=True)
RATES = {"forward": 1e10, "train": 5e9, "train_bf16": 1e10, "train_1": 3e9, "train_bf16_1": 6e9, "backprop": 5e9,
         "vocab": 2e10, "pairs": 1e9, "probe": 1e6, "probe_step": 100.0, "encode": 2e5, "parse": 5e6, "load": 10.0}


def test_forward_flops_of_a_bert_layer():
    # one layer, 10 pieces, hidden 4, ffn 16: 2*10*(4*16 + 2*4*16) + 4*100*4
    assert P.Shape(1, 1, 4, 16).forward_flops(10) == 2 * 10 * (64 + 128) + 1600
    assert MINILM.forward_flops(100, 3) == pytest.approx(3 * MINILM.forward_flops(100))
    # bert-base costs ~8x MiniLM per token (twice the layers, four times hidden^2)
    assert 7 < BASE.forward_flops(100) / MINILM.forward_flops(100) < 9


def test_each_classifier_is_trained_once_across_chapters(monkeypatch):
    """Table 1 (chapter 4) trains every seed; chapters 5 and 6 load those checkpoints and must not count them."""
    monkeypatch.setattr(cost, "trainable", lambda task, fetched=False: task in ("SST-2", "MRPC", "STS-B", "RTE"))
    monkeypatch.setattr(cost, "scored", lambda task, fetched=False: True)
    trained: set = set()
    works = {}
    for c in ("04_kovaleva_taxonomy", "05_kovaleva_disabling", "06_michel_pruning"):
        p = chapter_params(c, "quick")
        works[c] = P.chapter_work(c, p, MINILM, glue.recipe(p), trained)
    tuned = [w for ws in works.values() for w in ws if w.kind.startswith("train")]
    assert tuned and all(w.chapter == "04_kovaleva_taxonomy" for w in tuned)
    # four tasks x three seeds (RTE, which the quick recipe does not make learn: one), plus random init once
    assert len(trained) == 3 * 3 + 1 + 4
    assert sorted(s for t, i, s in trained if t == "RTE" and i == "pretrained_ft") == [0]
    assert any(w.kind == "forward" and "sweeps" in w.what for w in works["05_kovaleva_disabling"])


def test_missing_glue_files_skipped_in_quick_counted_in_paper():
    p = chapter_params("04_kovaleva_taxonomy", "paper")
    quick = P.chapter_work("04_kovaleva_taxonomy", p, BASE, glue.recipe(p), set(), fetched=False)
    paper = P.chapter_work("04_kovaleva_taxonomy", p, BASE, glue.recipe(p), set(), fetched=True)
    assert not any("MNLI" in w.what for w in quick)  # not in this machine's data: the chapter skips it
    mnli = [w for w in paper if w.what.startswith("fine-tuning MNLI-m")]
    assert mnli and "392,702 examples" in mnli[0].what and mnli[0].kind == "train"  # the paper recipe is float32


def test_a_model_with_its_own_mlm_head_is_not_fitted():
    p = chapter_params("01_clark_surface_patterns", "quick")
    fitted = P.chapter_work("01_clark_surface_patterns", p, MINILM)
    own = P.chapter_work("01_clark_surface_patterns", p, BASE)
    assert any("fitting the MLM head" in w.what for w in fitted)
    assert not any("fitting" in w.what for w in own) and any("held-out" in w.what for w in own)


def test_plan_table_and_accuracy(monkeypatch):
    monkeypatch.setattr(P, "measure_rates", lambda shape, **kw: {**RATES, "startup": 2.0})
    plan = P.make_plan("smoke", chapters=["01_clark_surface_patterns", "08_head_atlas"])
    per = plan.chapter_seconds()
    # the atlas reads the caches, but builds chapters 1-6's inputs again, parses FrameNet and loads classifiers
    atlas = {w.kind: plan.seconds(w) for w in plan.work if w.chapter == "08_head_atlas"}
    assert set(atlas) == {"startup", "encode", "parse", "load"} and per["08_head_atlas"] > 2.0
    assert per["01_clark_surface_patterns"] > 2.0
    text = plan.table()
    assert "01_clark_surface_patterns" in text and "total" in text and "Not counted" in text
    assert "empty cache" in text and "with this cache" in text and "data directory" in text
    assert plan.chapter_seconds(cached=True) == per  # nothing these two chapters do is a fine-tuned classifier
    ratios = P.accuracy(plan, {"01_clark_surface_patterns": 2 * per["01_clark_surface_patterns"]})
    assert ratios == {"01_clark_surface_patterns": 2.0} and not P.within(2.0) and P.within(1.4)


def test_paper_plan_needs_no_weights(tmp_path, monkeypatch):
    """bert-base-uncased is not downloadable here: its shape comes from the known shapes, offline."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert P.planned_shape("bert-base-uncased") == P.Shape(12, 12, 768, 3072, has_mlm_head=True)
    assert P.planned_shape("embedded").n_layers == 6 and not P.planned_shape("embedded").has_mlm_head


def test_probe_training_counts_the_padded_word_pairs():
    """Chapter 2's plan counts the §5 probes' own training (it was left out, and chapter 2 ran 1.7x its estimate):
    length-sorted batches, each padded to its longest sentence, so the cost follows size x width^2."""
    steps, pairs, measured = cost.probe_batches(100, 32)
    assert steps == 4 and pairs > 0 and measured
    p = chapter_params("02_clark_probing", "quick")
    work = P.chapter_work("02_clark_probing", p, MINILM)
    probe = [w for w in work if w.kind == "probe"]
    assert len(probe) == 1 and probe[0].amount > 0
    more = P.chapter_work("02_clark_probing", p.replace(probe_epochs=2 * p.probe_epochs), MINILM)
    assert [w.amount for w in more if w.kind == "probe"][0] == pytest.approx(2 * probe[0].amount)


def test_start_up_runs_a_chapters_opening_cells():
    """The start-up measurement executes what every chapter does before its own work: chapter 1's cells up to its
    first code cell after the parameters (imports, parameters resolved, model loaded)."""
    nb = P.startup_notebook("quick")
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert any("parameters" in t for t in tags) and nb.cells[-1].cell_type == "code"
    opening = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "chapter.setup(" in opening and "load_encoder" in nb.cells[-1].source


def test_probe_lengths_without_the_ud_file_are_an_assumption_the_plan_says(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    steps, pairs, measured = cost.probe_batches(64, 32)
    assert (steps, pairs, measured) == (2, 64 * 15 ** 2, False)
    work = P.chapter_work("02_clark_probing", chapter_params("02_clark_probing", "quick"), MINILM)
    assert any("UD lengths assumed" in w.what for w in work if w.kind == "probe")


def test_the_atlas_is_planned_as_reading_back_what_its_source_chapters_ran():
    """Chapter 8 ran 3.4x its plan when only its start-up was counted: it loads every classifier chapters 4-6
    analyse (for chapter 4 all of Table 1's, whose rows decide which tasks were learned), parses FrameNet again and builds chapters 1-6's inputs again (their cache keys), all counted now, with
    the source chapters' own parameters (their overrides too)."""
    p = chapter_params("08_head_atlas", "quick")
    work = {w.kind: w for w in P.chapter_work("08_head_atlas", p, MINILM)}
    p4, p5, p6 = (chapter_params(c, "quick") for c in ("04_kovaleva_taxonomy", "05_kovaleva_disabling",
                                                         "06_michel_pruning"))
    r4 = glue.recipe(p4)
    trainable = [t for t in p4.table1_tasks if cost.trainable(t)]
    others = [t for t in p6.agreement_tasks if t != p6.task and cost.trainable(t)]
    from attnbook.engine.jobs import seeds_for

    n4 = sum(len(seeds_for(r4, t)) + len(r4["random_seeds"]) for t in trainable)
    n5 = sum(len(seeds_for(glue.recipe(p5), t, p5.seeds)) for t in p5.tasks if cost.trainable(t))
    assert work["load"].amount == n4 + n5 + len(p6.seeds) + 2 * len(others)
    assert n4 < len(trainable) * (len(r4["seeds"]) + len(r4["random_seeds"]))  # RTE: one seed in the quick recipe
    assert work["parse"].amount > 10e6  # FrameNet 1.7's full text: about 15 MB of XML
    fewer = p.replace(chapter_overrides={"05_kovaleva_disabling": {"seeds": [0]},
                                         "01_clark_surface_patterns": {"n_segments": 10}})
    less = {w.kind: w for w in P.chapter_work("08_head_atlas", fewer, MINILM)}
    r5 = glue.recipe(p5)
    assert less["load"].amount == work["load"].amount - sum(len(seeds_for(r5, t, p5.seeds)) - 1
                                                            for t in p5.tasks if cost.trainable(t))
    assert less["encode"].amount < work["encode"].amount


def test_the_adversarial_runs_evaluation_is_counted():
    """Chapter 7's adversarial runs score the adversarial dev set after every epoch and the test set whole and in
    halves (left out before: the section ran 2x its plan)."""
    p = chapter_params("07_arct_cues", "quick")
    work = P.chapter_work("07_arct_cues", p, MINILM)
    adv = [w for w in work if w.what.startswith("evaluating adversarial")]
    assert len(adv) == len(p.adversarial) and adv[0].kind == "forward"
    capped = [w for w in P.chapter_work("07_arct_cues", p.replace(eval_cap=10), MINILM)
              if w.what.startswith("evaluating adversarial")]
    assert capped[0].amount < adv[0].amount


def test_rates_of_encoding_parsing_loading_and_the_probes_are_measured_here():
    tiny = P.Shape(2, 2, 32, 64, vocab=30522)
    assert P.encode_rate("embedded", 0.2) > 1e3  # word pieces per second
    assert P.parse_rate(0.2) > 1e5  # bytes of FrameNet XML per second
    assert P.load_rate(tiny, repeats=1) > 0.1  # checkpoints per second, checksums verified
    per_pair, per_step = P.fresh_probe_rate(tiny, 0.3)  # in a fresh process (see its docstring)
    assert per_pair > 0 and per_step > 0


def test_rates_print_in_their_units_and_a_floor_is_not_shown_as_a_measurement():
    assert P._rate_text("forward", 1.3e11) == "130.0 GFLOP/s" and P._rate_text("load", 13.0) == "13.0 checkpoints loaded/s"
    assert P._rate_text("encode", 2.7e5) == "270 k pieces encoded/s" and P._rate_text("probe_step", 900.0) == "900 probe updates/s"
    assert "too cheap to time" in P._rate_text("probe_step", 1e6)


def test_chapter6s_check_that_each_classifier_learned_is_counted():
    """Chapter 6 scores every seed's classifier and one classifier per agreement task on the recipe's dev sample
    before it analyses them (left out before); the count follows the seeds and the recipe's dev cap."""
    c = "06_michel_pruning"
    p = chapter_params(c, "quick")
    recipe = glue.recipe(p)
    check = [w for w in P.chapter_work(c, p, MINILM, recipe) if "learned" in w.what]
    assert len(check) == 1 and check[0].kind == "forward"
    others = [t for t in dict.fromkeys(p.agreement_tasks) if t != p.task and cost.trainable(t)]
    assert f"checking that {len(p.seeds) + len(others)} classifiers" in check[0].what
    one_seed = [w for w in P.chapter_work(c, p.replace(seeds=p.seeds[:1]), MINILM, recipe) if "learned" in w.what]
    capped = [w for w in P.chapter_work(c, p, MINILM, {**recipe, "dev_cap": 8}) if "learned" in w.what]
    assert one_seed[0].amount < check[0].amount and capped[0].amount < check[0].amount


def _plant_checkpoints(model: str, recipe: dict, jobs) -> None:
    """Complete checkpoint folders (final and the recipe's ``save_at`` snapshots) for ``jobs`` in this cache, as
    :func:`attnbook.engine.finetune.train_checkpoints` would leave them (the weights are not needed to be found)."""
    base = base_encoder(model)
    for task, init, seed in jobs:
        params = FinetuneParams.from_mapping(recipe).for_task(task)
        for fraction in (1.0, *snapshots(recipe["save_at"], task, init, seed)):
            folder = checkpoints_root() / cache.key(checkpoint_parts(base, task, init, params, seed, fraction))
            folder.mkdir(parents=True, exist_ok=True)
            (folder / COMPLETE_FILE).write_text("{}")
        assert cached_checkpoint(base, task, init, recipe, seed, recipe["save_at"])


def test_the_empty_cache_estimate_ignores_the_cache_and_the_cached_one_skips_held_classifiers(tmp_path, monkeypatch):
    """After a build the cache holds chapter 4's classifiers: "from an empty cache" must still count their training,
    and only the "with this cache" estimate may leave it out."""
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    c = "04_kovaleva_taxonomy"
    p = chapter_params(c, "smoke")
    recipe = glue.recipe(p)
    jobs = [(t, i, sd) for t in p.table1_tasks if cost.trainable(t) for i in ("pretrained_ft", "random_ft")
            for sd in (recipe["seeds"] if i == "pretrained_ft" else recipe["random_seeds"])]
    if not jobs:
        pytest.skip("no GLUE training file in the data directory")
    held = cost.CheckpointCache(p.model)
    empty = P.chapter_work(c, p, MINILM, recipe, set())
    assert P.chapter_work(c, p, MINILM, recipe, set(), cache=held) == empty  # the cache holds nothing yet
    _plant_checkpoints(p.model, recipe, jobs)
    assert P.chapter_work(c, p, MINILM, recipe, set()) == empty
    cached = P.chapter_work(c, p, MINILM, recipe, set(), cache=held)
    assert any(w.kind.startswith("train") for w in empty) and not any(w.kind.startswith("train") for w in cached)
    assert [w for w in cached if not w.kind.startswith("train")] == [w for w in empty if not w.kind.startswith("train")]

    monkeypatch.setattr(P, "measure_rates", lambda shape, **kw:
                        {**RATES, "startup": 2.0})
    plan = P.make_plan("smoke", chapters=[c, "05_kovaleva_disabling"])
    per, with_cache = plan.chapter_seconds(), plan.chapter_seconds(cached=True)
    assert per[c] == pytest.approx(sum(plan.seconds(w) for w in empty) + 2.0)
    assert with_cache[c] < per[c] and with_cache["05_kovaleva_disabling"] <= per["05_kovaleva_disabling"]
    row = next(line for line in plan.table().splitlines() if line.strip().startswith(c))
    assert P._minutes(per[c]) in row and P._minutes(with_cache[c]) in row


def test_a_missing_data_directory_is_said_with_the_plan(tmp_path, monkeypatch):
    """Without the data directory the GLUE chapters plan nothing of their fine-tuning (a plan run outside ``make``,
    ATTNBOOK_DATA unset, put chapter 4 at its start-up alone); the plan says which data it counted without."""
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path / "nowhere"))
    note = P.data_note()
    assert str(tmp_path / "nowhere") in note and "lacks" in note and "glue" in note and "no fine-tuning" in note
    assert "standard sizes" in P.data_note(fetched=True)


def test_the_wall_time_with_workers_is_the_longer_of_the_chain_and_the_work_over_the_workers():
    """Issue 51: chapters run side by side unless one reads another's results; an item of several jobs spreads over
    up to that many workers; the estimate is max(critical path, total work / workers)."""
    from attnbook.engine.cost import Shape, Work

    w = [Work("04", "fine-tuning (16 runs)", "train", 1600.0, jobs=16), Work("04", "analysis", "forward", 100.0),
         Work("05", "sweeps", "forward", 300.0), Work("07", "seeds (3)", "train", 900.0, jobs=3)]
    plan = P.Plan("quick", "m", Shape(2, 2, 32, 64), {"train": 1.0, "forward": 1.0}, work=w)
    after = {"05": ("04",)}
    one = plan.wall_time(1, after)
    assert one.seconds == one.work_seconds == 2900.0  # one worker: everything one after the other
    eight = plan.wall_time(8, after)
    assert eight.path == ["04", "05"] and eight.path_seconds == 1600 / 8 + 100 + 300
    assert eight.seconds == max(600.0, 2900 / 8) == 600.0
    many = plan.wall_time(64, after)  # jobs cap the spread: 16 classifiers, 3 seeds
    assert many.path_seconds == 1600 / 16 + 100 + 300 and many.seconds == 500.0
    alone = plan.wall_time(64, {})  # without the dependency every chapter is its own chain
    assert len(alone.path) == 1 and alone.path_seconds == 300.0  # chapter 5's sweeps, or chapter 7's 900 s / 3 seeds
    assert "chain 04 -> 05" in plan.wall_time(64, after).text()
    with pytest.raises(ValueError):
        plan.wall_time(0)


def test_fine_tuning_and_seed_items_count_their_jobs():
    """The items a cluster can spread: each fine-tuning item counts its classifiers, each of chapter 7's training
    items its seeds (every other item is one job)."""
    import re

    p4 = chapter_params("04_kovaleva_taxonomy", "quick")
    work = P.chapter_work("04_kovaleva_taxonomy", p4, MINILM, glue.recipe(p4))
    tuned = [w for w in work if w.what.startswith("fine-tuning")]
    assert tuned and all(w.jobs == int(re.search(r"\((\d+) runs", w.what).group(1)) > 1 for w in tuned)
    p7 = chapter_params("07_arct_cues", "quick")
    trained = [w for w in P.chapter_work("07_arct_cues", p7, MINILM) if w.kind.startswith("train")]
    assert trained and all(w.jobs == p7.n_seeds for w in trained)
    assert all(w.jobs == 1 for w in work + P.chapter_work("07_arct_cues", p7, MINILM) if not w.kind.startswith("train"))


def test_chapter_9s_models_are_jobs_side_by_side_in_the_wall_time():
    """Each model's measurements are one job (AcrossPipeline.measured): with workers, the chapter takes its longest
    model's work (or the total over the workers), not the sum. Fails where grouped items add up."""
    from attnbook.engine.cost import Shape, Work

    w = [Work("09", "a: surface", "forward", 300.0, group="a"), Work("09", "a: syntax", "forward", 100.0, group="a"),
         Work("09", "b: surface", "forward", 200.0, group="b"), Work("09", "joint map", "forward", 50.0)]
    plan = P.Plan("quick", "m", Shape(2, 2, 32, 64), {"forward": 1.0}, work=w)
    assert plan.wall_time(1).seconds == 650.0
    assert plan.wall_time(2).path_seconds == 50.0 + max(400.0, 600.0 / 2) == 450.0
    assert plan.wall_time(64).path_seconds == 450.0  # no faster than its longest model
    rows = plan.wall_time_rows([1, 2])
    assert [r["workers"] for r in rows] == [1, 2] and rows[1]["chain time"] == "7.5 min"


def test_the_plan_times_only_the_fine_tuning_kinds_its_work_uses(monkeypatch):
    """bfloat16 steps on a CPU without native bfloat16 take minutes to time at the paper's shape: a plan whose
    recipes train in float32 must not time them (fails on a ``measure_rates`` that times all four kinds)."""
    for name, value in (("fresh_probe_rate", (1e9, 10.0)), ("encode_rate", 1e4), ("parse_rate", 1e3),
                        ("load_rate", 1e9), ("kernel_startup", 2.0)):
        monkeypatch.setattr(P, name, lambda *a, value=value, **k: value)
    tiny = P.Shape(1, 2, 16, 32, vocab=3000)
    rates = P.measure_rates(tiny, seconds=0.01, kinds={"train_1", "forward"})
    assert "train_1" in rates and not {"train", "train_bf16", "train_bf16_1"} & set(rates)
    assert {"train", "train_bf16", "train_1", "train_bf16_1"} <= set(P.measure_rates(tiny, seconds=0.01))

    asked = []
    monkeypatch.setattr(P, "measure_rates", lambda shape, kinds=None, **kw: asked.append(set(kinds)) or
                        {**RATES, "startup": 2.0})
    plan = P.make_plan("smoke", chapters=["01_clark_surface_patterns", "04_kovaleva_taxonomy"])
    used = {w.kind for w in plan.work if w.kind != "startup"}
    assert asked == [used] and all(plan.seconds(w) > 0 for w in plan.work)
