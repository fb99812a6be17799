"""Michel et al. beside this run: every row through the verdict rule with its interval, the regression tests of
issue 17 for chapter 6 (defect 4: "no effect" on a tiny sample; defect 5: the MT half and the §3.2 value), Table 4,
the text."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from attnbook.studies.heads_off.learned import Learned
from attnbook import verdict
from attnbook.core.errors import ParameterError
from attnbook.engine.sweeps import SweepResult
from attnbook.stats import Estimate
from attnbook.studies.heads_off import effects as hs
from attnbook.studies.michel import importance as imp
from attnbook.studies.michel import paper
from attnbook.studies.michel import pruning as mp

ROOT = Path(__file__).resolve().parents[1]


def flip_sweep(n, flips, shape=(2, 2), correct=0.8):
    """A single-head sweep on ``n`` examples: the baseline gets ``correct`` of them right; head ``i`` flips
    ``flips[i]`` examples (positive: wrong -> right, negative: right -> wrong)."""
    gold = np.zeros(n, dtype=np.int64)
    n_ok = int(round(correct * n))
    base = np.zeros((n, 2))
    base[:n_ok, 0] = 1.0
    base[n_ok:, 1] = 1.0
    outs = np.repeat(base[None], int(np.prod(shape)), axis=0)
    for i, k in enumerate(flips):
        rows = range(n_ok, n_ok + k) if k > 0 else range(0, -k)
        for r in rows:
            outs[i, r] = [1.0, 0.0] if k > 0 else [0.0, 1.0]
    scores = np.array([100.0 * np.mean(o.argmax(1) == gold) for o in outs]).reshape(shape)
    return SweepResult("single_heads", "mask", scores, 100.0 * n_ok / n, outs.reshape(*shape, n, 2), base, gold,
                       [f"{i // shape[1] + 1}-{i % shape[1] + 1}" for i in range(int(np.prod(shape)))])


def run_of(sweep, seed=0, task="SST-2"):
    effects, draws = hs.effect_intervals(sweep, task, n_resamples=400, seed=0)
    return SimpleNamespace(seed=seed, ablation=sweep, effects=effects, effect_draws=draws)


# ----------------------------------------------------------------------------- intervals of a switched-off head


def test_resolution_is_the_exact_bound_when_nothing_changes():
    assert hs.resolution(16) == pytest.approx(100 * (1 - 0.025 ** (1 / 16)))
    assert hs.resolution(16) > 20 and hs.resolution(872) < 0.5


def test_effect_intervals_never_claim_certainty_from_a_small_sample():
    table, draws = hs.effect_intervals(flip_sweep(16, [0, 0, 0, 0]), "SST-2", n_resamples=200)
    assert draws.shape == (200, 2, 2) and np.all(draws == 0)  # the plain bootstrap says [0, 0]
    assert np.allclose(table["low"], -hs.resolution(16)) and np.allclose(table["high"], hs.resolution(16))
    table, _ = hs.effect_intervals(flip_sweep(400, [-40, 0, 0, 0]), "SST-2", n_resamples=400)
    assert table["delta"].iloc[0] == pytest.approx(-10.0) and table["high"].iloc[0] < -5  # a real loss stays clear


# ----------------------------------------------------------------------------- §3.2 (defect 4)


def test_no_effect_on_a_tiny_dev_sample_is_inconclusive_not_agreeing():
    """Issue 17, defect 4. The old rule counted heads that were not significant at p < 0.01 and agreed when most
    were: on 16 examples where no prediction changes, 72 of 72 "agreed". Now both §3.2 rows are inconclusive."""
    tiny = run_of(flip_sweep(16, [0, 0, 0, 0]))
    old = imp.ablation_significance(tiny.ablation, test="ttest", alpha=0.01)
    assert not old["significant"].any()  # what the old rule counted: every head "not significant" -> agrees
    mean_row, share_row, wmt = paper.ablation_rows([tiny], tolerance=1.0)
    assert mean_row.verdict == verdict.INCONCLUSIVE and share_row.verdict == verdict.INCONCLUSIVE
    assert mean_row.rule == verdict.NoEffect(1.0).words
    assert share_row.ours == "0% sure, up to 100%"
    assert wmt.verdict == verdict.NOT_COMPARABLE


def test_no_effect_agrees_with_enough_examples_and_disagrees_on_real_losses():
    big = run_of(flip_sweep(2000, [0, 1, -1, 0]))
    mean_row, share_row, _ = paper.ablation_rows([big], tolerance=1.0)
    assert mean_row.verdict == verdict.AGREES and share_row.verdict == verdict.AGREES
    assert mean_row.low > -1 and mean_row.high < 1 and mean_row.unit == "dev examples (paired)"
    losses = run_of(flip_sweep(2000, [-200, -200, -200, 0]))
    mean_row, share_row, _ = paper.ablation_rows([losses], tolerance=1.0)
    assert mean_row.verdict == verdict.DISAGREES and share_row.verdict == verdict.DISAGREES


def test_seeds_are_combined_by_the_books_seed_rule():
    """Several seeds: the mean over seeds, its interval counting the seeds' spread and each run's own error over its
    dev examples (``stats.over_seeds``); a seed that loses points and one that loses none leave the claim
    undecided."""
    good, bad = run_of(flip_sweep(2000, [0, 0, 0, 0]), 0), run_of(flip_sweep(2000, [-200, -200, -200, 0]), 1)
    mean_row, share_row, _ = paper.ablation_rows([good, bad], tolerance=1.0)
    assert mean_row.verdict == verdict.INCONCLUSIVE and mean_row.unit == "seeds" and "seeds 0, 1" in mean_row.note
    alone = paper.ablation_rows([good], tolerance=1.0)[0]
    assert alone.verdict == verdict.AGREES and alone.unit == "dev examples (paired)"


def test_seeds_that_agree_by_chance_keep_each_runs_resolution_floor():
    """Regression: three seeds on 16 dev examples where no prediction changes. The old seed rule took Student's t over
    the three seed means (all 0), a zero-width interval that "agreed" with no effect; each run's own interval, never
    narrower than the resolution of 16 examples (±20.6 points), now reaches the combined interval, which is
    undecided."""
    tiny = [run_of(flip_sweep(16, [0, 0, 0, 0]), seed) for seed in range(3)]
    mean_row = paper.ablation_rows(tiny, tolerance=1.0)[0]
    assert mean_row.unit == "seeds" and mean_row.verdict == verdict.INCONCLUSIVE
    assert mean_row.high - mean_row.low >= 2 * hs.resolution(16)
    assert paper.mean_head_effect(tiny[0]).high == pytest.approx(hs.resolution(16))


def test_rows_of_a_classifier_that_did_not_learn_are_not_comparable():
    rows = paper.ablation_rows([run_of(flip_sweep(2000, [0, 0, 0, 0]))], 1.0, analysable=False)
    assert {r.verdict for r in rows} == {verdict.NOT_COMPARABLE}
    assert "constant predictor" in rows[0].rule
    # the book's own questions about heads are not asked of a classifier that learned nothing either
    own = paper.masking_rows({"spearman": 0.6}, 72, analysable=False) + paper.seed_rows(
        {"rho_importance": Estimate(0.5, 0.3, 0.7, 3), "rho_ablation": None, "top_importance": None,
         "top_ablation": None, "pairs": [1, 2, 3], "k": 10, "chance": 0.14}, analysable=False)
    assert {(r.kind, r.outcome_words) for r in own} == {(verdict.OWN, "not testable here")}
    assert paper.masking_rows({"spearman": 0.6}, 72)[0].outcome_words == "supported"


# ----------------------------------------------------------------------------- §3.3


def chosen(deltas, half):
    return pd.DataFrame({"layer": range(1, len(deltas) + 1), "label": [f"{i + 1}-1" for i in range(len(deltas))],
                         "delta": deltas, "low": [d - half for d in deltas], "high": [d + half for d in deltas],
                         "n": 100})


def test_one_head_rows_judge_each_layer_by_no_effect():
    row = paper.one_head_rows(chosen([0.0] * 6, 0.5), 1.0, seed=0)[0]
    assert row.verdict == verdict.AGREES and row.ours == "6 of 6 surely, 0 undecided"
    assert row.paper == "no layer changes significantly (12 layers)" and row.experiment == "§3.3, Table 3"
    # the old rule: "0 layers significant" agreed, however small the sample; here wide intervals are undecided
    assert paper.one_head_rows(chosen([0.0] * 6, 20.0), 1.0, seed=0)[0].verdict == verdict.INCONCLUSIVE
    assert paper.one_head_rows(chosen([0.0] * 3 + [-5.0] * 3, 0.5), 1.0, 0)[0].verdict == verdict.PARTLY
    assert paper.one_head_rows(chosen([-5.0] * 6, 0.5), 1.0, 0)[0].verdict == verdict.DISAGREES


def test_one_head_everywhere_needs_a_sure_loss():
    rows = lambda e: paper.one_head_all_rows(e, 1.0, 0)[0].verdict  # noqa: E731
    assert rows(Estimate(-20.0, -25.0, -15.0, 100)) == verdict.AGREES
    assert rows(Estimate(-3.0, -4.0, -2.0, 100)) == verdict.PARTLY
    assert rows(Estimate(-18.8, -43.8, 1.8, 16)) == verdict.INCONCLUSIVE
    assert rows(Estimate(2.0, 1.0, 3.0, 100)) == verdict.DISAGREES


# ----------------------------------------------------------------------------- §3.4


def test_across_rows_combine_the_seeds_by_the_books_rule():
    r, book = paper.across_rows([Estimate(0.7, 0.6, 0.8, 200)], "MNLI-m vs MNLI-mm", True,
                                [("A", "B", 0.2), ("A", "C", 0.4), ("B", "C", 0.3)])
    # out of domain (the paper's set-up): the paper's claim, fully above the low end of the paper's own interval
    low = np.tanh(np.arctanh(0.68) - 1.959964 / np.sqrt(141))
    assert paper.paper_r_low() == pytest.approx(low) and 0.57 < low < 0.59
    assert (r.paper, r.verdict, r.note, r.kind) == (0.68, verdict.AGREES, "MNLI-m vs MNLI-mm", verdict.CLAIM)
    assert r.ours == "0.70 [0.60, 0.80]" and r.low == 0.6 and "Fisher's z" in r.rule
    assert paper.across_rows([Estimate(0.5, 0.4, 0.6, 200)], "x", True, [])[0].verdict == verdict.PARTLY
    assert book.ours == pytest.approx(0.3) and book.verdict == verdict.NOT_COMPARABLE  # no heads: no interval
    assert book.note == "A/B 0.20, A/C 0.40, B/C 0.30" and book.kind == verdict.OWN
    tasks = paper.across_rows([Estimate(0.7, 0.6, 0.8, 200)], "x", True, [("A", "B", 0.4)], n_heads=72)[1]
    assert tasks.verdict == verdict.AGREES and tasks.outcome_words == "supported" and tasks.low > 0
    weak = paper.across_rows([Estimate(0.7, 0.6, 0.8, 200)], "x", True, [("A", "B", 0.1)], n_heads=72)[1]
    assert weak.verdict == verdict.INCONCLUSIVE and "72 heads" in weak.detectable
    two = paper.across_rows([Estimate(0.7, 0.6, 0.8, 200), Estimate(0.2, 0.1, 0.3, 200)], "x", False, [])[0]
    assert two.verdict == verdict.INCONCLUSIVE and "two halves of one dev sample" in two.note
    close = paper.across_rows([Estimate(0.7, 0.6, 0.8, 200), Estimate(0.72, 0.6, 0.8, 200)], "x", False, [])[0]
    assert close.verdict == verdict.AGREES and close.unit == "seeds"
    assert paper.across_rows([Estimate(0.2, -0.3, 0.6, 16)], "x", False, [])[0].verdict == verdict.INCONCLUSIVE
    assert paper.across_rows([Estimate(-0.6, -0.8, -0.4, 99)], "x", False, [])[0].verdict == verdict.DISAGREES


def test_a_split_half_correlation_is_the_books_question_not_the_papers_cross_domain_claim():
    """Regression (issue 48): the split-half r was judged as the paper's claim against its cross-domain 0.68 (MNLI
    matched vs mismatched), another quantity. It is now the book's own question, and says why."""
    half = paper.across_rows([Estimate(0.7, 0.6, 0.8, 200)], "dev half A vs half B", False, [])[0]
    assert half.kind == verdict.OWN and half.experiment == "§3.4 (book)" and half.outcome_words == "supported"
    assert "different quantity" in str(half.paper) and "0.68" in str(half.paper)
    assert "not compared" in half.note and half.rule.startswith("Pearson r (the same heads matter on other examples)")


# ----------------------------------------------------------------------------- §4.2


def stats_of(safe, area, spread=0.05, n=500):
    rng = np.random.default_rng(0)
    out = {}
    for name in (mp.BY_IMPORTANCE, mp.BY_ABLATION, mp.RANDOM):
        sd = safe[name] + spread * rng.standard_normal(400)
        ad = area[name] + 0.2 * rng.standard_normal(400)
        out[name] = {"safe": Estimate(safe[name], *np.quantile(sd, [0.025, 0.975]), n, "dev examples"),
                     "area": Estimate(area[name], *np.quantile(ad, [0.025, 0.975]), n, "dev examples"),
                     "safe_draws": sd, "area_draws": ad}
    return SimpleNamespace(seed=0, curve_stats=out)


def test_pruning_rows_judge_intervals():
    safe = {mp.BY_IMPORTANCE: 0.4, mp.BY_ABLATION: 0.3, mp.RANDOM: 0.1}
    area = {mp.BY_IMPORTANCE: 80.0, mp.BY_ABLATION: 80.2, mp.RANDOM: 70.0}
    share, oracle, rand = paper.pruning_rows([stats_of(safe, area)], 1.0)
    assert (share.paper, share.paper_value, share.verdict) == ("40% (§4.2, MNLI)", 0.4, verdict.AGREES)
    assert share.low > 0.3 and share.high < 0.5
    assert oracle.verdict == verdict.AGREES and rand.verdict == verdict.AGREES
    share, oracle, rand = paper.pruning_rows([stats_of({**safe, mp.BY_IMPORTANCE: 0.25}, area, spread=0.02)], 1.0)
    assert share.verdict == verdict.PARTLY  # [0.21, 0.29]: within two pruning steps of 40%, not within one
    wide = paper.pruning_rows([stats_of(safe, area, spread=0.3)], 1.0)[0]
    assert wide.verdict == verdict.INCONCLUSIVE
    _, oracle, rand = paper.pruning_rows([stats_of(safe, {**area, mp.BY_ABLATION: 90.0, mp.RANDOM: 90.0})], 1.0)
    assert oracle.verdict == verdict.DISAGREES and rand.verdict == verdict.DISAGREES


def test_the_prunable_share_is_judged_two_sided_against_the_papers_number_for_the_task():
    """Regression (issue 47): the old rule agreed with any safe share surely at least 30% (no upper bound) and called
    "partly" anything surely above 15%. Now the share is the paper's number (App. B's for the task where it gives
    one) within one of the paper's 10% pruning steps, partly within two; a share far above it disagrees too."""
    area = {mp.BY_IMPORTANCE: 80.0, mp.BY_ABLATION: 80.2, mp.RANDOM: 70.0}
    rule = paper.prunable_rule()
    assert (rule.agree, rule.partly) == (0.1, 0.2) and "10% of the heads per step in §4.2" in rule.words
    far = paper.pruning_rows([stats_of({mp.BY_IMPORTANCE: 0.9, mp.BY_ABLATION: 0.3, mp.RANDOM: 0.1}, area,
                                       spread=0.02)], 1.0)[0]
    assert far.verdict == verdict.DISAGREES  # the old rule: surely >= 30% -> agrees
    sst2 = paper.pruning_rows([stats_of({mp.BY_IMPORTANCE: 0.45, mp.BY_ABLATION: 0.3, mp.RANDOM: 0.1}, area,
                                        spread=0.01)], 1.0, task="SST-2")[0]
    assert sst2.paper == "60% (App. B, SST-2)" and sst2.verdict == verdict.PARTLY and "40% for MNLI" in sst2.note
    # 36%, the quick build's share, over three seeds: judged by its interval, not filed as a difference by default
    seeds = [stats_of({mp.BY_IMPORTANCE: v, mp.BY_ABLATION: 0.3, mp.RANDOM: 0.1}, area, spread=0.04)
             for v in (0.389, 0.389, 0.292)]
    row = paper.pruning_rows(seeds, 1.0, step=0.1)[0]
    assert row.ours.startswith("36% [") and row.unit == "seeds"
    assert row.verdict == verdict.judge(rule, 0.4, Estimate(row.value, row.low, row.high))
    assert row.verdict in (verdict.AGREES, verdict.PARTLY, verdict.INCONCLUSIVE)


def test_a_share_read_on_the_pruning_grid_keeps_half_a_step_either_side():
    """Three seeds whose bootstrap put every resample on the same pruning step (zero-width intervals) and agree by
    chance: the old rule gave a zero-width interval [0.4, 0.4]; each run now keeps half a step either side (without
    it the seed rule refuses to claim certainty)."""
    area = {mp.BY_IMPORTANCE: 80.0, mp.BY_ABLATION: 80.2, mp.RANDOM: 70.0}
    flat = []
    for seed in range(3):
        st = stats_of({mp.BY_IMPORTANCE: 0.4, mp.BY_ABLATION: 0.3, mp.RANDOM: 0.1}, area)
        st.curve_stats[mp.BY_IMPORTANCE]["safe"] = Estimate(0.4, 0.4, 0.4, 500, "dev examples")
        flat.append(st)
    share = paper.pruning_rows(flat, 1.0, step=0.1)[0]
    assert share.high - share.low == pytest.approx(0.1, abs=0.002) and share.verdict == verdict.AGREES
    try:  # without the floor: no width at all (or refused, where the seed rule sees through rounding)
        bare = paper.pruning_rows(flat, 1.0)[0]
        assert bare.high - bare.low < 1e-9
    except ParameterError:
        pass


def test_curve_statistics_match_the_curves_and_pair_orderings():
    n, steps = 50, 3
    gold = np.zeros(n, dtype=np.int64)
    base = np.tile([1.0, 0.0], (n, 1))

    def curve(wrong):  # step k makes the first wrong[k] examples wrong
        outs = np.repeat(base[None], steps, axis=0)
        for k, w in enumerate(wrong):
            outs[k, :w] = [0.0, 1.0]
        scores = np.array([100.0 * np.mean(o.argmax(1) == gold) for o in outs])
        s = SweepResult("pruning", "mask", scores, 100.0, outs, base, gold, [f"{k} pruned" for k in (0, 2, 4)])
        s.meta["order"] = ["1-1", "1-2", "2-1", "2-2"]
        return s

    st = mp.curve_statistics({"a": [curve([0, 0, 10])], "b": [curve([0, 5, 25]), curve([0, 5, 35])]}, "SST-2", 1.0,
                             n_resamples=300)
    assert st["a"]["safe"].value == 0.5 and st["b"]["safe"].value == 0.0
    assert st["a"]["area"].value == pytest.approx(100.0)  # mean up to 90% pruned: shares 0 and 0.5
    assert st["b"]["area"].value == pytest.approx((100 + 90) / 2)
    d = mp.difference(st, "a", "b")
    assert d.value == pytest.approx(st["a"]["area"].value - st["b"]["area"].value) and d.low > 0
    frame = mp.curve_frame(curve([0, 0, 10]), "a", step=0.5)
    assert frame["share_pruned"].tolist() == [0.0, 0.5, 1.0] and frame["newly_pruned"].iloc[1] == "1-1 1-2"


# ----------------------------------------------------------------------------- §4.3, §6, book rows


def speed_summary(gains, sizes=(1, 4)):
    runs = pd.DataFrame([{"batch_size": b, "repeat": r, "original": 10.0, "pruned": 10.0 * (1 + g[r] / 100),
                          "gain_pct": g[r]} for b, g in zip(sizes, gains) for r in range(len(g))]).assign(n_pruned=36)
    return mp.speed_summary(runs)


def test_speed_rows_and_table4_carry_the_interval_over_repeats():
    assert paper.speed_share(0.25) == 0.25 and paper.speed_share(0.0) == 0.5
    # updated after 7b1b9b5 (issue 30): the gain is the median of interleaved timing pairs, with an interval from 6 pairs
    row = paper.speed_rows(speed_summary([[1.0, 1.2, 0.8], [20.0, 21.0, 19.0, 20.5, 19.5, 20.0]]), 0.5)[0]
    assert row.quantity == "speed gain at batch 4, % (50% pruned, CPU)"
    assert row.paper == "+17.5% (50% pruned, GPU)" and row.verdict == verdict.AGREES
    assert row.unit == "interleaved timing pairs (median)" and row.n == 6 and row.low > 5
    undecided = paper.speed_rows(speed_summary([[1.0], [3.0, -3.0, 1.0, 2.0, -2.0, 0.5]]), 0.5)[0]
    assert undecided.verdict == verdict.INCONCLUSIVE and "6 interleaved timing pairs" in undecided.detectable
    few = paper.speed_rows(speed_summary([[1.0], [20.0, 21.0, 19.0]]), 0.5)[0]  # judged on one number before
    assert few.verdict == verdict.NOT_COMPARABLE and "no 95% interval" in few.rule
    t4 = paper.table4(speed_summary([[1.9, 1.9], [10.0, 10.0, 9.0, 11.0, 10.5, 9.5], [0.0, 0.0]], (1, 4, 8)), 0.25)
    assert list(t4.columns) == ["batch size", "original (ex/s)", "pruned 25% (ex/s)", "gain % (95% interval)",
                                "paper original", "paper pruned 50%"]
    assert t4["paper original"].tolist() == ["17.0", "67.3", "—"]
    assert t4["paper pruned 50%"].tolist() == ["17.3 (+1.9%)", "69.1 (+2.7%)", "—"]
    assert t4["original (ex/s)"].iloc[0] == "10.0 ± 0.0" and t4["gain % (95% interval)"].iloc[1].startswith("+10.0 [")


def test_dynamics_iwslt_is_not_reproduced_and_the_checkpoint_question_is_the_books():
    """Issue 32: §6 trains an IWSLT model (not reproduced, with the reason); the book's own question asked of
    fine-tuning checkpoints (is the safe share lower early than at the end?) is judged by its own test."""
    st = {"10% of training": {"unpruned": Estimate(52.0, 45.0, 59.0, 100), "safe": Estimate(1.0, 0.9, 1.0, 100),
                              "safe_draws": np.full(10, 1.0)},
          "50% of training": {"unpruned": Estimate(70.0, 65.0, 75.0, 100), "safe": Estimate(0.1, 0.0, 0.2, 100),
                              "safe_draws": np.full(10, 0.1)},
          "100% of training": {"unpruned": Estimate(80.0, 75.0, 85.0, 100), "safe": Estimate(0.4, 0.3, 0.5, 100),
                               "safe_draws": np.full(10, 0.4)}}
    iwslt, own = paper.dynamics_rows(st, constant=50.0)
    assert iwslt.kind == verdict.NOT_REPRODUCED and iwslt.verdict == verdict.NOT_COMPARABLE and "IWSLT" in iwslt.rule
    assert iwslt.experiment == "§6 Fig. 5 (IWSLT)" and iwslt.outcome_words == "not reproduced"
    assert own.kind == verdict.OWN and own.ours == "0.30 [0.30, 0.30]" and own.verdict == verdict.AGREES
    assert own.outcome_words == "supported" and own.note.startswith("50% of training vs the end; left out")
    untestable = paper.dynamics_rows(st, constant=76.0)[1]
    assert untestable.ours == "n/a" and untestable.outcome_words == "not testable here"


def test_comparisons_every_row_has_a_rule_and_sample_estimates_an_interval():
    runs = [SimpleNamespace(**vars(run_of(flip_sweep(2000, [0, 1, -1, 0]))),
                            curve_stats=stats_of({mp.BY_IMPORTANCE: 0.4, mp.BY_ABLATION: 0.3, mp.RANDOM: 0.1},
                                                 {mp.BY_IMPORTANCE: 80.0, mp.BY_ABLATION: 80.2,
                                                  mp.RANDOM: 70.0}).curve_stats)]
    agreement = {"rho_importance": Estimate(0.5, 0.3, 0.7, 3, "seed pairs"), "rho_ablation": Estimate(0.4, 0.2, 0.6, 3),
                 "top_importance": Estimate(0.5, 0.4, 0.6, 3), "top_ablation": Estimate(0.4, 0.3, 0.5, 3),
                 "pairs": pd.DataFrame({"seeds": ["0 vs 1", "0 vs 2", "1 vs 2"]}), "k": 10, "chance": 0.14}
    dyn = {"50% of training": {"unpruned": Estimate(52.0, 45.0, 59.0, 100), "safe": Estimate(0.0, 0.0, 0.1, 100),
                               "safe_draws": np.zeros(10)},
           "100% of training": {"unpruned": Estimate(80.0, 75.0, 85.0, 100), "safe": Estimate(0.3, 0.2, 0.4, 100),
                                "safe_draws": np.full(10, 0.3)}}
    rows = paper.comparisons(
        runs=runs, analysable=True, chosen=chosen([0.0] * 6, 0.5), one_head=Estimate(-20.0, -25.0, -15.0, 100),
        across=[Estimate(0.7, 0.6, 0.8, 200)], between="dev half A vs half B", out_of_domain=False,
        task_pairs=[("SST-2", "MRPC", 0.1)], agreement=agreement,
        speed=speed_summary([[1.0, 1.0], [20.0, 19.0, 20.5, 19.5, 21.0, 20.0]]), share=0.4, dynamics=dyn,
        constant=50.0,
        disable_vs_mask={"spearman": 0.333}, tolerance=1.0)
    assert [(r.experiment, r.kind) for r in rows] == [
        ("§3.2", "claim"), ("§3.2", "claim"), ("§3.2 Table 1 (WMT)", "not reproduced"), ("§3.3, Table 3", "claim"),
        ("§3.3 Table 2 (WMT)", "not reproduced"), ("§3.3/§4.2", "claim"), ("§3.4 (book)", "own"), ("§3.4 (book)", "own"),
        ("§3.4 (WMT)", "not reproduced"), ("§4.2", "claim"), ("§4.2 Fig. 3", "claim"), ("§4.2 Fig. 3", "claim"),
        ("§4.2 Fig. 3 (WMT)", "not reproduced"), ("book (seeds)", "own"), ("book (seeds)", "own"),
        ("book (seeds)", "own"), ("book (seeds)", "own"), ("§4.3 Table 4", "claim"), ("§5 Fig. 4 (WMT)", "not reproduced"),
        ("§6 Fig. 5 (IWSLT)", "not reproduced"), ("§6 (book)", "own"), ("book", "own")]
    for r in rows:
        assert r.rule, r.quantity
        if r.verdict in (verdict.AGREES, verdict.PARTLY, verdict.DISAGREES):
            assert r.high is not None, r.quantity
        assert r.rejudged() == r.verdict, r.quantity
    claims = [r for r in rows if r.kind == verdict.CLAIM]
    assert len(claims) == 8 and all(r.verdict == verdict.AGREES for r in claims)
    own = {r.quantity: r for r in rows if r.kind == verdict.OWN}
    masking = own["Spearman ρ of disabling Δ vs masking Δ (same heads)"]
    assert masking.verdict == verdict.INCONCLUSIVE and "on 4 heads" in masking.detectable  # 4 heads: a wide interval
    assert {r.verdict for r in rows if r.kind == verdict.NOT_REPRODUCED} == {verdict.NOT_COMPARABLE}


# ----------------------------------------------------------------------------- defect 5: what the chapter says


def test_the_paper_column_quotes_bert_not_wmt_and_the_mt_half_is_declared():
    """Issue 17, defect 5 (chapter 6): the §3.2 row quoted WMT's "88 of 96" for a BERT experiment, and the chapter
    never said that the machine-translation half is not reproduced."""
    rows = paper.ablation_rows([run_of(flip_sweep(100, [0, 0, 0, 0]))], 1.0)
    assert all("88" not in str(r.paper) for r in rows[:2]) and "BERT" in rows[0].paper
    assert "unchanged_heads_wmt" not in paper.PAPER
    for part in ("WMT", "Tables 1-2", "Fig. 4", "IWSLT"):
        assert part in paper.NOT_REPRODUCED
    cells = json.loads((ROOT / "notebooks" / "06_michel_pruning.ipynb").read_text())["cells"]
    intro = "".join(cells[0]["source"])
    assert "not reproduced" in intro and "WMT" in intro and "IWSLT" in intro and "Fig. 4" in intro


def two_rows():
    return [verdict.Comparison(experiment="§3.2", quantity="q1", paper="p", ours="o", verdict=verdict.AGREES,
                               rule="r"),
            verdict.Comparison(experiment="§4.2", quantity="q2", paper="p2", ours="o2",
                               verdict=verdict.INCONCLUSIVE, rule="r")]


def test_the_closing_summary_is_the_verdict_summary_stated_once():
    """Chapter 6 calls ``agreement_markdown(rows, setting_markdown(...))``, the one closing-summary name of every
    study: the setting sentence, then the one summary of :func:`attnbook.verdict.summary_markdown`."""
    rows = two_rows()
    setting = paper.setting_markdown("tiny", "SST-2", 872, 3, True)
    assert setting == ("The classifiers here are tiny fine-tuned on SST-2 (3 analysed seed(s), 872 dev examples "
                       "scored after each intervention); the paper's is bert-base fine-tuned on MNLI.")
    assert paper.agreement_markdown(rows) == verdict.summary_markdown(rows, "")
    page = paper.agreement_markdown(rows, setting)
    assert page == verdict.summary_markdown(rows, setting)
    assert page.count("comparisons") == 1 and page.count("What this run found") == 1
    assert paper.setting_markdown("tiny", "SST-2", 872, 1, False).endswith(
        "None of them is better than its constant predictor, so no row is compared.")


def test_the_front_door_exports_every_name_it_lists():
    assert not [name for name in paper.__all__ if not hasattr(paper, name)]
    for name in ("comparisons", "agreement_markdown", "setting_markdown", "PAPER", "NOT_REPRODUCED", "table4"):
        assert name in paper.__all__


def test_the_chapters_sentences():
    run = run_of(flip_sweep(2000, [0, 1, -300, 0]))
    text = paper.ablation_markdown(run, 1.0)
    assert text.startswith("Seed 0: baseline 80.0 on 2000 dev examples. Of 4 heads, **3** surely change the score by")
    assert "1 surely lower it and 0 surely raise it" in text and "Δ ranges from -15.00 to +0.05 points" in text
    one = paper.one_head_markdown(chosen([0.0, 0.0], 0.5), Estimate(-18.75, -30.0, -10.0, 100), 1.0)
    assert "**2 of 2** (0 undecided)" in one and "**-18.8 [-30.0, -10.0]**" in one
    found = paper.agreement_markdown(two_rows())
    assert found.startswith("**What this run found.** Of 2 comparisons, 1 agrees, 1 inconclusive.")
    assert "Cannot tell (inconclusive)</span>** (1):\n\n- q2: paper p2; this run o2" in found
    status = Learned("SST-2", False, "below", 50.2, 46.8, 53.6, 50.9, 872, -2.0, 3.0, 0.6)
    bad = SimpleNamespace(seed=1, status=status, learned=False)
    assert "Skipped" in paper.seeds_markdown([SimpleNamespace(seed=0, status=status, learned=True),
                                              bad], "SST-2", True)
    assert "**No seed learned SST-2**" in paper.seeds_markdown([bad], "SST-2", False)
    assert "seed 1: SST-2 50.2 [46.8, 53.6] on 872 dev examples, constant predictor 50.9" in paper.seeds_markdown(
        [bad], "SST-2", False)


def test_chapter6_sentences_come_from_the_numbers():
    """Issue 21: chapter 6's sentences moved from f-strings in the notebook into the package."""
    runs = [SimpleNamespace(seed=0), SimpleNamespace(seed=2)]
    text = paper.across_markdown("dev half A vs half B", runs, [Estimate(0.5, 0.4, 0.6), Estimate(0.25, 0.1, 0.4)])
    assert text.startswith("dev half A vs half B, Pearson r") and "seed 2 0.25 [0.10, 0.40]" in text
    km = {"spearman": 0.61, "spearman_p": 1e-3, "pearson": 0.7, "top_k_overlap": 0.4, "top_k_chance": 0.14}
    text = paper.disable_vs_mask_markdown(km, np.array([-1.0, 0.0]), np.array([-2.0, -1.0]))
    assert "ρ = **0.61**" in text and "40% are shared (chance 14%)" in text and "disabled -0.50, masked -1.50" in text
    halves = {"spearman": 0.3, "top_k_overlap": 0.5, "top_k_chance": 0.14}
    assert "not learned: RTE" in paper.halves_markdown("SST-2", halves, ["RTE"])
    assert "not learned" not in paper.halves_markdown("SST-2", halves, [])
