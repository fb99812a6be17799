"""Chapter 6 (Michel et al. 2019) as a pipeline: the steps its notebook runs, one method a step.

The pipeline takes, besides the encoder and the chapter's parameters, the fine-tuning recipe (the book's
:func:`attnbook.chapters.profiles.glue.recipe` of the chapter's parameters). The costs the plan adds up are in
:mod:`attnbook.studies.michel.costs`; the comparison rows are :func:`attnbook.studies.michel.paper.comparisons`
of this pipeline's stages (:meth:`PruningPipeline.comparisons`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from attnbook import stats
from attnbook.data.glue import GlueSplit
from attnbook.engine.finetune import DEV_SAMPLE_SEED
from attnbook.engine.inputs import Batch
from attnbook.engine.pipeline import no_model_work, stage
from attnbook.engine.scores import accuracy_points
from attnbook.engine.sweeps import SweepResult
from attnbook.stats import Estimate
from attnbook.studies.heads_off import effects as headstudy
from attnbook.studies.heads_off.pipeline import GluePipeline
from attnbook.studies.michel import costs, dynamics, importance, paper, runs
from attnbook.studies.michel import pruning as mp
from attnbook.studies.michel.runs import SeedRun
from attnbook.verdict import Comparison

#: Michel et al. report Δ in accuracy points
SCORE = accuracy_points


@dataclass(frozen=True)
class Seeds:
    """The classifier of every seed with whether it learned (``all``), the ones analysed (``todo``: the learned
    ones, or all when none did) and whether any learned (``analysable``)."""

    all: list[SeedRun]
    todo: list[SeedRun]
    analysable: bool

    @property
    def first(self) -> SeedRun:
        return self.todo[0]


@dataclass(frozen=True)
class TaskData:
    """The main task's dev sample (scored) and training sample (for importance), each with its batches."""

    dev: GlueSplit
    dev_batches: list[Batch]
    train: GlueSplit
    importance_batches: list[Batch]


@dataclass(frozen=True)
class OneHead:
    """§3.3, first seed: every head masked but one (``all_but_one``), the best head per layer chosen on one half
    of the dev examples and scored on the other (``best``, ``chosen``), and all layers reduced to their best head
    together (``one_head``)."""

    all_but_one: SweepResult
    best: pd.DataFrame
    chosen: pd.DataFrame
    one_head: Estimate


@dataclass(frozen=True)
class Across:
    """Single-head Δ compared between two settings (``between``: an out-of-domain task, or two halves of dev),
    per analysed seed: the sweeps compared and the correlation of their Δ."""

    between: str
    out_of_domain: bool
    pairs: dict[int, tuple[SweepResult, SweepResult]]
    correlations: list[Estimate]
    files: list[Path]


@dataclass(frozen=True)
class TaskImportance:
    """§4.1 across tasks: importance on every agreement task that learned (``by_task``, the main task first), their
    rank agreement (``rho``, ``pairs``), the tasks left out (``not_learned``) and the files read."""

    by_task: dict[str, np.ndarray]
    rho: pd.DataFrame
    pairs: list
    not_learned: list[str]
    files: list[Path]


@dataclass(frozen=True)
class Curves:
    """§4.2: every seed's pruning curves, their band, the first seed's safe shares and the summary per ordering."""

    all: pd.DataFrame
    band: pd.DataFrame
    safe: dict
    summary: pd.DataFrame


@dataclass(frozen=True)
class Speed:
    """§4.3 (Table 4): the share of heads pruned, the timings and their summary."""

    share: float
    timings: Any
    summary: pd.DataFrame


@dataclass(frozen=True)
class Dynamics:
    """§5, first seed: importance and pruning at the recipe's checkpoints, the summary and its statistics."""

    frame: pd.DataFrame
    summary: pd.DataFrame
    statistics: dict


@dataclass(frozen=True)
class DisableVsMask:
    """The first seed's heads switched off two ways: disabled (uniform attention) vs masked; rank agreement."""

    disabled: SweepResult
    agreement: dict


class PruningPipeline(GluePipeline):
    """Chapter 6 (Michel §3-5): masking heads, importance scores, pruning, and when importance appears."""


    def data_files(self) -> list[Path]:
        """The main task's training (importance) and dev files, the out-of-domain task's dev file and the agreement
        tasks' files."""
        p = self.p
        return [*self.glue_files([p.task]), *self.glue_files([p.ood_task] if p.ood_task else [], ("dev",)),
                *self.glue_files(p.agreement_tasks)]

    @stage("classifiers of every seed and agreement task", costs.classifiers_cost)
    def seeds(self) -> Seeds:
        """Every seed's classifier on the main task and whether it learned (:func:`runs.classifiers`)."""
        got = runs.classifiers(self.model, self.p.task, self.recipe, self.p.seeds)
        todo, analysable = runs.analysed(got)
        return Seeds(got, todo, analysable)

    @stage("dev and importance samples", no_model_work)
    def data(self) -> TaskData:
        p, tok = self.p, self.model.tokenizer
        dev, dev_b = headstudy.task_data(tok, p.task, "dev", p.dev_cap, DEV_SAMPLE_SEED, **self.batching)
        train, imp_b = headstudy.task_data(tok, p.task, "train", p.importance_cap, p.seed + 1, **self.batching)
        return TaskData(dev, dev_b, train, imp_b)

    @stage("masking sweeps and pruning curves of every seed", costs.analyse_cost)
    def analysed(self) -> list[SeedRun]:
        """Each analysed seed's single-head masking sweep, importance and pruning curves (:func:`runs.analyse`)."""
        p, d = self.p, self.data()
        return [runs.analyse(run, p.task, d.dev_batches, d.importance_batches, SCORE, step=p.step,
                             random_seeds=p.random_seeds, tolerance=p.tolerance, n_resamples=p.n_resamples,
                             seed=p.seed)
                for run in self.seeds().todo]

    @stage("first seed: all-but-one, disabling, training dynamics", costs.first_seed_cost)
    def one_head(self) -> OneHead:
        p, d, clf = self.p, self.data(), self.seeds().first.classifier
        half_a, half_b = headstudy.halves(len(d.dev), p.seed)
        abo = headstudy.switched_off(clf, d.dev_batches, "all_but_one", "mask", SCORE)
        best = importance.chosen_heads(abo, half_a, half_b, SCORE, alpha=p.alpha)
        chosen = importance.chosen_effects(abo, best, half_b, p.task, SCORE, n_resamples=p.n_resamples,
                                           seed=p.seed)
        sweep = mp.one_head_per_layer(clf.model, d.dev_batches, best["head"].to_numpy() - 1, SCORE)
        one = headstudy.effect_estimates(sweep, p.task, n_resamples=p.n_resamples, seed=p.seed)[0]
        return OneHead(abo, best, chosen, one)

    @stage("out-of-domain masking sweeps", costs.out_of_domain_cost)
    def across(self) -> Across:
        """Each analysed seed's single-head Δ on the main task vs ``ood_task`` (or dev half A vs half B)."""
        p, d = self.p, self.data()
        pairs, correlations, files = {}, [], []
        half_a, half_b = headstudy.halves(len(d.dev), p.seed)
        for run in self.analysed():
            if p.ood_task:
                ood, ood_b = headstudy.task_data(self.model.tokenizer, p.ood_task, "dev", p.dev_cap,
                                                 DEV_SAMPLE_SEED, **self.batching)
                files = [ood.path]
                pair = (run.ablation, headstudy.switched_off(run.classifier, ood_b, "single_heads", "mask", SCORE))
            else:
                pair = (headstudy.subset_sweep(run.ablation, half_a, SCORE), headstudy.subset_sweep(run.ablation, half_b,
                                                                                                 SCORE))
            pairs[run.seed] = pair
            correlations.append(importance.delta_correlation(*pair, p.task, n_resamples=p.n_resamples,
                                                             seed=p.seed))
        between = f"{p.task} vs {p.ood_task}" if p.ood_task else "dev half A vs half B"
        return Across(between, bool(p.ood_task), pairs, correlations, files)

    @stage("importance across tasks", costs.importance_cost)
    def task_importance(self) -> TaskImportance:
        p, first = self.p, self.analysed()[0]
        tasks, not_learned = runs.agreement_tasks(self.model, p.agreement_tasks, self.recipe, first.seed,
                                                  known=[p.task])
        by_task, files = importance.importance_by_task(self.model, tasks, self.recipe, first.seed,
                                                       cap=p.importance_cap, data_seed=p.seed + 1,
                                                       known={p.task: first.importance}, **self.batching)
        rho, pairs = importance.task_agreement(by_task)
        return TaskImportance(by_task, rho, pairs, not_learned, files)

    @stage("importance on two halves of the training sample", no_model_work)  # counted in task_importance's cost
    def importance_halves(self) -> dict:
        """Rank agreement of the first seed's importance scored on two halves of its training sample."""
        first = self.analysed()[0]
        I_a, I_b = importance.importance_on_halves(first.classifier, self.data().importance_batches, self.p.seed + 2)
        return stats.rank_agreement(I_a, I_b)

    @stage("pruning curves of every seed", no_model_work)  # the curves are computed by `analysed`
    def curves(self) -> Curves:
        todo, tol = self.analysed(), self.p.tolerance
        first = todo[0]
        safe = mp.safe_shares(first.curves, first.ablation.baseline_score, tol)
        return Curves(runs.all_curves(todo), runs.curve_band(todo), safe, paper.pruning_summary(todo, tol))

    @stage("speed runs", costs.speed_cost)
    def speed(self) -> Speed:
        """Table 4: throughput with the largest safe share of heads pruned by importance, vs unpruned."""
        p, first = self.p, self.analysed()[0]
        share = paper.speed_share(self.curves().safe[mp.BY_IMPORTANCE])
        pool = mp.throughput_pool(self.data().dev_batches, p.speed_examples, self.model.tokenizer.pad_token_id or 0)
        timings = mp.speed_runs(first.classifier.model, pool, first.importance, share,
                                batch_sizes=p.speed_batch_sizes, n_examples=p.speed_examples,
                                repeats=p.speed_repeats)
        return Speed(share, timings, mp.speed_summary(timings))

    @stage("training dynamics (§5)", no_model_work)  # counted in one_head's cost (the first seed's work)
    def dynamics(self) -> Dynamics:
        p, d, first = self.p, self.data(), self.analysed()[0]
        frame, summary, sweeps_ = dynamics.training_dynamics(
            self.model, p.task, self.recipe, first.seed, p.checkpoints, d.importance_batches, d.dev_batches,
            SCORE, final=first.classifier, final_importance=first.importance, step=p.step, tolerance=p.tolerance,
            with_sweeps=True)
        statistics = dynamics.checkpoint_statistics(sweeps_, p.task, p.tolerance, n_resamples=p.n_resamples,
                                                    seed=p.seed)
        return Dynamics(frame, summary, statistics)

    @stage("disabling vs masking", no_model_work)  # counted in one_head's cost (the first seed's work)
    def disable_vs_mask(self) -> DisableVsMask:
        first = self.analysed()[0]
        disabled = headstudy.switched_off(first.classifier, self.data().dev_batches, "single_heads", "disable", SCORE)
        return DisableVsMask(disabled, stats.rank_agreement(disabled.delta, first.ablation.delta))

    @stage("paper vs this run", no_model_work)
    def comparisons(self) -> list[Comparison]:
        """The chapter's comparison rows from every stage (:func:`attnbook.studies.michel.paper.comparisons`)."""
        one, across, speed = self.one_head(), self.across(), self.speed()
        first = self.analysed()[0]
        return paper.comparisons(
            runs=self.analysed(), analysable=self.seeds().analysable, chosen=one.chosen, one_head=one.one_head,
            across=across.correlations, between=across.between, out_of_domain=across.out_of_domain,
            task_pairs=self.task_importance().pairs, agreement=runs.seed_agreement(self.analysed()),
            speed=speed.summary, share=speed.share, dynamics=self.dynamics().statistics,
            constant=headstudy.trivial_score(self.p.task, first.ablation.gold),
            disable_vs_mask=self.disable_vs_mask().agreement, tolerance=self.p.tolerance, task=self.p.task,
            step=self.p.step)
