"""Chapter 7 (Niven & Kao 2019) as a pipeline: the steps its notebook runs, one method a step.

The costs the plan adds up are in :mod:`attnbook.studies.niven_kao.costs`; the comparison rows are
:func:`attnbook.studies.niven_kao.paper.comparisons` of this pipeline's stages (:meth:`CuesPipeline.comparisons`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from attnbook.data import arct
from attnbook.data.arct import ArctItem
from attnbook.data.glove import load_glove
from attnbook.data.registry import data_path
from attnbook.engine.pipeline import Pipeline, no_model_work, stage
from attnbook.studies.niven_kao import costs, cues, pairwise, paper
from attnbook.studies.niven_kao import word_baselines as word_models
from attnbook.verdict import Comparison


@dataclass(frozen=True)
class Splits:
    """The ARCT files (``files[name]``, every file of :data:`attnbook.data.arct.FILES`), the claim map, and the
    items the runs use: the original train/dev/test capped by the chapter's sizes and the adversarial test set
    (negated claims and swapped warrants, kept in pairs)."""

    files: dict[str, list[ArctItem]]
    claim_map: dict[str, str]
    train: list[ArctItem]
    dev: list[ArctItem]
    test: list[ArctItem]
    test_adv: list[ArctItem]

    @property
    def original(self) -> list[ArctItem]:
        """Every item of the original train, dev and test files (the cue statistics' corpus)."""
        return self.files["train"] + self.files["dev"] + self.files["test"]


@dataclass(frozen=True)
class Adversarial:
    """The adversarial experiment's training and dev sets, its test set's two halves, and the runs per input."""

    train: list[ArctItem]
    dev: list[ArctItem]
    halves: dict[str, list[ArctItem]]
    runs: dict[str, pd.DataFrame]


class CuesPipeline(Pipeline):
    """Chapter 7 (Niven & Kao §2-4): the warrants' statistical cues, the model on partial inputs, the adversarial set."""


    def __init__(self, model, params):
        super().__init__(model, params)
        #: a cache, not a result: the frozen lower layers' states of every distinct input, computed once and read by
        #: every run of this pipeline when only the top layers train (:func:`attnbook.engine.pairwise.cache_lower_states`)
        self.lower_states: dict = {}

    def data_files(self) -> list[Path]:
        return [data_path("arct")]

    @property
    def seeds(self) -> list[int]:
        return list(range(self.p.seed, self.p.seed + self.p.n_seeds))

    @stage("ARCT splits", no_model_work)
    def splits(self) -> Splits:
        p = self.p
        files = {name: arct.load_arct(name) for name in arct.FILES}
        return Splits(files, arct.read_claim_map(), arct.take(files["train"], p.train_cap),
                      arct.take(files["dev"], p.eval_cap), arct.take(files["test"], p.eval_cap),
                      arct.take_paired(files["test-adv-negated"], p.eval_cap))

    @stage("the warrants' cues (§2)", no_model_work)
    def cues(self) -> pd.DataFrame:
        """Every unigram and bigram cue of the original warrants: applicability, productivity, coverage."""
        return cues.cue_statistics(self.splits().original)

    @stage("the 'not' cue by split", no_model_work)
    def not_cue(self) -> pd.DataFrame:
        f = self.splits().files
        return paper.not_cue_table({"train": f["train"], "dev": f["dev"], "test": f["test"],
                                    "all": self.splits().original})

    @stage("the adversarial set's transforms and cues (§4)", no_model_work)
    def adversarial_cues(self) -> tuple[dict, pd.DataFrame]:
        """How the shipped adversarial files agree with our own negation and swap, and the adversarial test set's
        cue statistics."""
        s = self.splits()
        return cues.transform_agreement(s.files, s.claim_map), cues.cue_statistics(s.files["test-adv-negated"])

    def _runs(self, train, dev, tests, inputs: str, cfg) -> pd.DataFrame:
        return pairwise.run_seeds(self.model, train, dev, tests, inputs=inputs, seeds=self.seeds, cfg=cfg,
                                  max_length=self.p.max_length, progress=False, memo=self.lower_states,
                                  workers=self.p.seed_workers, model=self.p.model)

    @stage("BERT on the full inputs and the probes' partial inputs", costs.runs_cost)
    def runs(self) -> dict[str, pd.DataFrame]:
        """``runs[inputs]``: one row per seed, for the full input and each probe's partial input (§3)."""
        s, cfg = self.splits(), pairwise.config_from_params(self.p)
        out = {"full": self._runs(s.train, s.dev, {"test": s.test, "test_adv": s.test_adv}, "full", cfg)}
        for inputs in self.p.probes:
            if inputs != "full":
                out[inputs] = self._runs(s.train, s.dev, {"test": s.test}, inputs, cfg)
        return out

    @stage("word-vector baselines", no_model_work)  # GloVe models: seconds beside the encoder's runs
    def words(self) -> dict[str, Any]:
        """The bag-of-vectors and BiLSTM baselines on GloVe (empty unless ``word_baselines``)."""
        if not self.p.word_baselines:
            return {}
        s = self.splits()
        return word_models.run_word_baselines(load_glove(), s.train, s.dev, {"test": s.test, "test_adv": s.test_adv},
                                              self.p)

    @stage("adversarial runs", costs.adversarial_cost)
    def adversarial(self) -> Adversarial:
        """§4: trained on the swapped training set, scored on the adversarial test set whole and in its halves."""
        p, s = self.p, self.splits()
        cfg = pairwise.config_from_params(p, epochs=p.adversarial_epochs)
        train = arct.take_paired(s.files["train-swapped"], p.train_cap)
        dev = arct.take_paired(s.files["dev-adv-negated"], p.eval_cap)
        halves = cues.adversarial_halves(s.test_adv)
        runs = {inputs: self._runs(train, dev, {"test": s.test_adv, **halves}, inputs, cfg) for inputs in p.adversarial}
        return Adversarial(train, dev, halves, runs)

    @stage("word-vector baselines, adversarial", no_model_work)  # as `words`
    def words_adversarial(self) -> dict[str, Any]:
        if not self.p.word_baselines:
            return {}
        a, s = self.adversarial(), self.splits()
        return word_models.run_word_adversarial(load_glove(), a.train, a.dev, {"test": s.test_adv, **a.halves}, self.p)

    @stage("paper vs this run", no_model_work)
    def comparisons(self) -> list[Comparison]:
        """The chapter's comparison rows from every stage (:func:`paper.comparisons`)."""
        s, a = self.splits(), self.adversarial()
        agreement, adversarial_cues = self.adversarial_cues()
        return paper.comparisons(
            not_rows=self.not_cue(), bert=self.runs(), train=s.train, test=s.test, adversarial=a.runs,
            adv_train=a.train, test_adv=s.test_adv, words=self.words(), agreement=agreement,
            adversarial_cues=adversarial_cues, model_name=self.model.name, dev=s.dev,
            words_adversarial=self.words_adversarial())
