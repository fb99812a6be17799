"""Chapter 02 (Clark et al. §4-5: heads as parsers, coreference, probing classifiers) in the three profiles.

One ``register_chapter`` call; parameters are grouped by section (keep the groups when adding keys).
See :mod:`attnbook.studies.clark.syntax` and :mod:`attnbook.studies.clark.probes` for what each parameter means.

Quick-profile cost, measured on the embedded model with one torch thread (CPU seconds):
§4.2 on all 2001 UD dev sentences ≈ 12 s; §4.3 on the 277 windows of the 30 GUM dev documents ≈ 10 s; §5 probes (maps of 2000 train + 2001 dev sentences
for the model and its random-init copy ≈ 65 s, five probes x 8 epochs ≈ 25 s) ≈ 90 s.
Peak resident memory of the whole run ≈ 1.9 GB (train maps 170 MB + dev 77 MB float16, padded batches, model).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnbook.chapters.params import register_chapter
from attnbook.chapters.profiles import PAPER_MODEL
from attnbook.chapters.spec import CLARK, Chapter, count_text
from attnbook.core.parameters import Parameters


@dataclass(frozen=True, kw_only=True)
class ProbingParams(Parameters):
    """Chapter 2's parameters (what each means: the module docstring); one instance per profile below."""

    model: str
    seed: int
    max_tokens: int
    batch_size: int
    syntax_split: str
    syntax_sentences: int
    exclude_punct: bool
    coref_split: str
    coref_max_docs: int | None
    coref_first_only: bool
    coref_max_tokens: int
    coref_batch_size: int
    probe_train_sentences: int
    probe_dev_sentences: int
    probe_epochs: int
    probe_batch_size: int
    probe_hidden: int
    word_vectors: str
    probe_random_init: bool


register_chapter(Chapter(
    "02_clark_probing", "Probing heads (Clark §4-5)", CLARK,
    datasets=("ud_ewt", "coref", "glove"),
    pipeline="attnbook.studies.clark.pipeline:ProbingPipeline",
    sizes=lambda p: (
        f"UD English EWT {p.syntax_split}: {count_text(p.syntax_sentences)} sentences for single heads; probes trained on "
        f"{count_text(p.probe_train_sentences)} and scored on {count_text(p.probe_dev_sentences)} sentences; GUM coreference "
        f"{p.coref_split}: {count_text(p.coref_max_docs, 'documents')}"),
    differs=lambda p, r: [
        "UD English EWT instead of the WSJ Penn Treebank with Stanford Dependencies",
        "GUM/OntoGUM instead of CoNLL-2012 for coreference",
        "GloVe 6B 50d (filtered) word vectors in the probes" if p.word_vectors == "glove" else
        "no pre-trained word vectors in the probes"],
    profiles={
        "smoke": ProbingParams(
            # --- shared ---
            model="embedded", seed=0, max_tokens=64, batch_size=8,
            # --- §4.2 dependency syntax (Table 1): UD EWT split, sentences (first n), punctuation ---
            syntax_split="dev", syntax_sentences=40, exclude_punct=False,
            # --- §4.3 coreference (Table 2): GUM/OntoGUM split, documents, windows ---
            coref_split="dev", coref_max_docs=2, coref_first_only=False, coref_max_tokens=64, coref_batch_size=8,
            # --- §5 probing classifiers (Table 3) ---
            probe_train_sentences=60, probe_dev_sentences=40, probe_epochs=2, probe_batch_size=16,
            probe_hidden=16, word_vectors="glove", probe_random_init=True,
        ),
        "quick": ProbingParams(
            # --- shared ---
            model="embedded", seed=0, max_tokens=128, batch_size=32,
            # --- §4.2 dependency syntax (Table 1): all 2001 UD dev sentences ---
            syntax_split="dev", syntax_sentences=2001, exclude_punct=False,
            # --- §4.3 coreference (Table 2): all 30 GUM dev documents, every 128-piece window ---
            coref_split="dev", coref_max_docs=None, coref_first_only=False, coref_max_tokens=128,
            coref_batch_size=16,
            # --- §5 probing classifiers (Table 3): train maps ~200 MB float16 for 2000 sentences x 72 heads ---
            probe_train_sentences=2000, probe_dev_sentences=2001, probe_epochs=8, probe_batch_size=32,
            probe_hidden=64, word_vectors="glove", probe_random_init=True,
        ),
        "paper": ProbingParams(
            # --- shared ---
            model=PAPER_MODEL, seed=0, max_tokens=128, batch_size=32,
            # --- §4.2 dependency syntax (Table 1) ---
            syntax_split="dev", syntax_sentences=2001, exclude_punct=False,
            # --- §4.3 coreference (Table 2): first 128-piece window of each document (Clark footnote 3) ---
            coref_split="dev", coref_max_docs=None, coref_first_only=True, coref_max_tokens=128,
            coref_batch_size=16,
            # --- §5 probing classifiers (Table 3): all of UD train (~2.5 GB float16 maps for 144 heads) ---
            probe_train_sentences=12544, probe_dev_sentences=2001, probe_epochs=20, probe_batch_size=32,
            probe_hidden=64, word_vectors="glove", probe_random_init=True,
        ),
    },
))
