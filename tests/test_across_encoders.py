"""Chapter 9, what holds across encoders: the final column is the rule's over each model's own outcome, rows of the
same finding meet across models, the profiles resolve, the plan counts each model's own work, the random-weight
short name is a seeded copy, and the chapter's pipeline runs end to end on two planted models of different families
(:mod:`tests.tiny_families`)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnbook import verdict
from attnbook.atlas import encoder_charts as ec
from attnbook.atlas import encoders as E
from attnbook.chapters.params import chapter_params
from attnbook.chapters.results import ChapterResults
from attnbook.core.errors import ParameterError
from attnbook.stats import Estimate
from tiny_families import plant

CH9 = "09_across_encoders"

OUTCOME_ESTIMATES = {  # each judged by Within(0.1, 0.2) against the paper's 0.5
    verdict.AGREES: Estimate(0.5, 0.45, 0.55, 100, "segments"),
    verdict.PARTLY: Estimate(0.65, 0.62, 0.68, 100, "segments"),
    verdict.DISAGREES: Estimate(0.9, 0.85, 0.95, 100, "segments"),
    verdict.INCONCLUSIVE: Estimate(0.6, 0.3, 0.9, 100, "segments"),
}


def fake(outcome: str, quantity: str = "a share", experiment: str = "§3.3 entropy") -> verdict.Comparison:
    """A model's row with the given outcome, made by the one verdict rule."""
    if outcome == verdict.NOT_COMPARABLE:
        return verdict.row(experiment, quantity, paper=0.5, ours="n/a", estimate=Estimate(math.nan),
                           rule=verdict.NotComparable("no such head here"))
    r = verdict.row(experiment, quantity, paper=0.5, ours=OUTCOME_ESTIMATES[outcome], rule=verdict.Within(0.1, 0.2))
    assert r.verdict == outcome
    return r


def model(label: str, *rows: verdict.Comparison, heads=None, skipped=None, n_layers: int = 6) -> E.ModelFindings:
    return E.ModelFindings(label, n_layers, list(rows), heads or {"relations": {}}, skipped or {})


def one(*outcomes: str) -> E.Finding:
    (f,) = E.across_findings([model(f"m{i + 1}", fake(o)) for i, o in enumerate(outcomes)])
    return f


# ------------------------------------------------------------------------------------------------ the final column


@pytest.mark.parametrize("outcomes, holds, rule_outcome", [
    ((verdict.AGREES, verdict.AGREES), "holds in both", verdict.AGREES),
    ((verdict.AGREES, verdict.PARTLY), "holds in both", verdict.AGREES),  # partly still holds; the cell says partly
    ((verdict.AGREES, verdict.DISAGREES), "holds in one (m1)", verdict.PARTLY),
    ((verdict.DISAGREES, verdict.PARTLY), "holds in one (m2)", verdict.PARTLY),
    ((verdict.DISAGREES, verdict.DISAGREES), "holds in neither", verdict.DISAGREES),
    ((verdict.AGREES, verdict.INCONCLUSIVE), "undecided", verdict.INCONCLUSIVE),
    ((verdict.DISAGREES, verdict.INCONCLUSIVE), "undecided", verdict.INCONCLUSIVE),
    ((verdict.INCONCLUSIVE, verdict.INCONCLUSIVE), "undecided", verdict.INCONCLUSIVE),
    ((verdict.AGREES, verdict.NOT_COMPARABLE), "holds in one (m1); not testable in m2", verdict.AGREES),
    ((verdict.NOT_COMPARABLE, verdict.NOT_COMPARABLE), "not testable", verdict.NOT_COMPARABLE),
    ((verdict.AGREES, verdict.AGREES, verdict.AGREES), "holds in all three", verdict.AGREES),
    ((verdict.AGREES, verdict.DISAGREES, verdict.AGREES), "holds in two (m1, m3)", verdict.PARTLY),
    ((verdict.DISAGREES, verdict.AGREES, verdict.INCONCLUSIVE), "holds in one (m2)", verdict.PARTLY),
    ((verdict.DISAGREES,) * 3, "holds in none", verdict.DISAGREES),
])
def test_the_final_column_is_the_rule_over_each_models_own_outcome(outcomes, holds, rule_outcome):
    f = one(*outcomes)
    assert f.holds == holds and f.outcome == rule_outcome
    row = f.comparison()
    assert row.verdict == rule_outcome and row.rejudged() == rule_outcome and row.kind == verdict.OWN
    assert row.note.startswith(holds) and all(f"m{i + 1}: " in row.ours for i in range(len(outcomes)))
    assert all(o in row.ours for o in outcomes)  # every model's own outcome is in the row


def test_a_model_without_the_row_is_not_run_with_its_reason_and_the_results_keep_the_outcome():
    a = model("m1", fake(verdict.AGREES, "gradients row", "§3.2 gradients"), fake(verdict.AGREES))
    b = model("m2", fake(verdict.DISAGREES), skipped={"§3.2 gradients": "no gradient segments here"})
    grads, entropy = E.across_findings([a, b])
    assert grads.absent == {"m2": "no gradient segments here"} and grads.holds == "holds in one (m1); not testable in m2"
    assert grads.category == "partial" and entropy.category == "some"
    table = E.wide_table([grads, entropy])
    assert list(table.columns) == ["experiment", "finding", "paper (bert-base)", "m1", "m1: outcome", "m2", "m2: outcome",
                                   "holds in", "note"]
    assert table.loc[0, "m2"] == "not run" and table.loc[1, "holds in"] == "holds in one (m1)"
    res = ChapterResults(CH9, {"profile": "smoke"}, {"name": "m1 vs m2"})
    res.compare(grads.comparison(), entropy.comparison())
    assert [c.verdict for c in res.comparisons] == [verdict.AGREES, verdict.PARTLY]
    assert "not run (no gradient segments here)" in res.comparisons[0].ours and len(res.table()) == 2


def test_the_sink_rows_meet_although_each_model_names_its_own_sink_token():
    q = "{t}->{t} share in heads that attend mostly to {t}"
    a = model("MiniLM", fake(verdict.AGREES, q.format(t="[CLS]"), "§3.2 special tokens"))
    b = model("MPNet", fake(verdict.INCONCLUSIVE, q.format(t="[SEP]"), "§3.2 special tokens"))
    (f,) = E.across_findings([a, b])
    assert f.quantity == q.format(t="[sink]") and set(f.cells) == {"MiniLM", "MPNet"}
    assert "MiniLM [CLS]" in f.note and "MPNet [SEP]" in f.note
    peaks = "layer where mean attention peaks: [CLS] / [SEP] / . or ,"
    assert len(E.across_findings([model("x", fake(verdict.AGREES, peaks)), model("y", fake(verdict.AGREES))])) == 2


def test_relative_depth_is_stated_where_the_paper_names_a_head_or_layers():
    det = ("§4.2 heads as parsers", "det: best head minus best fixed offset (points)")
    a = model("six", fake(verdict.AGREES, det[1], det[0]), heads={"relations": {"det": (3, 2)}}, n_layers=6)
    b = model("twelve", fake(verdict.AGREES, det[1], det[0]), heads={"relations": {"det": (9, 0)}}, n_layers=12)
    (f,) = E.across_findings([a, b])
    assert "paper 8-11 at 8/12 = 0.67" in f.note and "six 4-3 at 4/6 = 0.67" in f.note
    assert "twelve 10-1 at 10/12 = 0.83" in f.note
    prev = "layers with a head putting >50% of its attention on the previous token"
    (g,) = E.across_findings([model("six", fake(verdict.AGREES, prev, "§3.1 relative position"))])
    assert "layers 2, 4, 7, 8 of 12 = 0.17, 0.33, 0.58, 0.67; six: layers 1, 2, 4 of 6" in g.note


def test_the_summary_is_written_from_the_rows():
    rows = [("holding everywhere", verdict.AGREES, verdict.AGREES), ("here only", verdict.AGREES, verdict.DISAGREES),
            ("nowhere", verdict.DISAGREES, verdict.DISAGREES), ("unclear", verdict.AGREES, verdict.INCONCLUSIVE)]
    a = model("m1", *[fake(x, q) for q, x, _ in rows])
    b = model("m2", *[fake(y, q) for q, _, y in rows])
    text = E.summary_markdown(E.across_findings([a, b]))
    assert "Of 4 findings" in text and "1 holds in both, 1 holds in some but not all, 1 holds in none, 1 undecided" in text
    everywhere, specific = text.index("properties of attention heads"), text.index("model-specific")
    assert everywhere < text.index("holding everywhere") < specific
    assert specific < text.index("here only (§3.3 entropy): holds in one (m1), m2 disagrees") and "cannot decide (each model's outcome is in the table): unclear (§3.3 entropy)." in text
    b2 = model("m2", *[fake(verdict.AGREES, q) for q, _, _ in rows])
    assert "model-specific" not in E.summary_markdown(E.across_findings([model("m1", fake(verdict.AGREES, "q")), b2]))


# ------------------------------------------------------------------------------------------------ parameters, plan


def test_the_compared_models_and_their_sources_resolve_in_every_profile():
    q = chapter_params(CH9, "quick")
    assert E.compared_models(q.replace(model="x", models=["a", "b"])) == ["x", "a", "b"]
    assert E.compared_models(q.replace(model="b", models=["a", "b", "a"])) == ["a", "b"]
    assert E.compared_models(chapter_params(CH9, "quick").replace(models="mpnet")) == ["embedded", "mpnet"]
    for profile in ("smoke", "quick", "paper"):
        p = chapter_params(CH9, profile)
        for m in E.compared_models(p):
            src = E.source_parameters(chapter_params, profile, m, p.sizes)
            assert set(src) == set(E.SOURCES) and all(v.model == m for v in src.values())
    q = chapter_params(CH9, "quick")
    assert q.models == ["embedded", "mpnet"] and chapter_params(CH9, "paper").model == "bert-base-uncased"
    mp = E.source_parameters(chapter_params, "quick", "mpnet", q.sizes)
    assert mp[E.SURFACE].n_segments == mp[E.CLUSTERING].n_segments == 300 and mp[E.SURFACE].grad_segments == 200
    assert mp[E.SURFACE].mlm_fit_steps == chapter_params(E.SURFACE, "quick").mlm_fit_steps  # chapter 1's recipe
    own = E.source_parameters(chapter_params, "quick", "embedded", q.sizes)
    assert own[E.SURFACE] == chapter_params(E.SURFACE, "quick")  # the book's model: chapter 1's own parameters
    with pytest.raises(ParameterError, match="chapter 9 runs"):
        E.source_parameters(chapter_params, "quick", "mpnet", {"mpnet": {"05_kovaleva_disabling": {}}})
    with pytest.raises(ParameterError, match="n_segments"):
        E.source_parameters(chapter_params, "quick", "mpnet", {"mpnet": {E.SURFACE: {"n_segments": 200}}})


def test_the_plan_counts_each_models_own_work_and_reads_the_books_model_back(monkeypatch):
    from attnbook.chapters.params import chapter_stages
    from attnbook.chapters import plan as P
    from attnbook.data import models_fetch

    monkeypatch.setattr(models_fetch, "fetch_model", lambda *a, **k: pytest.fail("the plan fetched a model"))
    assert E.encoder_shape("mpnet") == E.FETCHED_SHAPES["all-mpnet-base-v2"]
    assert [s.name for s in chapter_stages(CH9)] == [i.name for _, i in E.AcrossPipeline.stage_methods()]
    public = [n for n, v in vars(E.AcrossPipeline).items() if callable(v) and not n.startswith("_")]
    assert set(public) - {n for n, _ in E.AcrossPipeline.stage_methods()} == {"data_files"}
    work = P.chapter_work(CH9, chapter_params(CH9, "quick"), P.planned_shape("embedded"))
    kinds = {m: {w.kind for w in work if w.what.startswith(f"{m}: ") and "word-level maps" not in w.what}
             for m in ("embedded", "mpnet")}  # the joint maps are the one measurement no chapter caches
    assert kinds["embedded"] <= {"encode", "parse"} and {"forward", "pairs", "probe"} <= kinds["mpnet"]
    assert {"vocab", "backprop"} <= kinds["mpnet"]  # MPNet's MLM head is fitted and its gradients taken, as chapter 1's
    smoke = P.chapter_work(CH9, chapter_params(CH9, "smoke"), P.planned_shape("embedded"))
    assert {"forward", "backprop", "vocab"} <= {w.kind for w in smoke if w.what.startswith("embedded-random: ")}


def test_the_random_short_name_is_a_seeded_copy_of_the_embedded_models_shape():
    from attnbook.chapters.plan import planned_shape
    from attnbook.engine.models import load_encoder

    a, b, real = load_encoder("embedded-random"), load_encoder("embedded-random"), load_encoder("embedded")
    assert a.fingerprint == b.fingerprint != real.fingerprint and a.path is None and "random" in a.revision
    assert a.name.startswith("random-weight all-MiniLM-L6-v2") and (a.n_layers, a.n_heads) == (real.n_layers, real.n_heads)
    pa, pr = a.model.state_dict(), real.model.state_dict()
    assert set(pa) == set(pr) and not torch.equal(pa["embeddings.word_embeddings.weight"],
                                                  pr["embeddings.word_embeddings.weight"])
    assert planned_shape("embedded-random") == planned_shape("embedded")
    assert E.model_labels({"embedded": real, "embedded-random": a}) == {
        "embedded": "all-MiniLM-L6-v2", "embedded-random": "random-weight all-MiniLM-L6-v2"}


# ------------------------------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def two_families(tmp_path_factory):
    root = tmp_path_factory.mktemp("across")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield [str(plant("bert", root / "bert")), str(plant("mpnet", root / "mpnet"))]
    torch.set_num_threads(threads)


def test_the_chapter_runs_end_to_end_on_two_planted_families(two_families):
    from attnbook.engine.finetune import base_encoder
    from attnbook.engine.inputs import role_names
    from attnbook.studies.clark.pipeline import SurfacePipeline

    bert, mpnet = two_families
    P = chapter_params(CH9, "smoke", {"model": bert, "models": [bert, mpnet]})
    models = {m: base_encoder(m) for m in E.compared_models(P)}
    sources = {m: E.source_parameters(chapter_params, "smoke", m, P.sizes) for m in models}
    run = E.AcrossPipeline(models, P, sources)
    labels = run.labels
    assert set(labels.values()) == {"bert", "mpnet"}
    findings = run.rows()
    assert len(findings) >= 15 and all(f.models == ("bert", "mpnet") for f in findings)
    assert all(set(f.cells) | set(f.absent) == {"bert", "mpnet"} for f in findings)
    keys = {(f.experiment, f.quantity) for f in findings}
    assert not keys & E.MODEL_FREE and {f.experiment for f in findings} >= {
        "§3.1 relative position", "§3.2 special tokens", "§3.3 entropy", "§4.2 heads as parsers", "§4.3 coreference",
        "§5 probing classifiers", "§6 clusters", "§4.2 FrameNet"}
    assert all(c.kind == verdict.CLAIM for f in findings for c in f.cells.values())
    res = ChapterResults(CH9, P, E.describe_models(models))
    res.compare(*[f.comparison() for f in findings])
    assert len(res.table()) == len(findings) and res.payload()["model"]["n_layers"] == "3 / 3"
    assert E.summary_markdown(findings).startswith(f"**What holds across encoders.** Of {len(findings)} findings")
    same = SurfacePipeline(models[bert], sources[bert][E.SURFACE]).statistics()  # read back: the same arguments
    assert np.array_equal(same["prev"], run.surface()[bert]["prev"])
    joint = run.joint()
    d = joint["js_mean"]
    assert d.shape == (24, 24) and np.allclose(d, d.T) and np.allclose(np.diag(d), 0) and (d >= 0).all()
    assert joint["model"][:12] == [bert] * 12 and joint["label"][12] == "1-1" and joint["n_sentences"] > 0
    assert isinstance(joint["n_sentences"], int) and isinstance(joint["layer"][0], int)
    stats = {labels[m]: s for m, s in run.surface().items()}
    charts = [ec.relative_position_chart(stats), ec.entropy_chart(stats),
              ec.special_tokens_chart(stats, {labels[m]: role_names(x.tokenizer) for m, x in models.items()}),
              ec.dependency_depth_chart(ec.dependency_frame(
                  {f.label: f.heads["relations"] for f in run.findings().values()},
                  {f.label: f.n_layers for f in run.findings().values()}, E.PAPER_HEADS["relations"], list(E.clark.TABLE1))),
              ec.joint_mds_chart(joint, np.random.default_rng(0).normal(size=(24, 2)), labels)]
    for chart in charts:
        assert chart.to_dict()["$schema"]
    assert ec.sizes_table(sources, labels).shape[1] == 4


def test_the_paper_profile_adds_bert_base_as_a_third_column(two_families, tmp_path, monkeypatch):
    """The paper profile's three models (bert-base-uncased planted in a hub cache, the embedded model, "mpnet" fetched
    as a planted MPNet) at the rehearsal's sizes: no code change, a third column, the final column over three."""
    from pathlib import Path

    from attnbook.data import models_fetch
    from attnbook.engine.finetune import base_encoder
    from planted import REHEARSAL_SIZES, plant_bert

    plant_bert(tmp_path / "hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(models_fetch, "fetch_model", lambda name, **kw: Path(two_families[1]))
    paper = chapter_params(CH9, "paper")
    tiny = {c: dict(REHEARSAL_SIZES[c]) for c in E.SOURCES}
    tiny[E.SURFACE].update(mlm_fit_steps=20, mlm_fit_segments=24, mlm_eval_every=10)
    tiny[E.CLUSTERING]["k_range"] = [3, 6]  # chapter 3 tries every k of k_range: the planted bert-base has 8 heads
    sizes = {m: {c: {**paper.sizes.get(m, {}).get(c, {}), **tiny[c]} for c in E.SOURCES} for m in paper.models}
    P = chapter_params(CH9, "paper", {"sizes": sizes, "joint_sentences": 20})
    models = {m: base_encoder(m) for m in E.compared_models(P)}
    sources = {m: E.source_parameters(chapter_params, "paper", m, P.sizes) for m in models}
    run = E.AcrossPipeline(models, P, sources)
    findings = run.rows()
    assert list(run.labels.values()) == ["bert-base-uncased", "all-MiniLM-L6-v2", "all-mpnet-base-v2"]
    assert len(findings) >= 15 and all(len(f.models) == 3 for f in findings)
    words = {f.holds.split(" (")[0].split(";")[0] for f in findings}
    assert words <= {"holds in all three", "holds in two", "holds in one", "holds in none", "undecided", "not testable"}
    assert len([c for c in E.wide_table(findings).columns if c.endswith(": outcome")]) == 3
    assert "bert-base-uncased" in E.describe_models(models)["shape_note"]  # the planted weights are not bert-base's


def test_the_joint_map_is_cached_as_distances_not_as_every_heads_maps(two_families, tmp_path, monkeypatch):
    """Issue 30's cache budget: the word-level maps (2 bytes per head and word pair) are not written; the distances
    are, and reading them back extracts nothing."""
    from attnbook.atlas import joint_map
    from attnbook.engine.finetune import base_encoder

    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path))
    models = {m: base_encoder(m) for m in two_families}
    first = joint_map.joint_distances(models, 6, max_tokens=64)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["across_distances"]

    def no_maps(*args, **kwargs):
        raise AssertionError("cached distances extracted maps again")

    monkeypatch.setattr(joint_map, "word_maps", no_maps)
    again = joint_map.joint_distances(models, 6, max_tokens=64)
    np.testing.assert_array_equal(again["js_mean"], first["js_mean"])
    assert again["label"] == first["label"] and again["n_sentences"] == first["n_sentences"]
    with pytest.raises(AssertionError, match="extracted maps again"):
        joint_map.joint_distances(models, 5, max_tokens=64)  # other sentences: computed, not read


def test_a_signed_finding_holds_in_the_papers_direction_whatever_its_size():
    """Regression: chapter 9 says a finding holds by the paper's direction, not its size, yet a determiner margin of
    +21.2 [+18.7, +23.5] against a larger paper margin was "disagrees / holds in neither"."""
    from attnbook import verdict
    from attnbook.atlas.encoders import Finding, holds_in
    from attnbook.stats import Estimate

    rule = verdict.Within(5.0, 10.0, unit="points", signed=True)
    det = verdict.row("§4.2 Table 1", "det: margin", paper=42.6, ours=Estimate(21.2, 18.7, 23.5, 2001), rule=rule)
    wrong = verdict.row("§4.2 Table 1", "det: margin", paper=42.6, ours=Estimate(-2.0, -3.0, -1.0, 2001), rule=rule)
    assert det.verdict == verdict.DISAGREES and holds_in(det) and not holds_in(wrong)
    f = Finding("§4.2 Table 1", "det: margin", 42.6, ("MiniLM", "MPNet"), {"MiniLM": det, "MPNet": wrong}, {})
    assert f.holds == "holds in one (MiniLM)"
    both = Finding("§4.2 Table 1", "det: margin", 42.6, ("MiniLM", "MPNet"), {"MiniLM": det, "MPNet": det}, {})
    assert both.holds == "holds in both"
    unsigned = verdict.row("§3", "share", paper=0.8, ours=Estimate(0.3, 0.25, 0.35, 900), rule=verdict.Within(0.05, 0.1))
    assert unsigned.same_direction() is None and not holds_in(unsigned)


@pytest.mark.integration
def test_on_a_cluster_each_model_is_one_job_and_the_rows_are_those_computed_here(two_families, tmp_path, monkeypatch):
    """Chapter 9's models measured as jobs on two one-thread workers, into a cache of their own: the chapter reads
    the same measurements back, so its rows equal the ones computed in this process. Fails if the jobs do not run
    (the stage returns nothing) or if a job measures with other arguments than the chapter's stages (their reads
    would miss the cache and the rows would differ or the entries would not be found)."""
    from attnbook.core import cache, executor
    from attnbook.engine.finetune import base_encoder

    bert, mpnet = two_families
    P = chapter_params(CH9, "smoke", {"model": bert, "models": [bert, mpnet]})
    models = {m: base_encoder(m) for m in E.compared_models(P)}
    sources = {m: E.source_parameters(chapter_params, "smoke", m, P.sizes) for m in models}
    here = E.AcrossPipeline(models, P, sources)
    assert here.measured() == {}  # the default scheduler: the stages compute as they go
    rows_here = [r.as_dict() for r in here.comparisons()]
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(executor.SCHEDULER_ENV, "local:2")
    try:
        there = E.AcrossPipeline(models, P, sources)
        entries = there.measured()
        assert set(entries) == {bert, mpnet} and all(entries.values())
        written = {f"{p.parent.name}/{p.stem}" for p in (tmp_path / "cache").glob("*/*.json")}
        assert set(entries[bert]) | set(entries[mpnet]) <= written  # written by the jobs, in the shared cache
        assert [r.as_dict() for r in there.comparisons()] == rows_here
        assert {e for found in entries.values() for e in found} <= set(cache.used_entries())  # in the provenance
    finally:
        executor._close("local:2")
