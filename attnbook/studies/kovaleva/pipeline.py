"""Chapters 4-5 (Kovaleva et al. 2019) as pipelines: the steps each chapter's notebook runs, one method a step.

Both chapters study classifiers fine-tuned on GLUE tasks from one pre-trained encoder, so each pipeline takes,
besides the encoder and the chapter's parameters, the fine-tuning recipe (the book's
:func:`attnbook.chapters.profiles.glue.recipe` of the chapter's parameters). The costs the plan adds up are in
:mod:`attnbook.studies.kovaleva.costs`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnbook.data import framenet as framenet_data
from attnbook.data.glue import GlueSplit
from attnbook.engine.finetune import DEV_SAMPLE_SEED, train_checkpoints
from attnbook.engine.jobs import seeds_for
from attnbook.engine.inputs import Batch, Encoded
from attnbook.engine.models import LoadedModel
from attnbook.engine.pipeline import no_model_work, stage
from attnbook.engine import sweeps
from attnbook.engine.sweeps import SweepResult
from attnbook.studies.heads_off import effects as headstudy
from attnbook.studies.heads_off.pipeline import GluePipeline
from attnbook.studies.kovaleva import cnn, costs, disabling, features, framenet, patterns, table1, taxonomy, word_match
from attnbook.studies.kovaleva import labels as labelled
from attnbook.studies.kovaleva import paper
from attnbook.studies.kovaleva.inputs import dev_inputs
from attnbook.studies.kovaleva.paper.learned import learned_tasks
from attnbook.stats import Estimate
from attnbook.verdict import Comparison


@dataclass(frozen=True)
class Labelled:
    """The hand-reviewed pattern labels (§4.1) and the maps they describe.

    ``label_model`` is the model whose maps the labels were made on (``transfer`` says how it differs from the
    analysed one, empty when it is the same); ``learn`` the learnable subset
    (:func:`attnbook.studies.kovaleva.labels.learnable_subset`: maps, segments, classes, proposed classes, note);
    ``agreement`` the rules' agreement with the review."""

    header: dict
    labels: list
    label_model: LoadedModel
    transfer: str
    learn: dict
    agreement: dict

    def files(self) -> list[Path]:
        return [labelled.LABELS_FILE, *labelled.source_files(self.labels)]

    def annotation_widget(self, out_path: Path | str, *, suggest: bool = False):
        """The labelling tool (:func:`labelled.annotation_widget`) on the reviewed maps the classifiers learn from,
        in the file's order: label them yourself and compare with the review (the chapter's exercise labelled ``ex-4-1``). Labels go to
        ``out_path`` at every click, and a later call resumes from that file; ``suggest`` highlights the rule
        set's proposal (off by default: the review was blind)."""
        picked = [self.labels[i] for i in self.learn["index"]]
        ids = [dict(task=m.task, split=m.split, row=m.row, layer=m.layer, head=m.head) for m in picked]
        return labelled.annotation_widget(self.learn["maps"], ids, out_path,
                                          proposed=self.learn["proposed"] if suggest else None)




@dataclass(frozen=True)
class CNNScores:
    """How well the pattern classifiers label held-out reviewed maps: the feature tree's and the CNN's
    cross-validated predictions, the table of scores and the CNN's macro-F1 with its interval."""

    tree: dict
    cv: dict
    scores: pd.DataFrame
    f1: Any


@dataclass(frozen=True)
class FrameNetRun:
    """§4.2: the kept FrameNet instances, the filter's counts, every head's link scores, the heads above the
    percentile and the top head's estimate against the control."""

    kept: list
    counts: Any
    scores: dict
    heads: dict
    top: dict


class TaxonomyPipeline(GluePipeline):
    """Chapter 4 (Kovaleva §3-4): Table 1, the pattern taxonomy, FrameNet heads, what fine-tuning changes."""


    def data_files(self) -> list[Path]:
        """Table 1's GLUE files, the reviewed pattern labels (their maps are drawn from those tasks' dev files) and
        FrameNet's full-text annotations."""
        return [*table1.data_files(self.p.table1_tasks), labelled.LABELS_FILE, *framenet_data.fulltext_files()]

    @stage("fine-tuning Table 1's classifiers", costs.finetune_cost)
    def classifiers(self) -> dict[str, LoadedModel]:
        """Every classifier of Table 1 trained (cached), and each analysed task's classifier of the chapter's seed."""
        r = self.recipe
        train_checkpoints(self.p.model, table1.jobs(self.p.table1_tasks, r, r["inits"]), r, workers=r["workers"])
        return {task: headstudy.classifier(self.model, task, r, self.p.seed) for task in self.p.tasks}

    @stage("Table 1 dev scores", costs.table1_cost)
    def table1(self) -> pd.DataFrame:
        """Table 1 (:func:`attnbook.studies.kovaleva.table1.table1`), after :meth:`classifiers`."""
        self.classifiers()
        r, p = self.recipe, self.p
        return table1.table1(self.model, p.table1_tasks, r, seeds=r["seeds"], random_seeds=r.get("random_seeds"),
                             inits=r["inits"], dev_caps=p.dev_caps, n_resamples=p.n_resamples, progress=False)

    @stage("which classifiers learned", no_model_work)
    def learned(self) -> dict[str, str]:
        """Per task, ``""`` when the chapter's seed's classifier learned it, else why not (:func:`learned_tasks`)."""
        return learned_tasks(self.table1(), seed=self.p.seed)

    @stage("labelled maps (§4.1)", no_model_work)
    def labelled(self) -> Labelled:
        """The reviewed labels and their maps on the model the labels describe."""
        header, labels = labelled.load_pattern_labels()
        label_model, transfer = labelled.label_model(self.model, header)
        maps, segs, y = labelled.labelled_maps(label_model, labels, header=header)
        learn = labelled.learnable_subset(maps, segs, y, labels, self.p.cv_folds)
        return Labelled(header, labels, label_model, transfer, learn, labelled.agreement(labels))

    @stage("pattern CNN (§4.1)", no_model_work)
    def pattern_cnn(self) -> cnn.PatternCNN:
        """The CNN that labels maps, trained on every learnable labelled map (:func:`cnn.trained_cnn`)."""
        header, labels = labelled.load_pattern_labels()
        label_model, _ = labelled.label_model(self.model, header)
        got = labelled.pattern_images(label_model, header, list(labels), int(self.p.cv_folds), int(self.p.cnn_size))
        return cnn.trained_cnn(torch.as_tensor(got["images"]), got["y"], seed=self.p.seed,
                               epochs=self.p.cnn_epochs)

    @stage("pattern classifiers cross-validated (§4.1)", no_model_work)
    def cnn_scores(self) -> CNNScores:
        """The feature tree and the CNN, each cross-validated on the labelled maps, and the CNN's macro-F1."""
        p, learn = self.p, self.labelled().learn
        images = cnn.maps_to_images(learn["maps"], size=p.cnn_size)
        tree = cnn.cross_validate_features(patterns.features_matrix(learn["maps"], learn["segments"]), learn["y"],
                                           k=p.cv_folds, seed=p.seed)
        cv = cnn.cross_validated_cnn(images, learn["y"], k=p.cv_folds, seed=p.seed, epochs=p.cnn_epochs)
        scores = cnn.classifier_scores(learn["y"], learn["proposed"], tree, cv, p.cv_folds)
        f1 = cnn.f1_estimate(learn["y"], cv["predictions"], n_resamples=p.n_resamples, seed=p.seed)
        return CNNScores(tree, cv, scores, f1)

    @stage("dev inputs of the analysed tasks", no_model_work)
    def inputs(self) -> dict[str, list[Encoded]]:
        p = self.p
        return {task: dev_inputs(self.model.tokenizer, task, p.n_examples, seed=p.seed, max_tokens=p.max_tokens)
                for task in p.tasks}

    @stage("pattern shares, map cosines and features (§4.1, §4.4, §4.5)", costs.patterns_cost)
    def pattern_shares(self) -> dict[tuple[str, str], dict]:
        """``shares[(which, task)]``, ``which`` = "fine-tuned" or "pre-trained" (:func:`taxonomy.pattern_shares`)."""
        finetuned, inputs, cnn_ = self.classifiers(), self.inputs(), self.pattern_cnn()
        return {(which, task): taxonomy.pattern_shares(m, inputs[task], cnn_, batch_size=self.p.batch_size)
                for task in self.p.tasks for which, m in (("fine-tuned", finetuned[task]), ("pre-trained", self.model))}

    @stage("FrameNet frame links (§4.2)", costs.framenet_cost)
    def framenet(self) -> FrameNetRun:
        p = self.p
        kept, counts = framenet.FrameFilter().apply(framenet_data.load_fulltext())
        scores = framenet.frame_link_scores(self.model, kept, direction=p.direction, batch_size=p.batch_size)
        heads = framenet.frame_heads(scores["scores"], percentile=p.percentile, control=scores["control"])
        top = framenet.top_head_estimates(scores["scores"], scores["control"], n_resamples=p.n_resamples,
                                          seed=p.seed)
        return FrameNetRun(kept, counts, scores, heads, top)

    @stage("map cosines, pre-trained vs fine-tuned (§4.4)", no_model_work)  # counted in pattern_shares' cost
    def cosines(self) -> dict[str, dict[str, np.ndarray]]:
        finetuned, inputs = self.classifiers(), self.inputs()
        return {task: features.map_cosine(self.model, finetuned[task], inputs[task], batch_size=self.p.batch_size)
                for task in self.p.tasks}

    @stage("attention received by features (§4.5)", no_model_work)  # counted in pattern_shares' cost
    def features(self) -> dict[str, dict[str, dict]]:
        """``feat[which][task]``: :func:`features.feature_statistics` of the fine-tuned and pre-trained models."""
        finetuned, inputs = self.classifiers(), self.inputs()
        models = {"fine-tuned": finetuned, "pre-trained": {task: self.model for task in self.p.tasks}}
        return {which: {task: features.feature_statistics(m[task], inputs[task], batch_size=self.p.batch_size)
                        for task in self.p.tasks} for which, m in models.items()}

    @stage("pattern shares' intervals (§4.1)", no_model_work)
    def share_estimates(self) -> dict[str, dict[str, Estimate]]:
        """Each analysed task's fine-tuned pattern shares (the CNN's labels) with bootstrap intervals over its maps
        (:func:`taxonomy.share_estimates`)."""
        p, shares = self.p, self.pattern_shares()
        return {t: taxonomy.share_estimates(shares[("fine-tuned", t)]["cnn"], n_resamples=p.n_resamples, seed=p.seed)
                for t in p.tasks}

    @stage("each layer's change under fine-tuning, with intervals (§4.4)", no_model_work)
    def layer_changes(self) -> dict[str, dict]:
        """Per task, each layer's 1 - mean cosine between pre-trained and fine-tuned maps, with bootstrap intervals
        over the inputs (:func:`features.layer_change_estimates`)."""
        p = self.p
        return {t: features.layer_change_estimates(c, n_resamples=p.n_resamples, seed=p.seed)
                for t, c in self.cosines().items()}

    @stage("Table 1 and §4.3 vs the paper", no_model_work)
    def table1_comparisons(self) -> list[Comparison]:
        """The first page's rows: Table 1's cells and §4.3's claims on them (:func:`paper.table1_comparisons`)."""
        return paper.table1_comparisons(self.table1(), n_resamples=self.p.n_resamples, seed=self.p.seed)

    @stage("patterns, frames, changes and features vs the paper (§4.1-4.5)", no_model_work)
    def pattern_comparisons(self) -> list[Comparison]:
        """The second page's rows, section by section: the pattern classifier and Fig. 2's shares (§4.1), the
        FrameNet heads (§4.2), the change under fine-tuning (§4.4) and the features (§4.5)."""
        p, lab, learned, shares = self.p, self.labelled(), self.learned(), self.pattern_shares()
        fn, feat, n_maps = self.framenet(), self.features(), len(lab.learn["y"])
        return (paper.taxonomy_comparisons(self.cnn_scores().f1, labelled.class_share(lab.labels, "Vertical"),
                                           reviewed=n_maps > 0, n_maps=n_maps, classes_note=lab.learn["note"],
                                           transfer=lab.transfer)
                + paper.fig2_comparisons(self.share_estimates(), learned, transfer=lab.transfer,
                                         rules={t: shares[("fine-tuned", t)]["rules"]["fractions"] for t in p.tasks})
                + paper.framenet_comparisons(len(fn.kept), len(fn.heads["heads"]),
                                             self.model.n_layers * self.model.n_heads, fn.top["mean"], fn.top["label"],
                                             fn.top.get("difference"))
                + paper.change_comparisons(self.layer_changes(), learned)
                + paper.feature_rows(feat["fine-tuned"], feat["pre-trained"], learned, n_resamples=p.n_resamples,
                                     seed=p.seed))

    @stage("paper vs this run", no_model_work)
    def comparisons(self) -> list[Comparison]:
        """Every row of the chapter: :meth:`table1_comparisons`, then :meth:`pattern_comparisons`."""
        return self.table1_comparisons() + self.pattern_comparisons()


@dataclass(frozen=True)
class DevData:
    """Each task's dev sample (at most its cap, :data:`DEV_SAMPLE_SEED`) and its batches."""

    sets: dict[str, GlueSplit]
    batches: dict[str, list[Batch]]


@dataclass(frozen=True)
class Baselines:
    """Each classifier's dev score (``table``), why a (task, seed) did not learn (``learned``: ``""`` when it did),
    the runs swept and each task's primary run (the first learned seed)."""

    table: pd.DataFrame
    learned: dict[tuple[str, int], str]
    runs: list[tuple[str, int]]
    main: dict[str, tuple[str, int]]


class DisablingPipeline(GluePipeline):
    """Chapter 5 (Kovaleva §4.6, §5): every head and every layer switched off, in every task's classifiers."""


    def data_files(self) -> list[Path]:
        """The dev files of the tasks whose heads and layers are switched off."""
        return self.glue_files(self.p.tasks, ("dev",))

    @stage("classifiers of every seed", costs.classifiers_cost)
    def classifiers(self) -> dict[tuple[str, int], LoadedModel]:
        return {(t, s): headstudy.classifier(self.model, t, self.recipe, s) for t in self.p.tasks
                for s in seeds_for(self.recipe, t, self.p.seeds)}

    @stage("dev samples", no_model_work)
    def dev_data(self) -> DevData:
        p, tok = self.p, self.model.tokenizer
        got = {task: headstudy.task_data(tok, task, "dev", disabling.dev_cap(p.dev_caps, task), DEV_SAMPLE_SEED,
                                         batch_size=p.batch_size, max_length=self.recipe["max_length"])
               for task in p.tasks}
        return DevData({t: g[0] for t, g in got.items()}, {t: g[1] for t, g in got.items()})

    @stage("dev baselines and the runs to sweep", no_model_work)  # Table 1's dev outputs, cached by chapter 4
    def baselines(self) -> Baselines:
        p = self.p
        table, learned = disabling.dev_baselines(self.classifiers(), max_length=self.recipe["max_length"],
                                                 n_resamples=p.n_resamples, seed=p.seed, caps=p.eval_caps)
        runs = disabling.runs_to_sweep(learned, include_unlearned=p.analyse_unlearned)
        return Baselines(table, learned, runs, disabling.primary_runs(runs, p.tasks, learned))

    def _sweep(self, kind: str) -> dict[tuple[str, int], SweepResult]:
        clfs, batches = self.classifiers(), self.dev_data().batches
        return {k: headstudy.switched_off(clfs[k], batches[k[0]], kind, "disable", sweeps.task_score_fn(k[0]))
                for k in self.baselines().runs}

    @stage("single-head and layer sweeps (§4.6, §5)", costs.sweeps_cost)
    def single_heads(self) -> dict[tuple[str, int], SweepResult]:
        """Every head disabled alone, in every swept run (:func:`headstudy.switched_off`, ``"single_heads"``)."""
        return self._sweep("single_heads")

    @stage("layer sweeps (§4.6)", no_model_work)  # counted in single_heads' cost
    def layers(self) -> dict[tuple[str, int], SweepResult]:
        """Every layer's heads disabled together, in every swept run."""
        return self._sweep("layers")

    def _primary(self, stage_result: dict[tuple[str, int], Any]) -> dict[str, Any]:
        """A per-run result of each task's primary run (:attr:`Baselines.main`), by task."""
        return {t: stage_result[k] for t, k in self.baselines().main.items()}

    @stage("which single heads' changes are significant (§4.6)", no_model_work)
    def significance(self) -> dict[str, pd.DataFrame]:
        """Per task, every head's change in its primary run with a paired bootstrap p-value, Holm-corrected
        (:func:`headstudy.paired_bootstrap`, :func:`headstudy.holm_table`)."""
        p = self.p
        return {t: headstudy.holm_table(headstudy.paired_bootstrap(r, t, n_resamples=p.n_resamples, seed=p.seed),
                                        alpha=p.alpha) for t, r in self._primary(self.single_heads()).items()}

    @stage("each swept run's effects, cross-fitted (§4.6)", no_model_work)
    def effects(self) -> dict[tuple[str, int], dict]:
        """Per swept run, the gains and losses the rows judge (:func:`disabling.sweep_effects`; the primary run's with
        its significance table)."""
        p, single, layers, main, sig = self.p, self.single_heads(), self.layers(), self.baselines().main, \
            self.significance()
        return {k: disabling.sweep_effects(single[k], layers[k], k[0], sig[k[0]] if main.get(k[0]) == k else None,
                                           n_resamples=p.n_resamples, seed=p.seed) for k in self.baselines().runs}

    @stage("do the seeds agree on the heads that hurt most (§4.6)", no_model_work)
    def seed_agreement(self) -> tuple[dict[str, pd.DataFrame], dict]:
        """Per task, the overlap of the ``top_k`` most harmful heads between its learned seeds
        (:func:`disabling.cross_seed_agreement`), and their summary (:func:`disabling.agreement_summary`)."""
        b, single = self.baselines(), self.single_heads()
        tables = {t: disabling.cross_seed_agreement({s: single[(u, s)].delta for (u, s) in b.runs
                                                     if u == t and not b.learned[(u, s)]}, self.p.top_k)
                  for t in b.main}
        return tables, disabling.agreement_summary(tables)

    @stage("word-matching heads among the most harmful (§5)", costs.match_cost)
    def word_matching(self) -> dict[str, dict]:
        """Per matched task, every head's word-matching share in its primary classifier and where the ``top_k``
        most harmful heads stand among them (:func:`word_match.hurting_heads_match`)."""
        p, b, clfs, batches = self.p, self.baselines(), self.classifiers(), self.dev_data().batches
        single = self._primary(self.single_heads())
        return {t: word_match.hurting_heads_match(clfs[b.main[t]], batches[t], single[t].delta, p.top_k)
                for t in p.match_tasks if t in b.main}

    @stage("the best head and layer tested on held-out dev examples (§4.6)", costs.held_out_cost)
    def held_out(self) -> dict[tuple[str, int], disabling.HeldOut]:
        """Each swept run's best head and best layer to disable, chosen on the dev sample, tested on dev examples
        outside it (:func:`disabling.held_out_test`); runs whose sweep scored the whole dev set have none, and their
        rows judge the cross-fitted gains of :func:`disabling.sweep_effects` instead."""
        p, clfs, single, layers = self.p, self.classifiers(), self.single_heads(), self.layers()
        out = {}
        for k in self.baselines().runs:
            task = k[0]
            data = disabling.held_out_data(self.model.tokenizer, task, disabling.dev_cap(p.dev_caps, task),
                                           disabling.dev_cap(p.held_out_caps, task), DEV_SAMPLE_SEED,
                                           batch_size=p.batch_size, max_length=self.recipe["max_length"])
            if data is not None:
                out[k] = disabling.held_out_test(clfs[k], single[k], layers[k], data[1], task,
                                                 sweeps.task_score_fn(task), n_resamples=p.n_resamples,
                                                 seed=p.seed)
        return out

    @stage("paper vs this run", no_model_work)
    def comparisons(self) -> list[Comparison]:
        """The chapter's comparison rows (:func:`paper.disabling_comparisons`) from the sweeps' effects, the word
        matching, the seeds' agreement and the held-out tests of the runs that learned."""
        p, b, match = self.p, self.baselines(), self.word_matching()
        main_effects, task_learned, seed_effects = disabling.verdict_inputs(self.effects(), b.learned, b.main, p.tasks)
        shared, shared_note = disabling.shared_estimate(self._primary(self.single_heads()), main_effects, list(match),
                                                        p.top_k, len(paper.PAPER_DISABLING["match_heads"]))
        return paper.disabling_comparisons(
            main_effects, task_learned,
            disabling.match_estimates(match, main_effects, p.top_k, n_resamples=p.n_resamples, seed=p.seed),
            p.top_k, p.profile, shared, shared_note, seed_effects=seed_effects, agreement=self.seed_agreement()[1],
            held_out=disabling.by_task({k: h for k, h in self.held_out().items() if not b.learned.get(k)}))
