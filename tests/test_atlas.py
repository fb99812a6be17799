"""The head atlas (chapter 8): cards join the right values; each cross-paper test finds a planted relation and
none in shuffled data."""
from __future__ import annotations

import json

import numpy as np

from attnbook.core import cache
import pytest

from attnbook.atlas import cards, questions
from attnbook.atlas.charts import SELECTION, atlas_chart
from attnbook.atlas.sources import Measurements

L, H = 3, 4
CLASSES = ("Vertical", "Diagonal", "Vertical+diagonal", "Block", "Heterogeneous")


def grid(f) -> np.ndarray:
    return np.array([[f(l, h) for h in range(H)] for l in range(L)], dtype=float)


def constructed() -> Measurements:
    """Chapter outputs with values that name their head: ``value = 10 * layer + head`` (+ an offset per source)."""
    code = grid(lambda l, h: 10 * l + h)
    surface = {k: code / 100 + i for i, k in enumerate(("prev", "next", "self", "cls", "sep", "punct", "entropy"))}
    surface["uniform_entropy"] = 4.0
    # relation "nsubj": head (1, 2) is best above its baseline; "dobj": everything at baseline
    acc = np.stack([grid(lambda l, h: 0.9 if (l, h) == (1, 2) else 0.1), grid(lambda l, h: 0.3)])
    counts = np.zeros((L, H, len(CLASSES)))
    counts[..., 0] = 5
    counts[2, 3, 4] = 9  # head 3-4 is Heterogeneous
    order = sorted(((l, h) for l in range(L) for h in range(H)), key=lambda x: (x[0] * H + x[1]) % 5)
    d = np.abs(np.subtract.outer(np.arange(L * H), np.arange(L * H))).astype(float)
    return Measurements(
        n_layers=L, n_heads=H, model="toy", surface=surface,
        syntax={"relations": ["nsubj", "dobj"], "accuracy": acc, "baseline": np.array([0.2, 0.3]),
                "offset": np.array([1, -1])},
        coref={"accuracy": code / 1000, "baseline": 0.25, "n": 40},
        distances=d, clusters=np.array([1 + (i // 6) for i in range(L * H)]),
        behaviours=[["attends broadly"] if i % 3 == 0 else [] for i in range(L * H)],
        patterns={"pre-trained": counts, "SST-2": counts[..., ::-1].copy()}, pattern_classes=CLASSES,
        framenet={"mean": code / 50, "heads": [(0, 1), (2, 2)], "percentile": 99.0},
        disabling={"SST-2": {"delta": -code / 10, "low": -code / 10 - 1, "high": -code / 10 + 1, "n": 50, "seed": 0,
                             "learned": True}},
        masking={"task": "SST-2", "delta": code / 20, "low": code / 20 - 1, "high": code / 20 + 1, "n": 60, "seed": 0,
                 "learned": True},
        importance={"SST-2": code + 1, "MRPC": -code}, main_task="SST-2",
        pruning={"order": order, "safe_share": 0.25, "n_safe": 3, "tolerance": 1.0, "step": 0.25, "first_step": 3},
        notes={"disabling/RTE": "not swept in chapter 5: not learned"},
    )


# ------------------------------------------------------------------------------------------------ the joins


def test_a_card_gathers_its_heads_values_from_every_chapter():
    m = constructed()
    got = cards.head_cards(m, nearest=2)
    assert [c["head"] for c in got][:5] == ["1-1", "1-2", "1-3", "1-4", "2-1"]
    c = got[1 * H + 2]  # layer 1, head 2 (0-based) -> "2-3"
    assert (c["head"], c["layer"], c["index"]) == ("2-3", 2, 3)
    assert c["surface"]["prev"] == pytest.approx(0.12) and c["surface"]["entropy"] == pytest.approx(6.12)
    assert c["syntax"] == {"relation": "nsubj", "accuracy": 0.9, "offset_baseline": 0.2, "offset": 1, "margin": 0.7}
    assert c["coref"] == {"accuracy": 0.012, "nearest_baseline": 0.25, "n": 40}
    assert c["cluster"]["cluster"] == 2 and c["cluster"]["nearest"] == ["2-2", "2-4"]  # neighbours in flat order
    assert c["pattern"]["pre-trained"]["class"] == "Vertical"
    assert got[2 * H + 3]["pattern"]["pre-trained"] == {"class": "Heterogeneous", "share": 0.643}
    assert c["framenet"]["frame_head"] is False and got[1]["framenet"]["frame_head"] is True
    assert c["disabling"]["SST-2"] == {"delta": -1.2, "low": -2.2, "high": -0.2, "n": 50, "learned": True}
    assert c["disabling"]["RTE"] == cards.NOT_RUN
    assert c["importance"]["by_task"] == {"SST-2": 13.0, "MRPC": -12.0}
    assert got[-1]["importance"]["rank"] == 1 and got[0]["importance"]["rank"] == L * H
    assert c["masking"] == {"task": "SST-2", "delta": 0.6, "low": -0.4, "high": 1.6, "n": 60, "learned": True}
    first = m.pruning["order"][0]
    assert got[first[0] * H + first[1]]["pruning"]["position"] == 1
    assert [g["pruning"]["survives"] for g in got].count(False) == m.pruning["n_safe"]


def test_missing_measurements_say_not_run_never_a_default():
    m = constructed()
    m.surface = m.syntax = m.coref = m.distances = m.clusters = m.patterns = None
    m.framenet = m.disabling = m.masking = m.importance = m.pruning = None
    got = cards.head_cards(m)
    for key in ("surface", "syntax", "coref", "cluster", "pattern", "framenet", "disabling", "importance", "masking",
                "pruning"):
        assert all(c[key] == cards.NOT_RUN for c in got), key
    frame = cards.flat_frame(got)
    table = cards.card_table(frame)
    assert (table.drop(columns="head") == cards.NOT_RUN).all().all()
    assert frame["importance"].isna().all()


def test_cards_are_json_and_the_table_keeps_1_based_labels():
    got = cards.head_cards(constructed())
    json.dumps(got)
    frame = cards.flat_frame(got)
    assert frame["label"].tolist()[0] == "1-1" and frame["label"].tolist()[-1] == f"{L}-{H}"
    assert (frame["layer"].min(), frame["index"].min()) == (1, 1)
    table = cards.card_table(frame)
    assert table.loc[table["head"] == "2-3", "syntax"].item().startswith("nsubj: 0.90")
    assert "rank 1" in table.loc[table["head"] == f"{L}-{H}", "importance"].item()


def test_the_atlas_chart_links_the_grid_the_card_and_the_scatter():
    frame = cards.flat_frame(cards.head_cards(constructed()))
    spec = atlas_chart(frame).to_dict()
    text = json.dumps(spec)
    assert SELECTION in text and "transform_fold" not in text and '"fold"' in text
    assert text.count(f'"param": "{SELECTION}"') >= 3  # grid outline, card filter, scatter highlight


# ------------------------------------------------------------------------------------------------ the tests


def test_rank_test_finds_a_planted_correlation_and_none_in_shuffled_data():
    rng = np.random.default_rng(1)
    x = rng.normal(size=144)
    y = x + rng.normal(scale=0.5, size=144)
    t = questions.rank_test(x, y, n_permutations=999, n_resamples=500)
    assert t["tells"] == "positive" and t["p"] < 0.01 and t["estimate"].low > 0.5
    neg = questions.rank_test(x, -y, n_permutations=999, n_resamples=500)
    assert neg["tells"] == "negative"
    shuffled = questions.rank_test(x, rng.permutation(y), n_permutations=999, n_resamples=500)
    assert shuffled["tells"] == "cannot tell" and shuffled["estimate"].low < 0 < shuffled["estimate"].high
    const = questions.rank_test(x, np.ones(144))
    assert const["tells"] == "cannot tell" and np.isnan(const["rho"])


def test_class_test_finds_planted_differences_and_none_in_shuffled_labels():
    rng = np.random.default_rng(2)
    classes = np.repeat(["Vertical", "Diagonal", "Block"], 40)
    values = rng.normal(size=120) + np.repeat([0.0, 1.5, 3.0], 40)
    t = questions.class_test(classes, values, n_permutations=999)
    assert t["tells"] == "differ" and t["p"] < 0.01 and t["epsilon2"] > 0.3
    null = questions.class_test(rng.permutation(classes), rng.normal(size=120), n_permutations=999)
    assert null["tells"] == "cannot tell"
    one = questions.class_test(["Vertical"] * 10, rng.normal(size=10))
    assert one["tells"] == "cannot tell"


def _planted(n_layers=6, n_heads=12, seed=0, planted=True) -> Measurements:
    """A model-sized Measurements where importance follows the syntax margin (planted) or not (shuffled)."""
    rng = np.random.default_rng(seed)
    margin = rng.uniform(0, 0.5, size=(n_layers, n_heads))
    imp = margin + rng.normal(scale=0.05, size=margin.shape) if planted else rng.permutation(margin.ravel()).reshape(
        margin.shape)
    entropy = rng.uniform(1, 4, size=margin.shape)
    order_values = -entropy if planted else rng.normal(size=margin.shape)  # planted: broad heads pruned first
    order = [divmod(int(k), n_heads) for k in np.argsort(order_values.ravel(), kind="stable")]
    surface = {k: rng.uniform(0, 0.3, size=margin.shape) for k in ("prev", "next", "self", "cls", "sep", "punct")}
    surface["entropy"] = entropy
    return Measurements(
        n_layers=n_layers, n_heads=n_heads, surface=surface,
        syntax={"relations": ["nsubj"], "accuracy": (margin + 0.2)[None], "baseline": np.array([0.2]),
                "offset": np.array([1])},
        importance={"SST-2": imp}, main_task="SST-2",
        pruning={"order": order, "safe_share": 0.1, "n_safe": 7, "tolerance": 1.0, "step": 0.1, "first_step": 7},
    )


@pytest.mark.parametrize("planted", [True, False])
def test_syntax_vs_importance_and_pruned_first(planted):
    m = _planted(planted=planted)
    (syn,) = questions.syntax_vs_importance(m, n_permutations=999, n_resamples=300)
    broad = questions.pruned_first(m, n_permutations=999, n_resamples=300)[0]
    if planted:
        assert syn["tells"] == "positive" and broad["tells"] == "positive"
        assert "a positive relation" in syn["sentence"]
    else:
        assert syn["tells"] == "cannot tell" and broad["tells"] == "cannot tell"
        assert "cannot tell" in syn["sentence"]
    assert broad["counts"] is None  # no chapter-3 behaviours in this Measurements


def test_pattern_vs_effects_planted_and_shuffled():
    rng = np.random.default_rng(3)
    n_layers, n_heads = 6, 12
    cls = rng.integers(0, 3, size=(n_layers, n_heads))
    counts = np.eye(len(CLASSES))[cls] * 10
    planted = cls * 2.0 + rng.normal(scale=0.3, size=cls.shape)
    m = Measurements(n_layers=n_layers, n_heads=n_heads, patterns={"pre-trained": counts}, pattern_classes=CLASSES,
                     importance={"SST-2": planted}, main_task="SST-2",
                     disabling={"SST-2": {"delta": rng.permutation(planted.ravel()).reshape(cls.shape), "n": 10}})
    imp, dis = questions.pattern_vs_effects(m, n_permutations=999)
    assert imp["classes_from"] == "pre-trained" and imp["tells"] == "differ"
    assert dis["measure"] == "disabling effect" and dis["tells"] == "cannot tell"


def test_framenet_heads_switched_off_planted_and_shuffled():
    n_layers, n_heads = 6, 12
    rng = np.random.default_rng(4)
    heads = [(1, 2), (3, 4), (5, 6)]
    delta = rng.normal(scale=0.2, size=(n_layers, n_heads))
    hurt = delta.copy()
    for l, h in heads:
        hurt[l, h] = -5.0
    m = Measurements(n_layers=n_layers, n_heads=n_heads, framenet={"mean": delta, "heads": heads},
                     disabling={"SST-2": {"delta": hurt, "low": hurt - 1, "high": hurt + 1, "n": 100},
                                "MRPC": {"delta": delta, "low": delta - 1, "high": delta + 1, "n": 100}},
                     notes={"disabling/RTE": "not swept in chapter 5: not learned"})
    sst, mrpc, rte = questions.framenet_switched_off(m, n_permutations=999)
    assert sst["p"] < 0.01 and sst["estimate"].value == pytest.approx(-5.0) and "2-3, 4-5, 6-7 hurt" in sst["sentence"]
    assert mrpc["p"] > 0.05 and "cannot tell" in mrpc["sentence"]
    assert rte["measured"] is False and rte["task"] == "RTE"
    m.disabling = None
    assert questions.framenet_switched_off(m)[0]["measured"] is False


def test_every_answer_becomes_one_of_the_books_own_questions_with_its_sentence():
    """Issue 32: chapter 8's rows were "not comparable" claims and inflated the papers' counts; each is now one of the
    book's own questions (kind own), stated as the book's expectation and judged by its own rule."""
    from attnbook import verdict

    m = _planted()
    answers = questions.syntax_vs_importance(m, n_permutations=99, n_resamples=50) + questions.framenet_switched_off(m)
    rows = questions.comparison_rows(answers)
    assert len(rows) == 2 and {r.kind for r in rows} == {verdict.OWN}
    assert rows[0].note == answers[0]["sentence"] and rows[0].n == 72
    assert rows[0].verdict == verdict.AGREES and rows[0].outcome_words == "supported"  # planted: ρ surely > 0
    assert rows[1].ours == "not measured" and rows[1].outcome_words == "not testable here"
    shuffled = questions.comparison_rows(questions.syntax_vs_importance(_planted(planted=False), n_permutations=99,
                                                                        n_resamples=200))[0]
    assert shuffled.outcome_words == "undecided" and "this model has 72 heads" in shuffled.detectable
    json.dumps(questions.answers_record(answers))


def test_class_and_frame_questions_are_judged_by_their_own_rules():
    from attnbook import verdict

    rng = np.random.default_rng(3)
    cls = rng.integers(0, 3, size=(6, 12))
    planted = cls * 2.0 + rng.normal(scale=0.3, size=cls.shape)
    m = Measurements(n_layers=6, n_heads=12, patterns={"pre-trained": np.eye(len(CLASSES))[cls] * 10},
                     pattern_classes=CLASSES, importance={"SST-2": planted}, main_task="SST-2",
                     disabling={"SST-2": {"delta": rng.permutation(planted.ravel()).reshape(cls.shape), "n": 10}})
    differ, cannot = questions.comparison_rows(questions.pattern_vs_effects(m, n_permutations=999))
    assert differ.verdict == verdict.AGREES and differ.rule == questions.CLASS_RULE.words
    assert cannot.verdict == verdict.INCONCLUSIVE and "needs ε² above about" in cannot.detectable
    heads = [(1, 2), (3, 4)]
    flat = np.zeros((6, 12))
    frames = Measurements(n_layers=6, n_heads=12, framenet={"mean": flat, "heads": heads},
                          disabling={"SST-2": {"delta": flat, "low": flat - 0.5, "high": flat + 0.5, "n": 800},
                                     "RTE": {"delta": flat - 3, "low": flat - 4, "high": flat - 2, "n": 100}})
    none, needed = questions.comparison_rows(questions.framenet_switched_off(frames, n_permutations=99))
    assert none.verdict == verdict.AGREES and needed.verdict == verdict.DISAGREES
    assert needed.outcome_words == "not supported" and "no change beyond ±1 point" in needed.quantity


def test_syntax_join_takes_the_best_direction_and_leaves_out_pooled_and_empty_relations():
    from attnbook.atlas.sources import syntax_arrays
    from attnbook.studies.clark.syntax import HeadAccuracy

    correct = np.zeros((3, L, H, 2))
    correct[1, 2, 3, 1] = 8  # "nsubj": head 3-4, second direction, 8 of 10
    correct[1, 0, 0, 0] = 3
    acc = HeadAccuracy(relations=["All", "nsubj", "dobj"], correct=correct, total=np.array([20, 10, 0]),
                       baseline_correct=np.array([[1, 2], [4, 6], [0, 0]]), offsets=[-1, 1])
    got = syntax_arrays(acc)
    assert got["relations"] == ["nsubj"]
    assert got["accuracy"][0, 2, 3] == pytest.approx(0.8) and got["accuracy"][0, 0, 0] == pytest.approx(0.3)
    assert got["baseline"].tolist() == [0.6] and got["offset"].tolist() == [1]


def test_the_atlas_reads_chapters_with_the_overrides_they_ran_with():
    from attnbook.atlas.sources import SOURCE_CHAPTERS, source_parameters
    from attnbook.chapters.params import chapter_params
    from attnbook.core.errors import ParameterError

    params = source_parameters(chapter_params, "paper", "embedded",
                               {"01_clark_surface_patterns": {"n_segments": 7},
                                "05_kovaleva_disabling": {"recipe_overrides": {"epochs": 1}}})
    assert list(params) == list(SOURCE_CHAPTERS)
    assert params["01_clark_surface_patterns"].n_segments == 7
    assert params["05_kovaleva_disabling"].recipe_overrides == {"epochs": 1}
    assert all(p.model == "embedded" and p.profile == "paper"
               for p in params.values())
    with pytest.raises(ParameterError, match="the atlas reads"):
        source_parameters(chapter_params, "paper", "embedded", {"07_arct_cues": {"epochs": 1}})


def test_the_chapter_and_its_gathering_load_the_model_once(monkeypatch):
    """Chapter 8's opening cell takes the model with ``base_encoder`` and ``gather`` reuses that handle (it loaded a
    second copy, 2 s of the chapter, before)."""
    from attnbook.atlas import sources
    from attnbook.chapters.params import chapter_params
    from attnbook.engine import finetune, models

    calls = []
    real = models.load_encoder
    counted = lambda *a, **k: calls.append(a) or real(*a, **k)  # noqa: E731
    monkeypatch.setattr(models, "load_encoder", counted)
    monkeypatch.setattr(finetune, "load_encoder", counted)
    finetune._load_base.cache_clear()
    try:
        p1 = chapter_params("01_clark_surface_patterns", "smoke", {"n_segments": 2, "use_cache": False})
        loaded = finetune.base_encoder(p1.model)  # what the chapter's opening cell does
        with cache.disabled():
            m = sources.gather({"01_clark_surface_patterns": p1}, lambda p: {})
    finally:
        finetune._load_base.cache_clear()
    assert len(calls) == 1 and m.model == loaded.name and m.surface is not None


def test_the_syntax_importance_correlation_is_taken_within_layers_so_a_layer_effect_cannot_make_it():
    """Regression: the rank correlation of the syntax margin and importance was pooled over heads of all layers, so
    two measures that only move with depth (importance is normalised per layer; the syntax margin peaks in the middle
    layers) "correlated". Simulated with a layer effect and no relation inside any layer, the pooled test calls a
    relation in most runs; the within-layer test in at most about 5%."""
    import math

    from attnbook.atlas.questions import rank_test

    rng = np.random.default_rng(0)
    L, H, n_sim = 6, 12, 150
    layers = np.repeat(np.arange(L), H)
    pooled = within = 0
    for _ in range(n_sim):
        level = rng.normal(0, 1, L)
        x = (level[:, None] + 0.5 * rng.normal(size=(L, H))).ravel()
        y = (level[:, None] + 0.5 * rng.normal(size=(L, H))).ravel()
        pooled += rank_test(x, y, n_permutations=200, n_resamples=300, seed=1)["tells"] != "cannot tell"
        within += rank_test(x, y, n_permutations=200, n_resamples=300, seed=1, strata=layers)["tells"] != "cannot tell"
    assert pooled / n_sim > 0.5
    assert within / n_sim <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / n_sim)
    # a relation inside the layers is found
    x = rng.normal(size=L * H)
    t = rank_test(x, x + 0.3 * rng.normal(size=L * H), n_permutations=500, n_resamples=500, strata=layers)
    assert t["tells"] == "positive" and t["estimate"].unit == "heads (within layers)" and "pooled_rho" in t


def test_the_tasks_syntax_answers_are_read_together_and_a_sign_flip_is_said():
    from attnbook.atlas.questions import across_tasks_sentence

    a = [{"measured": True, "task": "SST-2", "rho": 0.47, "pooled_rho": 0.5, "tells": "positive"},
         {"measured": True, "task": "MRPC", "rho": -0.49, "pooled_rho": -0.3, "tells": "negative"}]
    text = across_tasks_sentence(a)
    assert text.startswith("Read together, the tasks disagree: the within-layer correlations are SST-2 +0.47 "
                           "(positive), MRPC -0.49 (negative).")
    assert "Pooled over layers they are SST-2 +0.50, MRPC -0.30" in text
    same = across_tasks_sentence([dict(a[0]), dict(a[0], task="RTE")])
    assert same.startswith("Read together, the tasks point the same way")
    assert across_tasks_sentence(a[:1]) == ""
