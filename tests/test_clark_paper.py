"""Clark et al.'s numbers and the "paper vs this run" rows of chapters 1-3: verdicts follow the numbers."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform
from toy_clark import planted
from toy_gum import toy_files

from attnbook import verdict
from attnbook.chapters.results import VERDICTS
from attnbook.core.errors import ParameterError
from attnbook.data import gum
from attnbook.data.conllu import Sentence
from attnbook.studies.clark import clusters, coref, distances, embedding, paper, syntax
from attnbook.studies.clark.paper import text as paper_text
from attnbook.studies.clark.gradients import AttentionGradientStats, MLMQuality
from attnbook.studies.clark.surface import STAT_NAMES
from attnbook.studies.clark.wordmaps import SplitWords


@pytest.fixture
def toy_window(tmp_path, tokenizer) -> coref.CorefWindow:
    (win,) = coref.windows([gum.load_document(*toy_files(tmp_path))], tokenizer, max_tokens=128, first_only=True)
    return win


# ----------------------------------------------------------------------------- §3 surface patterns


def surface_stats(n_layers=6, n_heads=12, sink="sep", prev_layers=(1, 2, 4), next_layers=(1, 2, 3),
                  majority=(3, 4, 5), n_segments=40, noise=0.01, seed=0):
    """Per-head statistics shaped like chapter 1's, with per-segment values around the means (``noise``):
    positional heads in ``prev_layers`` / ``next_layers`` (1-based), a [SEP] (or [CLS]) sink giving over half of
    the attention in the ``majority`` layers, [CLS] early, punctuation deep."""
    z = np.zeros((n_layers, n_heads))
    s = {k: z.copy() for k in STAT_NAMES}
    for layer in prev_layers:
        s["prev"][layer - 1, 0] = 0.8
    for layer in next_layers:
        s["next"][layer - 1, 3] = 0.7
    s["cls"][0] = 0.3
    s[sink][:] = 0.1
    for layer in majority:
        s[sink][layer - 1] = 0.7
    s["punct"][-1] = 0.2
    s["sep_sep"][:] = 0.95
    s["cls_cls"][:] = 0.95  # from the sink token, attention stays on it (Clark §3.2), whichever the sink is
    s["entropy"][0] = 3.5
    s["entropy_cls"][-1] = 3.2  # 80% of uniform attention's entropy over e^4 pieces, as the paper's 3.89 / ln 128
    s["uniform_entropy"] = np.array(4.0)
    rng = np.random.default_rng(seed)
    means = np.stack([s[k] for k in STAT_NAMES])
    per = means[None] + rng.normal(scale=noise, size=(n_segments,) + means.shape)
    per += means - per.mean(0)  # the means stay exactly the planted values
    s["per_segment"] = per
    s["per_segment_uniform_entropy"] = np.full(n_segments, 4.0) + rng.normal(scale=noise, size=n_segments)
    return s


def gradient_stats(small_layers, sink="sep", n_layers=6, n_heads=12, n_segments=20, noise=0.02, seed=1):
    """Per-segment |dL/d attn| whose ratio sink / other is 0.1 in ``small_layers`` (0-based) and 2 elsewhere."""
    rng = np.random.default_rng(seed)
    per = np.ones((n_segments, 4, n_layers, n_heads))
    cat = AttentionGradientStats.CATEGORIES.index(sink)
    per[:, cat] = 2.0
    per[:, cat, list(small_layers)] = 0.1
    per *= np.exp(rng.normal(scale=noise, size=per.shape))
    out = {f"grad_{c}": per[:, k].mean(0) for k, c in enumerate(AttentionGradientStats.CATEGORIES)}
    out["per_segment"] = per
    return out


PREV = "layers with a head putting >50% of its attention on the previous token"
CLS_ENTROPY = "mean entropy from [CLS] in the last layer / uniform entropy at the segment length"
NEXT = "layers with a head putting >50% of its attention on the next token"
MAJORITY = "layers where over half of the attention goes to [SEP]"


def test_relative_layers_maps_bert_base_depth():
    assert paper.relative_layers([2, 4, 7, 8], 12) == [2, 4, 7, 8]
    assert paper.relative_layers([2, 4, 7, 8], 6) == [1, 2, 4]
    assert paper.relative_layers([6, 7, 8, 9, 10], 6) == [3, 4, 5]
    assert paper.relative_layers([1, 12], 24) == [2, 24]


def test_surface_comparison_on_a_bert_like_model():
    stats = surface_stats()
    grads = gradient_stats(small_layers=[2, 3])  # small where [SEP] attention is large
    rows = paper.surface_comparison(stats, grads, n_resamples=400)
    by = {r.quantity: r for r in rows}
    prev = by[PREV]
    assert prev.paper == "4 of 144 heads, layers 2, 4, 7, 8 of 12: band 2-8 (here: layers 1-4 of 6)"
    assert prev.ours == "3 of 72 heads [3, 3], layers 1, 2, 4" and prev.verdict == verdict.AGREES
    assert prev.rule.startswith("such a head exists, and every such head lies within the paper's band")
    assert by[NEXT].verdict == verdict.AGREES
    peaks = by["layer where mean attention peaks: [CLS] / [SEP] / . or ,"]
    assert peaks.ours == "1 / 3 / 6 of 6" and peaks.verdict == verdict.AGREES
    sep = by[MAJORITY]
    assert sep.paper == "6-10 of 12 (here: layers 3-5 of 6)" and sep.ours.startswith("3, 4, 5 of 6")
    assert sep.verdict == verdict.AGREES
    assert by["the special token that gets the most attention (mean over all heads)"].verdict == verdict.AGREES
    share = by["[SEP]->[SEP] share in heads that attend mostly to [SEP]"]
    assert share.paper == "> 0.90" and share.ours.startswith("0.950 [") and share.verdict == verdict.AGREES
    assert share.low > 0.9 and share.unit == "segments" and share.n == 40
    grad = [r for r in rows if r.experiment == "§3.2 gradients"][0]
    assert grad.paper == "small where [SEP] attention is high (layer 5 on)" and grad.verdict == verdict.AGREES
    assert grad.high < 0 and grad.n == 20
    cls = by[CLS_ENTROPY]
    assert cls.paper == "0.802 (3.89 nats / ln 128)" and cls.verdict == verdict.AGREES  # 0.80 of uniform, both sides
    assert cls.value == pytest.approx(0.8, abs=2e-3) and cls.ours.endswith("(3.200 nats / ln 55)")
    assert all(r.verdict in verdict.OUTCOMES and r.rule for r in rows)
    # every sample estimate carries its interval (claims checked resample by resample carry their share instead)
    for r in rows:
        if "bootstrap resamples" in r.rule:
            assert r.n == 40 and r.low is None and "share of 400 resamples of 40 segments" in r.note
        elif r.verdict != verdict.NOT_COMPARABLE:
            assert r.low < r.high and r.unit == "segments", r.quantity
    assert len(paper.surface_comparison(stats, n_resamples=400)) == len(rows) - 1  # no gradients: no gradient row


def _cls_entropy_stats(nats: float, pieces: int, noise: float = 0.01):
    """Chapter 1's statistics with the last layer's [CLS] entropy at ``nats`` in segments of ``pieces`` pieces."""
    stats = surface_stats()
    k = STAT_NAMES.index("entropy_cls")
    stats["per_segment"][:, k, -1] += nats - stats["per_segment"][:, k, -1].mean(0)
    stats["entropy_cls"][-1] = nats
    rng = np.random.default_rng(3)
    stats["per_segment_uniform_entropy"] = np.log(pieces) + rng.normal(scale=noise, size=40)
    stats["uniform_entropy"] = np.array(np.log(pieces))
    return stats


@pytest.mark.parametrize("nats,pieces,outcome", [
    (3.784, 109, verdict.AGREES),    # this run's 109-piece segments: 0.807 of uniform against the paper's 0.802
    (3.6, 40, verdict.DISAGREES),    # 7% below 3.89 nats, but 0.98 of uniform over 40 pieces: far broader
    (3.89, 512, verdict.DISAGREES),  # the paper's nats exactly, over 512 pieces only 0.62 of uniform
])
def test_the_cls_entropy_is_judged_as_a_share_of_uniform_entropy(nats, pieces, outcome):
    """Entropy grows with the number of positions attended to, so raw nats compare segments of different lengths.
    Before, 3.6 nats over 40 pieces and 3.89 over 512 "agreed" with the paper's 3.89 (within 10%); now each side is
    divided by ln of its mean segment length (the paper's 128 pieces) and judged by :data:`CLS_ENTROPY_RULE`."""
    rows = paper.surface_comparison(_cls_entropy_stats(nats, pieces), n_resamples=300)
    row = {r.quantity: r for r in rows}[CLS_ENTROPY]
    assert row.verdict == outcome and row.value == pytest.approx(nats / np.log(pieces), abs=2e-3)
    assert row.paper_value == pytest.approx(3.89 / np.log(128), abs=1e-4) and row.rule == paper.CLS_ENTROPY_RULE.words
    assert "(tolerance: the paper's normaliser" in row.rule and f"ln {pieces}" in row.ours
    old = verdict.judge(verdict.Within(0.1, 0.25, relative=True), 3.89, verdict.as_estimate(nats))  # raw nats
    assert old == verdict.AGREES


def test_relative_position_and_sep_rows_compare_layers_not_counts():
    """A head counts only where it lies: one previous-token head in layer 6 of 6 (outside the band of the paper's
    layers 2-8 of 12) and a [SEP] majority in layer 1 (outside the band of 6-10) disagree, though such heads and
    layers exist; a head outside the band that sits at the 50% line cannot be told."""
    stats = surface_stats(prev_layers=(6,), next_layers=(5,), majority=(1,))
    by = {r.quantity: r for r in paper.surface_comparison(stats, n_resamples=400)}
    assert by[PREV].verdict == verdict.DISAGREES and by[PREV].ours.startswith("1 of 72 heads")
    assert by[NEXT].verdict == verdict.DISAGREES
    assert by[MAJORITY].verdict == verdict.DISAGREES and by[MAJORITY].ours.startswith("1 of 6")
    close = surface_stats(prev_layers=(1, 2, 4), noise=0.05)
    k = STAT_NAMES.index("prev")
    close["per_segment"][:, k, 5, 0] += 0.5 - close["per_segment"][:, k, 5, 0].mean()  # layer 6's head: at 50%
    close["prev"][5, 0] = 0.5
    row = {r.quantity: r for r in paper.surface_comparison(close, n_resamples=400)}[PREV]
    assert row.verdict == verdict.INCONCLUSIVE


@pytest.mark.parametrize("prev,nxt,majority", [((1,), (2,), (3,)), ((1,), (2,), (4, 5)), ((3,), (1, 3), (3, 4, 5))])
def test_layer_findings_are_judged_as_a_band_of_relative_depth(prev, nxt, majority):
    """The paper's §3.1 heads ("especially in earlier layers": layers 2, 4, 7, 8 and 1, 2, 2, 3, 6 of 12) and §3.2's
    [SEP] majority ("layers 6-10") are judged as bands of relative depth: such a head (layer) exists and every one
    lies within the band. Before, only exactly the paper's layers at relative depth agreed, so a previous-token head
    in layer 1 alone and a next-token head in layer 2 alone (chapter 1's all-MiniLM-L6-v2) disagreed."""
    assert paper.paper_band([2, 4, 7, 8], 6) == [1, 2, 3, 4] and paper.paper_band([1, 2, 2, 3, 6], 6) == [1, 2, 3]
    assert paper.paper_band([6, 7, 8, 9, 10], 6) == [3, 4, 5] and paper.paper_band([2, 4, 7, 8], 12) == list(range(2, 9))
    stats = surface_stats(prev_layers=prev, next_layers=nxt, majority=majority)
    by = {r.quantity: r for r in paper.surface_comparison(stats, n_resamples=400)}
    for q in (PREV, NEXT, MAJORITY):
        assert by[q].verdict == verdict.AGREES, q
    assert "band" in by[PREV].rule and "(description, not judged)" in by[PREV].note
    # the band needs such a head: none at all disagrees
    none = surface_stats(prev_layers=(), next_layers=nxt, majority=majority)
    assert {r.quantity: r for r in paper.surface_comparison(none, n_resamples=200)}[PREV].verdict == verdict.DISAGREES


def test_in_band_needs_a_passing_layer_and_none_outside():
    passing = np.array([[1, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 1], [0, 1, 1, 0]], dtype=bool)
    assert paper.in_band(passing, [1, 2, 3]).tolist() == [True, False, False, True]


def test_surface_comparison_names_a_cls_sink():
    stats = surface_stats(sink="cls")
    rows = paper.surface_comparison(stats, gradient_stats([2, 3], sink="cls"), n_resamples=400)
    by = {r.quantity: r for r in rows}
    assert by["the special token that gets the most attention (mean over all heads)"].verdict == verdict.DISAGREES
    assert by[MAJORITY].verdict == verdict.DISAGREES
    # issue 32: judged on the model's own sink token, as the gradient row is (it was "not comparable": no [SEP] head)
    sink = by["[CLS]->[CLS] share in heads that attend mostly to [CLS]"]
    assert sink.verdict == verdict.AGREES and sink.paper == "> 0.90" and "[SEP]->[SEP] claim tested on the model's own sink token" in sink.note
    grad = [r for r in rows if r.experiment == "§3.2 gradients"][0]
    assert "[CLS]" in grad.quantity and "(the paper tested [SEP])" in grad.note
    assert grad.verdict == verdict.AGREES
    text = paper.agreement_markdown(rows, "tiny", stats=stats)
    assert text.startswith("**What this run found.** Of 9 comparisons,") and "no-op target" in text
    assert "The model here is tiny (6 layers x 12 heads); the paper's is bert-base-uncased" in text
    assert "The pattern behind them holds on average" in text
    assert "paper 6-10 of 12" in text.split("Disagree</span>** (")[1]


def test_findings_say_the_sink_pattern_carries_over_only_when_the_gradients_say_so():
    """Issue 17, defect 5: the findings always said the pattern behind the [SEP] finding carries over, even when
    the gradient row disagreed. Now the sentence follows the gradient row's outcome."""
    stats = surface_stats(sink="cls")
    wrong_way = gradient_stats(small_layers=[0, 1], sink="cls")  # small where [CLS] attention is *low*
    rows = paper.surface_comparison(stats, wrong_way, n_resamples=400)
    grad = [r for r in rows if r.experiment == "§3.2 gradients"][0]
    assert grad.verdict == verdict.DISAGREES
    text = paper.agreement_markdown(rows, "tiny", stats=stats)
    assert "pattern behind them holds" not in text and "not supported" in text
    flat = gradient_stats(small_layers=[], sink="cls", noise=0.3)  # no contrast: the data cannot tell
    rows = paper.surface_comparison(stats, flat, n_resamples=400)
    assert [r for r in rows if r.experiment == "§3.2 gradients"][0].verdict == verdict.INCONCLUSIVE
    assert "cannot tell" in paper.agreement_markdown(rows, "tiny", stats=stats)


def test_gradient_row_is_not_comparable_for_an_mlm_head_no_better_than_a_constant():
    stats = surface_stats()
    poor = MLMQuality("fitted on the frozen encoder", 0.002, 0.0, 0.012, 468, 0.051, "the")
    rows = paper.surface_comparison(stats, gradient_stats([2, 3]), mlm=poor, n_resamples=200)
    grad = [r for r in rows if r.experiment == "§3.2 gradients"][0]
    assert grad.verdict == verdict.NOT_COMPARABLE and "always predicting 'the'" in grad.note
    good = MLMQuality("fitted on the frozen encoder", 0.3, 0.25, 0.35, 468, 0.051, "the")
    rows = paper.surface_comparison(stats, gradient_stats([2, 3]), mlm=good, n_resamples=200)
    assert [r for r in rows if r.experiment == "§3.2 gradients"][0].verdict == verdict.AGREES


def test_mlm_head_row_names_the_head_used():
    """Issue 19: the row says which head the gradients used - the checkpoint's own or a fitted one; before, a
    checkpoint's own head had no row at all. Issue 32: either is checked against the unigram baseline, as one of the
    book's own questions (the fitted head's row was "not comparable")."""
    fitted = MLMQuality("fitted on the frozen encoder", 0.25, 0.2, 0.3, 468, 0.05, "the")
    (row,) = paper.mlm_head_rows(fitted)
    assert row.verdict == verdict.AGREES and row.ours.startswith("fitted on the frozen encoder: 0.250 [")
    assert row.kind == verdict.OWN and "this checkpoint has no MLM head" in row.note
    own = MLMQuality("pretrained", 0.45, 0.4, 0.5, 468, 0.05, "the")
    (row,) = paper.mlm_head_rows(own)
    assert row.verdict == verdict.AGREES and "the checkpoint's own MLM head" in row.note
    (row,) = paper.mlm_head_rows(MLMQuality("pretrained", 0.0, 0.0, 0.01, 468, 0.05, "the"))  # a random own head
    assert row.verdict == verdict.DISAGREES


# ----------------------------------------------------------------------------- §4-5


def test_split_words_text_names_the_papers_share():
    assert paper.split_words_text(SplitWords(3, 40)) == (
        "7.5% of the 40 words of the evaluated sentences are split into several pieces "
        "(Clark et al.: about 8% in their data)")


def make_sentence(rows):
    n = len(rows)
    words, heads, rels, xpos = (list(c) for c in zip(*rows))
    return Sentence(ids=list(range(1, n + 1)), words=words, lemmas=words, upos=["X"] * n, xpos=xpos,
                    feats=["_"] * n, head=heads, deprel=rels, deps=["_"] * n, misc=["_"] * n)


def test_table1_has_paper_numbers_and_labels(tokenizer):
    rels = ("All", "prep", "pobj", "det", "nsubj", "poss")
    cat = make_sentence([("the", 2, "det", "DT"), ("cat", 3, "nsubj", "NN"), ("sat", 0, "root", "VBD"),
                         ("on", 6, "case", "IN"), ("the", 6, "det", "DT"), ("mat", 3, "obl", "NN"),
                         (".", 3, "punct", ".")])
    encoded = syntax.encode_sentences(tokenizer, [cat, cat], relations=rels)
    maps = np.full((1, 1, 9, 9), 0.01)
    for dep, head in ((1, 2), (2, 3), (4, 6), (5, 6), (6, 3), (7, 3)):  # every word attends to its head
        maps[0, 0, dep, head] = 0.9
    acc = syntax.evaluate_word_maps([maps, maps], encoded, rels)
    t = paper.table1_frame(acc)
    row = t.set_index("relation").loc["det"]
    assert row["head"] == "1-1" and row["accuracy"] == 100.0
    assert row["paper_accuracy"] == 94.3 and row["paper_head"] == "8-11" and row["paper_offset"] == 1
    assert list(t.columns[-4:]) == ["paper_head", "paper_accuracy", "paper_baseline", "paper_offset"]
    report = paper.table1(acc, 0.25)
    assert report.numbers["right_branching_uas"] == 25.0 and report.numbers["n_sentences_syntax"] == 2
    assert report.numbers["table1"][0]["paper_baseline"] == 26.3 and "ud" not in report.numbers["table1"][0]
    assert "paper acc. %" in report.table.columns and "ud" not in report.table.columns
    assert report.text.endswith("right-branching UAS 25.0% (paper: 26.3%)")


def accuracy_for(rows: dict[str, tuple[float, str, float]], n_sentences: int = 400, edges: int = 5,
                 seed: int = 0) -> syntax.HeadAccuracy:
    """HeadAccuracy of a 1x2-head model with per-sentence counts (``edges`` edges of every relation per sentence):
    ``rows[rel] = (best head's accuracy, its direction, offset +1's accuracy)``; head 1-1 is a weaker head in
    both directions."""
    rng = np.random.default_rng(seed)
    rels = list(rows)
    sc = np.zeros((n_sentences, len(rels), 1, 2, 2), dtype=np.uint16)
    st = np.full((n_sentences, len(rels)), edges, dtype=np.int32)
    sb = np.zeros((n_sentences, len(rels), len(syntax.OFFSETS)), dtype=np.uint16)
    for r, (acc, direction, base) in enumerate(rows.values()):
        sc[:, r, 0, 1, syntax.DIRECTIONS.index(direction)] = rng.binomial(edges, acc, n_sentences)
        sc[:, r, 0, 0, :] = rng.binomial(edges, acc / 3, (n_sentences, 2))
        sb[:, r, syntax.OFFSETS.index(1)] = rng.binomial(edges, base, n_sentences)
    return syntax.HeadAccuracy(rels, sc.sum(0).astype(np.int64), st.sum(0).astype(np.int64),
                               sb.sum(0).astype(np.int64), n_sentences=n_sentences, sentence_correct=sc,
                               sentence_total=st, sentence_baseline=sb)


def model_accuracy(relations=("prep",), n_layers=6, n_heads=12, n_sentences=300, edges=2, p_head=0.5, p_offset=0.5,
                   strong=None, seed=0) -> syntax.HeadAccuracy:
    """HeadAccuracy of an ``n_layers x n_heads`` model in chapter 2's shape, with per-sentence counts: every head right
    on an edge with probability ``p_head`` in both directions (no head better than another in truth), the fixed
    offset +1 with ``p_offset`` and the other offsets with 0.05. ``strong`` plants better heads:
    ``{relation: (layer, head, direction, p)}`` (0-based)."""
    rng = np.random.default_rng(seed)
    rels = list(relations)
    shape = (n_sentences, len(rels), n_layers, n_heads, 2)
    sc = rng.binomial(edges, p_head, size=shape).astype(np.uint16)
    for rel, (layer, head, direction, p) in (strong or {}).items():
        sc[:, rels.index(rel), layer, head, syntax.DIRECTIONS.index(direction)] = rng.binomial(edges, p, n_sentences)
    st = np.full((n_sentences, len(rels)), edges, dtype=np.int32)
    sb = rng.binomial(edges, 0.05, size=(n_sentences, len(rels), len(syntax.OFFSETS))).astype(np.uint16)
    sb[:, :, syntax.OFFSETS.index(1)] = rng.binomial(edges, p_offset, size=(n_sentences, len(rels)))
    return syntax.HeadAccuracy(rels, sc.sum(0).astype(np.int64), st.sum(0).astype(np.int64),
                               sb.sum(0).astype(np.int64), n_sentences=n_sentences, sentence_correct=sc,
                               sentence_total=st, sentence_baseline=sb)


def choose_on_all_margin(acc: syntax.HeadAccuracy, relation: str, n_resamples: int = 500, seed: int = 0):
    """The margin of the best head over the best offset as the rows computed it before the choice went inside the
    estimate: head and offset chosen on all sentences, then kept fixed in every bootstrap resample of the sentences
    (``Estimate`` in points)."""
    from attnbook.stats import Estimate, percentile_interval, resampled_ratio

    r = acc._rel(relation)
    layer, head, direction, a = acc.best(relation)
    off, b = acc.baseline(relation)
    num = (acc.sentence_correct[:, r, layer, head, syntax.DIRECTIONS.index(direction)].astype(float)
           - acc.sentence_baseline[:, r, acc.offsets.index(off)])
    boot = 100 * resampled_ratio(num[:, None], acc.sentence_total[:, r, None].astype(float), n_resamples=n_resamples,
                                 seed=seed)[:, 0]
    lo, hi = percentile_interval(boot)
    return Estimate(100 * (a - b), float(lo), float(hi), acc.sentence_total.shape[0], "sentences")


def test_syntax_comparison_verdicts_follow_the_numbers():
    acc = accuracy_for({
        "All": (0.395, "dep->head", 0.31),   # about +8.5 over right-branching: paper +8.2 (agrees within 0.9)
        "pobj": (0.817, "head->dep", 0.40),  # about +41.7: paper +41.7
        "dobj": (0.60, "dep->head", 0.30),   # about +30: paper +46.8, 17 points less
        "nn": (0.72, "head->dep", 0.70),     # +2, not a specialist as in the paper; wrong direction
    }, n_sentences=2000, edges=10)
    rows = {r.quantity.split(":")[0]: r for r in paper.syntax_comparison(acc, n_resamples=500)}
    every = rows["best single head, every relation (UAS) minus right-branching (points)"]
    assert every.verdict == "partly agrees" and every.rule == paper.table1_rule("All").words  # ±0.9 is tighter
    assert every.n == 2000 and every.unit == "sentences" and every.low < every.high
    assert "cross-fitting" in every.note
    assert "chosen and scored on all sentences (description, not judged)" in every.note
    pobj = rows["pobj"]
    assert pobj.verdict == "agrees" and pobj.ours.startswith("81.") and "cross-fitted margin +41." in pobj.ours
    assert rows["dobj"].verdict == "disagrees"
    spec = next(r for q, r in rows.items() if q.startswith("relations with a specialist head"))
    assert spec.paper == "2 of 3" and spec.ours.startswith("2 of 3; same call on 3")
    assert spec.verdict == "agrees" and "differ: none" in spec.note
    direction = next(r for q, r in rows.items() if q.startswith("best head reads"))
    assert direction.ours.startswith("2 of 3") and "nn" in direction.note
    assert direction.verdict == "agrees" and direction.rule == paper.share_rule(3).words  # all but one relation
    with pytest.raises(ParameterError):  # an accuracy without per-sentence counts has no interval
        paper.syntax_comparison(syntax.HeadAccuracy(acc.relations, acc.correct, acc.total, acc.baseline_correct))


def test_margin_rows_judge_the_sign_and_the_papers_spread():
    """The margin rule was within 5 points agrees, within 10 partly, whatever the sign: the best head surely *worse*
    than right-branching, -1.0 [-1.8, -0.2] against the paper's +8.2, "partly agreed", and pobj's +31.0 [28.7, 33.3]
    against +41.7 was "inconclusive". Now the tolerance is the paper's own sampling spread on its test set
    (:func:`paper_spread`: ±0.9 points on its 40,117 words for "All", ±2.9 on its 3,720 pobj edges), twice that
    partly, and an interval on the other side of 0 from the paper's margin disagrees."""
    from attnbook.stats import Estimate

    old = verdict.Within(5.0, 10.0, unit="points")
    below = Estimate(-1.0, -1.8, -0.2, 2001, "sentences")
    assert verdict.judge(old, 8.2, below) == verdict.PARTLY
    assert verdict.judge(paper.table1_rule("All"), 8.2, below) == verdict.DISAGREES
    pobj = Estimate(31.0, 28.7, 33.3, 2001, "sentences")
    assert verdict.judge(old, 41.7, pobj) == verdict.INCONCLUSIVE
    assert verdict.judge(paper.table1_rule("pobj"), 41.7, pobj) == verdict.DISAGREES
    rule = paper.table1_rule("pobj")
    assert rule.signed and rule.agree == pytest.approx(paper.paper_spread(76.3, 34.6, 3720), abs=0.01) == \
        pytest.approx(1.959964 * np.sqrt(2 * (0.763 * 0.237 + 0.346 * 0.654) / 3720) * 100, abs=0.01)
    assert rule.partly == pytest.approx(2 * rule.agree) and "3,720 pobj edges" in rule.words
    # the same through the rows: a best head below right-branching, specialists at half the paper's margin
    acc = accuracy_for({
        "All": (0.306, "dep->head", 0.316),      # -1.0 vs the paper's +8.2
        "det": (0.808, "dep->head", 0.596),      # +21.2 vs +42.6
        "auxpass": (0.852, "dep->head", 0.827),  # +2.5 vs +42.0: no specialist head here
    }, n_sentences=4000, edges=10)
    rows = {r.quantity.split(":")[0]: r for r in paper.syntax_comparison(acc, n_resamples=500)}
    every = rows["best single head, every relation (UAS) minus right-branching (points)"]
    assert every.high < 0 and every.verdict == "disagrees"
    assert rows["det"].verdict == "disagrees" and rows["auxpass"].verdict == "disagrees"
    few = accuracy_for({"All": (0.43, "dep->head", 0.316)}, n_sentences=8, edges=2)
    (row,) = [r for r in paper.syntax_comparison(few, n_resamples=500) if r.quantity.startswith("best single")]
    assert row.verdict == "inconclusive" and row.high - row.low > 20


def test_share_rows_allow_one_relation():
    """Claims over every relation of Table 1 were judged within 0.2 of all relations (agrees) or 0.5 (partly): 10 of 14
    relations, [9, 11] of 14, partly agreed. The tolerance is now one relation in 14 (the share's step, its measurement
    floor), two partly: 13 of 14 agree and 10 of 14 disagree."""
    from attnbook.stats import Estimate

    old, new = verdict.Within(0.2, 0.5, unit="(share of relations)"), paper.share_rule(14)
    ten = Estimate(10 / 14, 9 / 14, 11 / 14, 2001, "sentences")
    assert verdict.judge(old, 1.0, ten) == verdict.PARTLY and verdict.judge(new, 1.0, ten) == verdict.DISAGREES
    assert verdict.judge(new, 1.0, Estimate(13 / 14, 13 / 14, 1.0)) == verdict.AGREES
    assert verdict.judge(new, 1.0, Estimate(12 / 14, 12 / 14, 13 / 14)) == verdict.PARTLY
    assert "one relation in 14, the share's step (its measurement floor)" in new.words


def test_the_best_head_is_chosen_inside_the_estimate():
    """Chosen and scored on the same sentences, the best of 144 heads looks better than it is. With no head better
    than right-branching in truth (2,000 words), the old estimate put the best head 2.3 points above it; cross-fitted
    (chosen on one half of the sentences, scored on the other, the halving and the choice redone in every resample)
    its margin is about 0. With every head's true margin on the edge of the paper's band for auxpass (42.0 - 10.17),
    the old estimate, pushed up by the choice, "agreed"; cross-fitted it does not."""
    null = model_accuracy(("All",), n_sentences=1000, edges=2, seed=4)
    old = choose_on_all_margin(null, "All")
    (row,) = [r for r in paper.syntax_comparison(null, n_resamples=500) if r.quantity.startswith("best single")]
    assert old.value > 2.0 and abs(row.value) < 1.0 and row.low < 0 < row.high
    assert row.ours.startswith(f"{100 * null.best('All')[3]:.1f} (")  # the all-data head, shown as description
    rule = paper.table1_rule("auxpass")
    edge = model_accuracy(("auxpass",), p_head=0.10 + (42.0 - rule.agree) / 100, p_offset=0.10, seed=0)
    assert verdict.judge(rule, 42.0, choose_on_all_margin(edge, "auxpass")) == verdict.AGREES
    (row,) = [r for r in paper.syntax_comparison(edge, n_resamples=500) if r.quantity.startswith("auxpass")]
    assert row.verdict != verdict.AGREES and row.low < 42.0 - rule.agree
    # a head that is better in truth is found on either half and keeps its margin
    strong = model_accuracy(("auxpass",), p_head=0.3, p_offset=0.10, strong={"auxpass": (3, 4, "dep->head", 0.52)},
                            seed=1)
    (row,) = [r for r in paper.syntax_comparison(strong, n_resamples=500) if r.quantity.startswith("auxpass")]
    assert row.value == pytest.approx(42.0, abs=3.0) and row.verdict == verdict.AGREES
    assert "head 4-5, the choice of 100% of the halves" in row.note


def test_crossfit_scores_each_half_with_the_choice_made_on_the_other():
    from attnbook.studies.clark.paper import crossfit

    x = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=float)  # candidate 0 wins on units 0-1, 1 on units 2-3
    d = crossfit.make_draws(np.ones((1, 4)), np.array([[True, True, False, False]]))
    sums_a, sums_b = crossfit.half_sums(x, d)
    total, ka, kb = crossfit.crossfit(sums_a, sums_b)
    assert ka.tolist() == [0] and kb.tolist() == [1] and total.tolist() == [0.0]  # each half is wrong on the other
    assert crossfit.scored_elsewhere(x, d, ka, kb).tolist() == [0.0]
    w = crossfit.make_draws(np.array([[2, 0, 1, 1]]), np.array([[True, False, True, False]]))  # a unit drawn twice
    sums_a, sums_b = crossfit.half_sums(x, w)
    assert sums_a.tolist() == [[2.0, 1.0]] and sums_b.tolist() == [[0.0, 1.0]]
    point, boot = crossfit.draws(7, n_resamples=5, seed=1, n_splits=3)
    assert point.half_a.sum(1).tolist() == [3, 3, 3] and boot.weights.sum(1).tolist() == [7] * 5


def test_table2_layout_and_values(toy_window):
    base = coref.baselines([toy_window])
    correct = {"all": [[1, 4]], "pronoun": [[0, 2]], "proper": [[1, 1]], "nominal": [[0, 1]]}
    heads = coref.CorefHeadAccuracy(
        {c: np.array(v) for c, v in correct.items()}, {"all": 5, "pronoun": 3, "proper": 1, "nominal": 1}
    )
    t = paper.table2_frame(heads, base)
    assert list(t.index) == ["Nearest", "Head-word match", "Rule-based", "Best head (1-2)", "mentions (n)"]
    assert t.loc["Nearest", "all"] == pytest.approx(40.0)
    assert t.loc["Best head (1-2)", "pronoun"] == pytest.approx(200 / 3)
    assert t.loc["mentions (n)", "pronoun"] == 3
    assert t.loc["Rule-based", "paper all"] == 69 and t.loc["Best head (1-2)", "paper nominal"] == 58
    assert np.isnan(t.loc["mentions (n)", "paper all"])
    assert "paper all" not in coref.table2(None, base).columns
    assert paper.paper_table2().loc["Head 5-4", "all"] == 65.0
    report = paper.table2(["toy"], [toy_window], heads, base)
    assert report.numbers["coref_counts"] == {"documents": 1, "windows": 1, "all": 5, "pronoun": 3, "proper": 1,
                                              "nominal": 1}
    assert report.numbers["table2"]["Rule-based"]["paper all"] == 69.0
    assert report.text == "1 documents, 1 windows with a coreferent mention, 5 mentions to resolve (3 pronouns)"


def test_coref_comparison_verdicts_follow_the_numbers(toy_window):
    base = coref.baselines([toy_window])
    n = base["nearest"].n
    hm = {c: 100 * base["head_match"].accuracy(c) for c in coref.COLUMNS}
    # head 1-1 right on every query of every type but one "all" query: 4 of 5, +20 over head-word match's 60%
    correct = {c: np.array([[n[c] - (c == "all"), 0]]) for c in coref.COLUMNS}
    docs = coref.document_order([toy_window])
    doc_correct = np.array([[correct[c] for c in coref.COLUMNS]])  # one document
    doc_n = np.array([[n[c] for c in coref.COLUMNS]])
    heads = coref.CorefHeadAccuracy(correct, dict(n), docs, doc_correct, doc_n)
    rows = paper.coref_comparison(heads, base, n_resamples=200)
    by = {r.quantity: r for r in rows}
    assert by["best head, antecedent selection accuracy (all mentions)"].verdict == "not comparable"
    hm_row = by["best head minus head-word match (points, all mentions)"]
    assert hm_row.paper == 13 and hm_row.ours == f"{80 - hm['all']:+.1f} [+20.0, +20.0]"
    assert hm_row.verdict == "agrees" and hm_row.unit == "documents" and hm_row.n == 1  # over 10 points, as the paper
    assert hm_row.rule == paper.COREF_GAIN_RULE.words and "over 10 accuracy points" in hm_row.rule
    rb_row = by["best head minus rule-based (points, all mentions)"]
    assert rb_row.verdict == "disagrees" and rb_row.rule == paper.COREF_CLOSE_RULE.words  # -20: not close
    assert all(r.rule for r in rows)
    # a head that is always wrong falls below every baseline
    wrong = coref.CorefHeadAccuracy({c: np.zeros((1, 2), dtype=np.int64) for c in coref.COLUMNS}, dict(n), docs,
                                    np.zeros_like(doc_correct), doc_n)
    rows = {r.quantity: r for r in paper.coref_comparison(wrong, base, n_resamples=200)}
    assert rows["best head minus head-word match (points, all mentions)"].verdict == "disagrees"
    with pytest.raises(ParameterError):  # no per-document counts: no interval
        paper.coref_comparison(coref.CorefHeadAccuracy(correct, dict(n)), base)


def synthetic_coref(n_docs=30, per_doc=40, p_head=0.75, p_hm=0.62, p_rb=0.79, p_near=0.39, seed=0):
    """Per-document counts of a head (1-2 of a 1x2 model) and the three baselines; ``per_doc`` queries of
    each type per document."""
    rng = np.random.default_rng(seed)
    kinds = coref.KINDS
    doc_n = np.zeros((n_docs, len(coref.COLUMNS)), dtype=np.int32)
    doc_n[:, 1:] = per_doc
    doc_n[:, 0] = per_doc * len(kinds)
    head = np.zeros((n_docs, len(coref.COLUMNS), 1, 2), dtype=np.int32)
    base = {}
    for name, p, gain in (("head", p_head, {"nominal": 0.1}), ("head_match", p_hm, {}), ("rule_based", p_rb, {}),
                          ("nearest", p_near, {})):
        by_kind = np.stack([rng.binomial(per_doc, min(0.99, p + gain.get(k, 0.0)), n_docs) for k in kinds], 1)
        counts = np.concatenate([by_kind.sum(1, keepdims=True), by_kind], 1)
        if name == "head":
            head[:, :, 0, 1] = counts
        else:
            base[name] = counts
    docs = [f"doc{k}" for k in range(n_docs)]
    heads = coref.CorefHeadAccuracy({c: head[:, k].sum(0) for k, c in enumerate(coref.COLUMNS)},
                                    {c: int(doc_n[:, k].sum()) for k, c in enumerate(coref.COLUMNS)},
                                    docs, head, doc_n)
    systems = {k: coref.SystemAccuracy(coref.BASELINE_NAMES[k],
                                       {c: int(v[:, j].sum()) for j, c in enumerate(coref.COLUMNS)},
                                       {c: int(doc_n[:, j].sum()) for j, c in enumerate(coref.COLUMNS)},
                                       docs, v, doc_n) for k, v in base.items()}
    return heads, systems


def test_coref_rows_bootstrap_over_documents():
    heads, base = synthetic_coref()
    by = {r.quantity: r for r in paper.coref_comparison(heads, base, n_resamples=500)}
    hm = by["best head minus head-word match (points, all mentions)"]
    assert hm.unit == "documents" and hm.n == 30 and hm.low < 13 + 10 and hm.high > 13 - 10
    assert hm.verdict == "agrees"  # about +16: over 10 points, as the paper says
    assert "cross-fitting" in hm.note and "the head chosen on all documents is 1-2" in hm.note
    assert by["best head minus rule-based (points, all mentions)"].verdict == "agrees"  # about -4: close
    assert by["baselines: nearest < head-word match < rule-based"].verdict == "agrees"
    kind = by["mention type where the head gains most over head-word match"]
    assert kind.verdict == "agrees" and kind.paper == "pronoun (+17), nominal (+18)"  # tied in the paper's columns
    # the same head without its nominal advantage: the type with the most gain is a coin toss between nominal and
    # proper names, one of the paper's tied types and one it ranks far below
    heads, base = synthetic_coref(p_head=0.70, seed=3)
    heads.doc_correct[:, 3, 0, 1] = base["head_match"].doc_correct[:, 3] + 3  # +7.5 points on nominal mentions
    noise = np.random.default_rng(5).integers(-1, 2, heads.doc_correct.shape[0])
    heads.doc_correct[:, 2, 0, 1] = base["head_match"].doc_correct[:, 2] + 3 + noise  # and about as much on names
    heads.doc_correct[:, 1, 0, 1] = base["head_match"].doc_correct[:, 1]  # none on pronouns
    by = {r.quantity: r for r in paper.coref_comparison(heads, base, n_resamples=500)}
    assert by["mention type where the head gains most over head-word match"].verdict == "inconclusive"


def test_the_mention_type_claim_keeps_the_papers_near_tie():
    """Table 2's gains over head-word match are nominal +18 and pronoun +17, a tie within its whole-point rounding;
    the row judged "the head gains most on nominal mentions" and called a pronoun winner a miss. A head that gains
    most on pronouns now agrees; one that gains most on proper names (+6 in the paper) still disagrees."""
    for k, outcome in ((1, verdict.AGREES), (2, verdict.DISAGREES)):
        heads, base = synthetic_coref(p_head=0.62, seed=2)
        heads.doc_correct[:, k, 0, 1] = np.minimum(base["head_match"].doc_correct[:, k] + 15, 40)
        heads.doc_correct[:, 0, 0, 1] = heads.doc_correct[:, 1:, 0, 1].sum(1)
        by = {r.quantity: r for r in paper.coref_comparison(heads, base, n_resamples=300)}
        row = by["mention type where the head gains most over head-word match"]
        assert row.verdict == outcome and row.rule.startswith("the head gains most on pronoun or nominal mentions")


def test_the_coref_margins_are_the_papers_words():
    """The paper gives no count of mentions, so no sampling spread of its own: its words size the two claims. Against
    the +13 of Table 2 the best head's +12 [+6, +18] over head-word match partly agreed (within ±10, an interval
    reaching +6); "over 10 points" cannot tell it. Its -3 [-9, +3] against the rule-based system is "close" (within
    the 10 points the paper calls an improvement)."""
    from attnbook.stats import Estimate

    gain = Estimate(12.0, 6.0, 18.0, 30, "documents")
    assert verdict.judge(verdict.Within(5.0, 10.0), 13, gain) == verdict.PARTLY
    assert verdict.judge(paper.COREF_GAIN_RULE, 13, gain) == verdict.INCONCLUSIVE
    assert verdict.judge(paper.COREF_GAIN_RULE, 13, Estimate(16.0, 11.0, 21.0)) == verdict.AGREES
    assert verdict.judge(paper.COREF_GAIN_RULE, 13, Estimate(4.0, -1.0, 9.0)) == verdict.DISAGREES
    assert verdict.judge(paper.COREF_CLOSE_RULE, -4, Estimate(-3.0, -9.0, 3.0)) == verdict.AGREES
    assert verdict.judge(paper.COREF_CLOSE_RULE, -4, Estimate(-15.0, -20.0, -11.0)) == verdict.DISAGREES


def test_baselines_sentence_follows_the_numbers():
    heads, base = synthetic_coref()
    text = paper.baselines_markdown(heads, base)
    assert "higher than the paper's 27, 52, 69" in text and "0% of the" not in text
    heads, base = synthetic_coref(p_near=0.1, p_hm=0.3, p_rb=0.5)
    assert "lower than the paper's" in paper.baselines_markdown(heads, base)


def probe_results(uas: dict[str, float], n_sentences: int = 1000, words: int = 10, seed: int = 0) -> dict:
    """A probe run's ``uas`` and ``per_sentence`` counts, the right heads drawn around the given UAS."""
    rng = np.random.default_rng(seed)
    per = {"scored": np.full(n_sentences, words)}
    per.update({k: rng.binomial(words, v / 100, n_sentences) for k, v in uas.items()})
    return {"uas": {k: 100 * per[k].sum() / per["scored"].sum() for k in uas}, "per_sentence": per}


def test_probe_comparison_verdicts_follow_the_numbers():
    res = probe_results({"right_branching": 31.6, "distances_words": 57.0, "random_init_attn_words": 20.0,
                         "attn": 60.2, "attn_words": 77.2}, n_sentences=4000)
    rows = {r.quantity: r for r in paper.probe_comparison(res, n_resamples=500)}
    assert len(rows) == len(paper.TABLE3_FINDINGS)
    words_vs_dist = rows["Attn + word vectors minus Distances + word vectors (UAS points)"]
    assert words_vs_dist.paper == 19.0 and words_vs_dist.verdict == "partly agrees"  # about +20.1: within 2, not 1
    assert words_vs_dist.unit == "sentences" and words_vs_dist.n == 4000
    assert words_vs_dist.rule == paper.table3_rule("attn_words", "distances_words").words
    assert "prints these accuracies to 1 point" in words_vs_dist.rule
    # random-init below right-branching here, barely above in the paper: the other sign
    rnd = rows["Random-init attn + word vectors minus Right-branching (UAS points)"]
    assert rnd.ours.startswith("-11.") and rnd.verdict == "disagrees"
    assert rows["Attn + word vectors minus Attn (UAS points)"].verdict == "partly agrees"  # +17.4 vs +16
    assert rows["Attn minus Distances + word vectors (UAS points)"].verdict == "agrees"  # +2.8 vs +3
    without = paper.probe_comparison({"uas": {k: v for k, v in res["uas"].items() if k != "random_init_attn_words"},
                                      "per_sentence": res["per_sentence"]}, n_resamples=200)
    assert len(without) == len(paper.TABLE3_FINDINGS) - 2
    with pytest.raises(ParameterError):
        paper.probe_comparison({"uas": res["uas"]})


def test_a_margin_surely_of_the_other_sign_disagrees():
    """Issue 17, defect 8 let "attention alone rivals words + distances" (+3 in the paper) agree with -0.9 here; the
    quick build then showed -1.1 [-1.8, -0.3] "agrees". An interval entirely below 0 against the paper's +3 now
    disagrees; one that straddles 0 is no such disagreement."""
    res = probe_results({"distances_words": 56.8, "attn": 55.7}, n_sentences=4000)
    (row,) = paper.probe_comparison(res, n_resamples=500)
    assert row.high < 0 and row.verdict == "disagrees"
    assert verdict.judge(verdict.Within(5.0, 10.0), 3.0, verdict.as_estimate(row.value)) == verdict.AGREES  # old
    res = probe_results({"distances_words": 56.8, "attn": 56.8}, n_sentences=300)
    (row,) = paper.probe_comparison(res, n_resamples=500)
    assert row.low < 0 < row.high and row.verdict == "inconclusive"


def test_table3_sets_the_papers_column_beside_ours():
    res = {"uas": {"right_branching": 31.6, "attn": 55.9}, "info": {
        "train": {"n_sentences": 60}, "dev": {"oov_rate": 0.05}, "n_scored_dev": 500, "epochs": 2}}
    t = paper.table3_frame(res)
    assert list(t.columns) == ["model", "key", "paper_uas", "uas"]
    assert list(t.paper_uas) == [26.0, 58.0, 30.0, 61.0, 77.0] and np.isnan(t.uas[1]) and t.uas[3] == 55.9
    report = paper.table3(res)
    assert list(report.table.columns) == ["model", "paper UAS", "UAS here"]
    assert report.numbers["probe_info"] == {"train_sentences": 60, "dev_scored_words": 500, "epochs": 2,
                                            "glove_oov_dev": 0.05}
    assert report.numbers["table3_uas"] is res["uas"]
    assert report.text.endswith("GloVe OOV rate on dev 5.0%")


def test_random_init_paragraph_follows_the_numbers():
    below = paper.random_init_markdown({"right_branching": 30.0, "random_init_attn_words": 7.9, "attn_words": 47.1})
    assert "falls **below** right-branching" in below and "4 points above it" in below
    assert "add 39.2 UAS points" in below and "(paper: 47)" in below
    above = paper.random_init_markdown({"right_branching": 26.0, "random_init_attn_words": 30.0, "attn_words": 77.0})
    assert "a small gain over right-branching (paper: 4 points)." in above
    assert "not run" in paper.random_init_markdown({"right_branching": 26.0, "attn_words": 77.0})


def comparison(experiment: str, quantity: str, paper_value, ours, outcome: str) -> verdict.Comparison:
    """A row with a given outcome (the summary reads only the fields, not how the rule reached them)."""
    return verdict.Comparison(experiment=experiment, quantity=quantity, paper=paper_value, ours=ours,
                              verdict=outcome, rule="a rule")


SUMMARY_ROWS = [
    comparison("§4.2", "det", 1, 1, verdict.AGREES),
    comparison("§4.2", "poss", 1, 2, verdict.PARTLY),
    comparison("§5", "random", 4, -11, verdict.DISAGREES),
    comparison("§5", "absolute", 77, 64, verdict.NOT_COMPARABLE),
    comparison("§6", "stress", "< 0.2", "0.3 [0.1, 0.5]", verdict.INCONCLUSIVE),
]


def test_agreement_markdown_counts_verdicts_and_lists_differences():
    text = paper.agreement_markdown(SUMMARY_ROWS, "tiny")
    assert text.startswith("**What this run found.** Of 5 comparisons, 1 agrees, 1 partly agrees, 1 disagrees, "
                           "1 inconclusive, 1 not comparable. ")
    assert " by chance alone were every claim true; 1 disagrees. The model here is tiny; the paper's is " in text
    assert "§4.2: 1 of 2 agree, 1 partly" in text and "§5: 0 of 1 agree, 1 disagree (1 not comparable)" in text
    agree, rest = text.split("Partly agree</span>")
    assert "(1):\n\n- det: paper 1; this run 1\n\n" in agree and "random" not in agree
    assert "Disagree</span>** (1):\n\n- random: paper 4; this run -11\n\n" in rest
    assert "Cannot tell (inconclusive)</span>** (1):\n\n- stress: paper < 0.2; this run 0.3 [0.1, 0.5]" in rest
    assert paper.agreement_markdown([], "tiny").startswith("**What this run found.** No comparison was made.")


def test_summaries_are_the_one_summary_writers_output():
    """Chapters 1-3 close with :func:`attnbook.verdict.summary_markdown` of their rows: the study adds only the
    sentence about the model (and, for a [CLS] sink, what the gradients say about it), never its own count."""
    setting = "The model here is tiny; the paper's is bert-base-uncased (12 layers x 12 heads)."
    for rows in (SUMMARY_ROWS, SUMMARY_ROWS[:1], SUMMARY_ROWS[2:4], []):
        assert paper.agreement_markdown(rows, "tiny") == verdict.summary_markdown(rows, setting)
        assert paper.agreement_markdown(rows, "tiny", n_layers=2, n_heads=3) == verdict.summary_markdown(
            rows, "The model here is tiny (2 layers x 3 heads); the paper's is bert-base-uncased (12 layers x 12 heads).")
    stats = surface_stats()  # a [SEP] sink, as in bert-base: the setting is the model's shape alone
    rows = paper.surface_comparison(stats, gradient_stats([2, 3]), n_resamples=200)
    assert paper.agreement_markdown(rows, "tiny", stats=stats) == verdict.summary_markdown(
        rows, "The model here is tiny (6 layers x 12 heads); the paper's is bert-base-uncased (12 layers x 12 heads).")
    cls = surface_stats(sink="cls")
    rows = paper.surface_comparison(cls, gradient_stats([2, 3], sink="cls"), n_resamples=200)
    sink = paper_text._sink_sentence(rows, cls)  # a [CLS] sink: the setting also says what the gradients show
    assert sink.startswith("The largest difference is the no-op target")
    assert paper.agreement_markdown(rows, "tiny", stats=cls) == verdict.summary_markdown(
        rows, "The model here is tiny (6 layers x 12 heads); the paper's is bert-base-uncased (12 layers x 12 heads). "
        + sink)


def test_sink_sentence_reads_the_gradient_row_not_the_mlm_head_row():
    """Without gradients the MLM head's row (same experiment) is no evidence about the [CLS] sink."""
    stats = surface_stats(sink="cls")
    own = MLMQuality("pretrained", 0.45, 0.4, 0.5, 468, 0.05, "the")
    rows = paper.surface_comparison(stats, n_resamples=200) + paper.mlm_head_rows(own)
    assert rows[-1].experiment == "§3.2 gradients" and rows[-1].verdict == verdict.AGREES
    text = paper.agreement_markdown(rows, "tiny", stats=stats)
    assert "Without the gradients" in text and "The pattern behind them holds" not in text


# ----------------------------------------------------------------------------- §6


def jittered(d: np.ndarray, n: int = 100, scale: float = 0.01, seed: int = 0) -> np.ndarray:
    """``n`` bootstrap-like copies of a distance matrix: symmetric multiplicative noise, zero diagonal."""
    rng = np.random.default_rng(seed)
    e = rng.normal(scale=scale, size=(n,) + d.shape)
    e = (e + e.transpose(0, 2, 1)) / 2
    return d[None] * np.exp(e)


def test_clustering_comparison_verdicts_follow_the_numbers():
    d = planted(n_layers=4, n_heads=5, spread=0.05, seed=1)
    lt = clusters.layer_permutation_test(d, 4, 5, n_permutations=199)
    clus = clusters.cluster_heads(d, 4, 5, n_clusters=4)
    emb = embedding.mds_embedding(d)
    names = ["attends to [SEP]", "attends to next", "attends to previous", "attends to [CLS]"]
    behaviours = [[names[k // 5]] for k in range(20)]  # one behaviour per planted group
    rows = paper.clustering_comparison(lt, clus, emb, clusters.behaviour_test(d, behaviours, n_permutations=199),
                                       resampled=jittered(d), head_behaviours=behaviours, n_groups=40)
    assert [r.verdict for r in rows] == ["agrees"] * 5
    for r in rows:  # every row is a sample estimate with its interval over groups of segments
        assert r.low <= r.high and r.unit == "groups of segments" and r.n == 40 and r.rule
    # no structure at all: random distances and a single-cluster cut
    rng = np.random.default_rng(0)
    noise = squareform(pdist(rng.normal(size=(20, 8))))
    rows = paper.clustering_comparison(clusters.layer_permutation_test(noise, 4, 5, n_permutations=199),
                                       clusters.cluster_heads(noise, 4, 5, n_clusters=3),
                                       embedding.mds_embedding(noise), None, resampled=jittered(noise))
    verdicts = {r.quantity: r.verdict for r in rows}
    assert verdicts["silhouette of the average-linkage cut (tree rebuilt in every resample)"] == "disagrees"
    assert rows[1].verdict == "not comparable"
    assert rows[2].verdict in ("disagrees", "inconclusive")
    assert rows[4].verdict == "disagrees"  # 8-D noise cannot be drawn faithfully in 2-D
    # outliers split off as tiny clusters do not count as clusters
    outliers = planted(n_layers=2, n_heads=6, spread=0.05, seed=3)
    outliers[0, 1:] = outliers[1:, 0] = outliers.max() * 3
    cut = clusters.cluster_heads(outliers, 2, 6, n_clusters=3)
    assert sorted(len(m) for m in cut.members.values()) == [1, 5, 6]
    row = paper.clustering_comparison(clusters.layer_permutation_test(outliers, 2, 6, n_permutations=99), cut,
                                      embedding.mds_embedding(outliers), None, resampled=jittered(outliers))[0]
    assert "(2 clusters of >= 3 heads)" in row.ours
    # a cut with a single real cluster (the rest odd heads split off) is no "several clusters", however high its
    # silhouette
    lone = planted(n_layers=1, n_heads=6, spread=0.05, seed=3)
    lone[0, 1:] = lone[1:, 0] = lone.max() * 3
    lone[1, 2:] = lone[2:, 1] = lone.max() * 3
    one = clusters.cluster_heads(lone, 1, 6, n_clusters=3)
    assert sorted(len(m) for m in one.members.values()) == [1, 1, 4] and one.silhouette > 0.25
    row = paper.clustering_comparison(clusters.layer_permutation_test(outliers, 2, 6, n_permutations=99), one,
                                      embedding.mds_embedding(lone), None, resampled=jittered(lone))[0]
    assert "(1 cluster of >= 3 heads; silhouette" in row.ours and row.verdict == "disagrees"
    assert all(r.verdict in VERDICTS for r in rows)


def test_the_number_of_clusters_is_chosen_again_in_every_resample():
    """The chapter chooses k by the silhouette on its data (over :data:`K_RANGE`); the bootstrap kept that k in every
    resample, so the interval ignored the choice. Now every resample chooses its own k by the same rule, and the
    interval is for the best cut's silhouette, which in each resample is at least the chapter's k's."""
    from attnbook.studies.clark.paper.cluster_rows import _several

    d = planted(n_layers=4, n_heads=5, spread=1.0, seed=1)
    chosen, _ = clusters.choose_clusters(d, 4, 5, k_range=paper.K_RANGE)
    boot = jittered(d, n=60, scale=0.3, seed=1)
    again = [paper.best_cut(b, paper.K_RANGE, 3) for b in boot]
    fixed = np.array([_several(clusters.cluster_heads(b, 4, 5, n_clusters=chosen.n_clusters), 3) for b in boot])
    best = np.array([v for _, v in again])
    assert {k for k, _ in again} - {chosen.n_clusters} and (best >= fixed - 1e-12).all() and (best > fixed).any()
    row = paper.clustering_comparison(clusters.layer_permutation_test(d, 4, 5, n_permutations=99), chosen,
                                      embedding.mds_embedding(d), None, resampled=boot)[0]
    lo, hi = np.quantile(best, [0.025, 0.975])
    assert row.low == pytest.approx(lo) and row.high == pytest.approx(hi)
    assert row.value == pytest.approx(chosen.silhouette)
    assert f"k = {chosen.n_clusters} chosen by the silhouette over 3-12, and chosen again in every resample" in row.note
    assert row.rule == paper.SILHOUETTE_RULE.words and "Kaufman & Rousseeuw (1990)" in row.rule
    # a k fixed before seeing the data stays fixed
    row = paper.clustering_comparison(clusters.layer_permutation_test(d, 4, 5, n_permutations=99), chosen,
                                      embedding.mds_embedding(d), None, resampled=boot, k_range=chosen.n_clusters)[0]
    assert row.high == pytest.approx(np.quantile(fixed, 0.975)) and "fixed in advance" in row.note


def test_the_stress_row_is_the_books_own_question_and_the_layer_row_a_direction():
    """Clark §6 gives no stress (Fig. 6: distances "approximately match"), so Kruskal stress-1 is the book's own
    question, not a claim of the paper; and "heads in the same layer are often fairly close" has no size, so its row
    checks the direction only and says so."""
    d = planted(n_layers=4, n_heads=5, spread=0.05, seed=1)
    rows = paper.clustering_comparison(clusters.layer_permutation_test(d, 4, 5, n_permutations=99),
                                       clusters.cluster_heads(d, 4, 5, n_clusters=4), embedding.mds_embedding(d), None,
                                       resampled=jittered(d))
    by = {r.quantity: r for r in rows}
    stress = by["Kruskal stress-1 of the 2-D embedding"]
    assert stress.kind == verdict.OWN and stress.outcome_words == "supported" and "Kruskal (1964)" in stress.rule
    layer = by["same-layer / other-layer mean JS"]
    assert layer.kind == verdict.CLAIM and "checks the direction only" in layer.note
    assert sum(r.kind == verdict.CLAIM for r in rows) == len(rows) - 1


def test_the_k_range_is_the_chapters():
    from attnbook.chapters.params import chapter_params

    for profile in ("smoke", "quick", "paper"):
        p = chapter_params("03_clark_clustering", profile)
        assert tuple(p.k_range) == paper.K_RANGE and p.n_clusters == "auto"


def test_behaviour_row_leaves_broad_heads_out():
    """Issue 17, defect 8: "clusters follow behaviours" agreed on the strength of broad heads, which are close to
    each other by definition (two near-uniform distributions). Here the broad heads are the only close group; the
    heads with any other behaviour are *farther* from their own kind than from others."""
    n = 20
    labels = ["attends broadly"] * 8 + ["attends to next"] * 4 + ["attends to previous"] * 4 + ["attends to [CLS]"] * 4
    same = np.array(labels)[:, None] == np.array(labels)[None, :]
    d = np.where(same, 1.2, 1.0)
    d[:8, :8] = 0.01
    np.fill_diagonal(d, 0.0)
    behaviours = [[b] for b in labels]
    old = clusters.behaviour_test(d, behaviours, n_permutations=999, exclude=())  # the old test, broad heads in
    assert old.p_value < 0.01 and old.ratio < 1  # the old rule (p < 0.01 and ratio < 1) said "agrees"
    new = clusters.behaviour_test(d, behaviours, n_permutations=999)
    assert "attends broadly" not in new.group_within and new.ratio > 1
    lt = clusters.layer_permutation_test(d, 4, 5, n_permutations=99)
    rows = paper.clustering_comparison(lt, clusters.cluster_heads(d, 4, 5, n_clusters=3), embedding.mds_embedding(d),
                                       new, resampled=jittered(d), head_behaviours=behaviours)
    row = rows[1]
    assert row.quantity == "same-behaviour / other-behaviour mean JS (broad heads left out)"
    assert row.verdict == "disagrees" and row.low > 1 and n == d.shape[0]


def test_mds_orientation_is_claimed_only_when_it_holds():
    """Issue 17, defect 5: the chapter said the first MDS axis runs from early to late layers, while its coordinate
    correlated with the layer at about -0.12. The sentence is now generated, and made only when it holds."""
    layers = np.repeat(np.arange(1, 7), 12)
    rng = np.random.default_rng(0)
    flat = rng.normal(size=(72, 2))
    text = embedding.orientation_markdown(flat, layers)
    assert "runs from early to late layers" not in text and "do not order the first axis" in text
    deep = np.c_[layers + rng.normal(scale=0.5, size=72), rng.normal(size=72)]
    text = embedding.orientation_markdown(deep, layers)
    assert "The first axis then runs from early to late layers (correlation with the layer r = 0.9" in text


def test_resampled_distances_recombine_the_groups():
    rng = np.random.default_rng(0)
    sums = rng.uniform(0.1, 1.0, size=(40, 3))  # 3 heads -> 3 pairs
    tokens = rng.integers(5, 10, size=40).astype(float)
    boot = distances.resampled_distances({"js_sum_groups": sums, "n_tokens_groups": tokens}, 300, seed=1)
    assert boot.shape == (300, 3, 3) and np.allclose(boot, boot.transpose(0, 2, 1))
    whole = sums.sum(0) / tokens.sum()
    assert np.allclose(boot[:, 0, 1].mean(), whole[0], rtol=0.05) and boot[:, 0, 1].std() > 0


def test_distance_setting_and_agreement_sentence():
    # issue 32: the distance is a setting, not a finding: a sentence of the summary, no longer a "not comparable" row
    setting = paper.distance_setting(np.array(1234), 0.25, 0.0)
    assert "mean Jensen-Shannon divergence over 1,234 tokens (25% of each segment), smoothing 0.0" in setting
    text = paper.agreement_markdown([comparison("§6", "q", 1, 1, verdict.AGREES)], "tiny", setting=setting)
    assert setting in text and "The model here is tiny;" in text
    rows = [comparison("§6", f"q{k}", 1, 1, v)
            for k, v in enumerate((verdict.AGREES, verdict.DISAGREES, verdict.AGREES, verdict.NOT_COMPARABLE))]
    text = paper.agreement_markdown(rows, "tiny", n_layers=2, n_heads=3)
    assert text.startswith("**What this run found.** Of 4 comparisons, 2 agree, 1 disagrees, 1 not comparable.")
    assert "tiny (2 layers x 3 heads)" in text


def test_random_init_maps_are_called_flatter_only_when_they_are():
    """Issue 17, defect 5: chapter 2 said the random-init maps "are much flatter" than the trained model's without
    checking. The sentence now compares the example sentence's mean largest row weight and says so only when true."""
    uas = {"right_branching": 30.0, "random_init_attn_words": 7.9, "attn_words": 47.1}
    flatter = paper.random_init_markdown(uas, {"trained": 0.62, "random init": 0.21}, n_words=12)
    assert "flatter than the trained model's (mean largest weight 0.21 against 0.62" in flatter
    assert "uniform over its 12 words would give 0.08" in flatter
    peaked = paper.random_init_markdown(uas, {"trained": 0.40, "random init": 0.55}, n_words=12)
    assert "maps are flatter than" not in peaked and "are not flatter than the trained model's" in peaked


def test_the_gradient_sentence_names_the_layers_that_carry_the_contrast():
    """The [CLS]-heavy layers are 3, 4, 5 (0.7 of the attention, the rest 0.1) and the gradient ratio is small in
    layer 3 only: the contrast agrees on average but rests on layer 3. Before, the summary said gradients to [CLS]
    are smaller "in the layers that attend to it most"; now it names the layers, from the per-layer numbers."""
    stats = surface_stats(sink="cls")
    grads = gradient_stats(small_layers=[2], sink="cls")
    rows = paper.surface_comparison(stats, grads, n_resamples=300)
    grad = [r for r in rows if r.experiment == "§3.2 gradients"][0]
    assert grad.verdict == verdict.AGREES
    layers = paper.gradient_layers(stats, grads, "cls")
    assert layers.heavy == [3, 4, 5] and layers.carriers == [3] and layers.against == [4, 5]
    assert layers.share_of_contrast([3]) == pytest.approx(1, abs=0.01)  # layers 4 and 5 add nothing
    assert "as their mean: 3" in grad.note and "layer 3: 70% / 0.10" in grad.note
    text = paper.agreement_markdown(rows, "tiny", stats=stats, grads=grads)
    assert "in the layers that attend to it most" not in text
    assert "are smaller in layer 3 (ratio 0.10)" in text and "in layers 4, 5, which also give [CLS]" in text
    assert "the contrast rests on layer 3" in text and "among the layers that attend to it less" not in text
    # a layer of "the rest" that still attends to [CLS] heavily is named
    stats["cls"][1] = 0.5
    text = paper.agreement_markdown(paper.surface_comparison(stats, grads, n_resamples=300), "tiny", stats=stats, grads=grads)
    assert "layer 2, giving [CLS] 50% of its attention, is among the layers that attend to it less" in text
    # every heavy layer small: all of them carry it, and the sentence says no more
    even = gradient_stats(small_layers=[2, 3, 4], sink="cls")
    rows = paper.surface_comparison(stats, even, n_resamples=300)
    text = paper.agreement_markdown(rows, "tiny", stats=stats, grads=even)
    assert "are smaller in layers 3, 4, 5" in text and "rests on" not in text
    # without the gradients the sentence claims only the average over the heavy layers
    assert "taken together (layers 3, 4, 5)" in paper.agreement_markdown(rows, "tiny", stats=stats)


def test_the_sink_heads_are_reselected_in_every_resample():
    """The heads that attend mostly to the sink are chosen by the segments that score them. A head whose [SEP] share
    sits at 0.501 (chosen on all segments) keeps only 0.3 of [SEP]'s own attention, the other sink heads 0.95: with
    the heads fixed, the interval sat well below 0.9 ("disagrees"); re-selected in every resample, the head drops
    out of about half of them and the interval reaches above 0.9."""
    stats = surface_stats(majority=(3,), n_segments=40, noise=0.05)
    sep, own = STAT_NAMES.index("sep"), STAT_NAMES.index("sep_sep")
    stats["per_segment"][:, sep, 3, 0] += 0.501 - stats["per_segment"][:, sep, 3, 0].mean()
    stats["sep"][3, 0] = 0.501
    stats["per_segment"][:, own, 3, 0] += 0.3 - stats["per_segment"][:, own, 3, 0].mean()
    stats["sep_sep"][3, 0] = 0.3
    row = {r.quantity: r for r in paper.surface_comparison(stats, n_resamples=400)}[
        "[SEP]->[SEP] share in heads that attend mostly to [SEP]"]
    assert "re-selected in every resample" in row.note and "13 heads chosen on all segments" in row.note
    assert row.value == pytest.approx((12 * 0.95 + 0.3) / 13, abs=1e-6)
    assert row.high > 0.9 and row.verdict != verdict.DISAGREES


def test_probe_rows_name_the_training_length_confound_from_the_losses():
    """Probes trained for 8 epochs whose losses still fall: each row's note says by how much over the last epoch and
    that the margin may move with more training; converged losses say so instead. Before, the notes said nothing."""
    res = probe_results({"right_branching": 31.6, "random_init_attn_words": 20.0, "attn_words": 77.2}, n_sentences=500)
    falling = [2.0, 1.5, 1.2, 1.0, 0.9, 0.8, 0.75, 0.6]  # -20% over the last epoch
    flat = [2.0, 1.0, 0.8, 0.7, 0.7, 0.7, 0.7, 0.7]
    res["losses"] = {"random_init_attn_words": falling, "attn_words": flat, "right_branching": []}
    rows = {r.quantity: r for r in paper.probe_comparison(res, n_resamples=200)}
    rnd = rows["Random-init attn + word vectors minus Right-branching (UAS points)"]
    assert "Random-init attn + word vectors still fell by 20.0% over its last epoch (8)" in rnd.note
    assert "a probe not yet converged is a confound" in rnd.note
    gain = rows["Attn + word vectors minus Random-init attn + word vectors (UAS points)"]
    assert "Attn + word vectors +0.0% over epoch 8" in gain.note and "still fell by 20.0%" in gain.note
    res["losses"] = {"random_init_attn_words": flat, "attn_words": flat}
    rows = paper.probe_comparison(res, n_resamples=200)
    assert all("neither loss was still falling" in r.note for r in rows)
    assert paper.last_epoch_fall([1.0]) is None and paper.last_epoch_fall([1.0, 0.9]) == pytest.approx(0.1)
