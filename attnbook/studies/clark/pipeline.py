"""Chapters 1-3 (Clark et al. 2019) as pipelines: the steps each chapter's notebook runs, one method a step.

Each class is one chapter over one model and the chapter's resolved parameters (:class:`attnbook.engine.pipeline.
Pipeline`); the notebook calls its stages in the order of the story, the head atlas and the cross-model chapter
call the same stages. The costs the plan adds up are in :mod:`attnbook.studies.clark.costs`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnbook.data import gum
from attnbook.data.conllu import Sentence, load_ud, ud_path
from attnbook.data.glove import GLOVE_FILE, load_glove
from attnbook.data.registry import data_path
from attnbook.data.wiki import source_files
from attnbook.engine.inputs import Encoded
from attnbook.engine.pipeline import Pipeline, no_model_work, stage
from attnbook.verdict import Comparison
from attnbook.studies.clark import clusters, coref, costs, distances, embedding, gradients, paper, probes, surface, syntax
from attnbook.studies.clark.clusters import Clustering, GroupTest
from attnbook.studies.clark.segments import clark_segments

@dataclass(frozen=True)
class MLMHead:
    """The MLM head behind §3.2's gradients (the model's own, or fitted) and how well it predicts masked pieces."""

    fit: gradients.MLMHeadFit
    quality: gradients.MLMQuality


class SurfacePipeline(Pipeline):
    """Chapter 1 (Clark §3): surface statistics of every head on WikiText-2 segments, and the MLM loss's gradient
    with respect to attention."""


    def data_files(self) -> list[Path]:
        return list(source_files())

    @stage("segments", costs.segments_cost)
    def segments(self) -> list[Encoded]:
        """The analysed WikiText-2 segments (:func:`attnbook.studies.clark.segments.clark_segments`)."""
        p = self.p
        return clark_segments(self.model.tokenizer, p.n_segments, p.max_tokens, seed=p.seed)

    @stage("surface statistics (§3)", costs.surface_cost)
    def statistics(self) -> dict[str, np.ndarray]:
        """Every head's surface statistics, ``stats[name][layer, head]`` (:func:`surface.surface_statistics`)."""
        return surface.surface_statistics(self.model, self.segments(), batch_size=self.p.batch_size)

    @stage("MLM head", costs.mlm_head_cost)
    def mlm_fit(self) -> gradients.MLMHeadFit:
        """The model's MLM head, or one fitted on segments disjoint from the analysed ones (:func:`gradients.mlm_head`)."""
        p = self.p
        return gradients.mlm_head(self.model, p.n_segments, steps=p.mlm_fit_steps, batch_size=p.mlm_fit_batch,
                                  max_tokens=p.max_tokens, seed=p.seed, fit_segments=p.mlm_fit_segments,
                                  lr=p.mlm_fit_lr, eval_every=p.mlm_eval_every)

    @stage("MLM head's held-out accuracy", no_model_work)
    def mlm_head(self) -> MLMHead:
        """:meth:`mlm_fit` with its held-out accuracy beside a constant predictor's (:func:`gradients.mlm_quality`)."""
        p, fit = self.p, self.mlm_fit()
        quality = gradients.mlm_quality(self.model, fit, p.n_segments, steps=p.mlm_fit_steps,
                                        max_tokens=p.max_tokens, seed=p.seed, fit_segments=p.mlm_fit_segments)
        return MLMHead(fit, quality)

    @stage("attention gradients (§3.2)", costs.gradients_cost)
    def gradients(self) -> dict[str, np.ndarray]:
        """|dL/d attention| of the first ``grad_segments`` segments under the MLM loss, ``grads[name][layer, head]``."""
        p = self.p
        return gradients.cached_attention_gradients(self.model, self.mlm_head().fit.head,
                                                    self.segments()[: p.grad_segments],
                                                    batch_size=max(1, p.batch_size // 2), seed=p.seed)

    @stage("paper vs this run", no_model_work)
    def comparisons(self) -> list[Comparison]:
        """The chapter's comparison rows: §3's surface claims and §3.2's gradients
        (:func:`paper.surface_comparison`), then the MLM head's quality (:func:`paper.mlm_head_rows`)."""
        quality = self.mlm_head().quality
        return (paper.surface_comparison(self.statistics(), self.gradients(), mlm=quality, seed=self.p.seed)
                + paper.mlm_head_rows(quality))


@dataclass(frozen=True)
class CorefRun:
    """§4.3's inputs and results: the GUM documents, their windows, every head's accuracy and the baselines."""

    docs: list
    windows: list
    heads: coref.CorefHeadAccuracy
    baselines: dict


class ProbingPipeline(Pipeline):
    """Chapter 2 (Clark §4-5): syntactic and coreference heads, and probing classifiers built on attention."""


    def sentences(self) -> list[Sentence]:
        """§4.2's UD sentences (the first ``syntax_sentences`` of ``syntax_split``)."""
        return load_ud(self.p.syntax_split, self.p.syntax_sentences)

    def data_files(self) -> list[Path]:
        p = self.p
        glove = [data_path("glove", GLOVE_FILE)] if p.word_vectors == "glove" else []
        return [ud_path(p.syntax_split), *gum.split_files(p.coref_split, p.coref_max_docs), ud_path("train"),
                ud_path("dev"), *glove]

    @stage("syntactic heads (§4.2)", costs.syntax_cost)
    def syntax(self) -> syntax.HeadAccuracy:
        """Every head's accuracy at each UD relation, both directions (:func:`syntax.evaluate_heads`)."""
        p = self.p
        return syntax.evaluate_heads(self.model, self.sentences(), max_tokens=p.max_tokens,
                                     batch_size=p.batch_size, exclude_punct=p.exclude_punct)

    @stage("coreference heads (§4.3)", costs.coref_cost)
    def coref(self) -> CorefRun:
        """Every head's antecedent accuracy on GUM's windows, and the rule baselines (:func:`coref.evaluate_heads`)."""
        p = self.p
        docs = gum.load_split(p.coref_split, p.coref_max_docs)
        wins = coref.windows(docs, self.model.tokenizer, p.coref_max_tokens, first_only=p.coref_first_only)
        return CorefRun(docs, wins, coref.evaluate_heads(self.model, wins, p.coref_batch_size), coref.baselines(wins))

    @stage("attention-based probes (§5)", costs.probes_cost)
    def probes(self) -> dict:
        """§5's probes trained on UD train sentences and scored on dev (:func:`probes.cached_run_probes`)."""
        p = self.p
        glove = load_glove() if p.word_vectors == "glove" else None
        return probes.cached_run_probes(
            self.model, load_ud("train", p.probe_train_sentences), load_ud("dev", p.probe_dev_sentences),
            glove=glove, word_vectors=p.word_vectors, max_tokens=p.max_tokens, batch_size=p.batch_size,
            epochs=p.probe_epochs, probe_batch_size=p.probe_batch_size, hidden=p.probe_hidden,
            exclude_punct=p.exclude_punct, random_init=p.probe_random_init, seed=p.seed)

    @stage("paper vs this run", no_model_work)
    def comparisons(self) -> list[Comparison]:
        """The chapter's comparison rows: Table 1's syntactic heads, Table 2's coreference heads, Table 3's probes."""
        seed, co = self.p.seed, self.coref()
        return (paper.syntax_comparison(self.syntax(), seed=seed) + paper.coref_comparison(co.heads, co.baselines,
                                                                                            seed=seed)
                + paper.probe_comparison(self.probes(), seed=seed))


@dataclass(frozen=True)
class Behaviours:
    """What each head does by chapters 1-2's measures (:func:`clusters.head_behaviours`): the UD sentences and
    their heads' accuracy, the best head per relation, each head's list of behaviours (layer-major)."""

    sentences: list
    accuracy: syntax.HeadAccuracy
    syntax_best: dict[str, str]
    behaviours: list[list[str]]


@dataclass(frozen=True)
class ClusterChoice:
    """§6's average-linkage clustering and the silhouette of each number of clusters tried."""

    clustering: Clustering
    silhouettes: dict[int, float]


class ClusteringPipeline(Pipeline):
    """Chapter 3 (Clark §6): distances between heads' attention, their picture and their clusters."""


    def __init__(self, model, params, segments: list[Encoded] | None = None):
        """``segments``: chapter 1's, when the caller has them and they were drawn with the same size, length and
        seed as this chapter's (the head atlas)."""
        super().__init__(model, params, given=None if segments is None else {"segments": segments})

    def data_files(self) -> list[Path]:
        return [*source_files(), ud_path(self.p.syntax_split)]

    @stage("segments", no_model_work)  # their encoding is counted in distances_cost
    def segments(self) -> list[Encoded]:
        p = self.p
        return clark_segments(self.model.tokenizer, p.n_segments, p.max_tokens, seed=p.seed)

    @stage("head distances (§6)", costs.distances_cost)
    def distances(self) -> dict[str, np.ndarray]:
        """Mean Jensen-Shannon divergence between every pair of heads (:func:`distances.measure_head_distances`)."""
        p = self.p
        return distances.measure_head_distances(self.model, self.segments(), smoothing=p.smoothing,
                                                query_fraction=p.query_fraction, seed=p.seed,
                                                batch_size=p.batch_size)

    @stage("head behaviours (chapters 1-2's measures)", no_model_work)
    def behaviours(self) -> Behaviours:
        """Each head's behaviours from chapter 1's statistics and chapter 2's syntactic heads, both read back from
        their caches (:func:`surface.surface_statistics`, :func:`syntax.evaluate_heads`)."""
        p = self.p
        stats = surface.surface_statistics(self.model, self.segments(), batch_size=p.batch_size)
        ud = load_ud(p.syntax_split, p.syntax_sentences)
        accuracy = syntax.evaluate_heads(self.model, ud, max_tokens=p.syntax_max_tokens,
                                         batch_size=p.syntax_batch_size, exclude_punct=p.exclude_punct,
                                         progress=False)
        best = clusters.syntax_best_heads(accuracy, margin=p.syntax_margin)
        return Behaviours(ud, accuracy, best, clusters.head_behaviours(stats, best, threshold=p.behaviour_threshold,
                                                                       broad_quantile=p.broad_quantile))

    @stage("clusters (§6)", no_model_work)
    def clusters(self) -> ClusterChoice:
        """Average-linkage clusters of the heads, their number chosen by silhouette unless fixed
        (:func:`clusters.choose_clusters`)."""
        clustering, scores = clusters.choose_clusters(self.distances()["js_mean"], self.model.n_layers,
                                                      self.model.n_heads, n_clusters=self.p.n_clusters,
                                                      k_range=self.p.k_range)
        return ClusterChoice(clustering, scores)

    @stage("the heads on a plane (§6, Fig. 6)", no_model_work)
    def embedding(self) -> embedding.MDSResult:
        """The heads placed by multidimensional scaling of their distances, oriented by layer
        (:func:`embedding.mds_embedding`)."""
        L, H = self.model.n_layers, self.model.n_heads
        return embedding.mds_embedding(self.distances()["js_mean"], seed=self.p.seed, n_init=self.p.mds_n_init,
                                       orient_by=clusters.layer_labels(L, H))

    @stage("heads of one layer are close: permutation test (§6)", no_model_work)
    def layer_test(self) -> GroupTest:
        """Are heads of the same layer closer than random pairs (:func:`clusters.layer_permutation_test`)?"""
        return clusters.layer_permutation_test(self.distances()["js_mean"], self.model.n_layers, self.model.n_heads,
                                               n_permutations=self.p.n_permutations, seed=self.p.seed)

    @stage("heads of one behaviour are close: permutation test (§6)", no_model_work)
    def behaviour_test(self) -> GroupTest | None:
        """Are heads with the same behaviour closer than random pairs (:func:`clusters.behaviour_test`; ``None``
        when no behaviour has heads to compare)?"""
        return clusters.behaviour_test(self.distances()["js_mean"], self.behaviours().behaviours,
                                       n_permutations=self.p.n_permutations, seed=self.p.seed)

    @stage("paper vs this run", no_model_work)
    def comparisons(self) -> list[Comparison]:
        """The chapter's comparison rows (:func:`paper.clustering_comparison`), their intervals over bootstrap
        resamples of the groups of segments (:func:`distances.resampled_distances`)."""
        p, arrays = self.p, self.distances()
        boot = distances.resampled_distances(arrays, paper.N_RESAMPLES_CLUSTERS, seed=p.seed)
        return paper.clustering_comparison(
            self.layer_test(), self.clusters().clustering, self.embedding(), self.behaviour_test(), resampled=boot,
            head_behaviours=self.behaviours().behaviours, n_groups=distances.n_groups(arrays),
            k_range=p.k_range if p.n_clusters == "auto" else p.n_clusters, n_segments=int(arrays["n_examples"]))
