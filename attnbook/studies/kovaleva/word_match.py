"""Kovaleva et al. §5: heads that attend from a word piece to the same piece in the other sentence.

For STS-B and RTE the paper finds, by inspection, that the heads whose disabling hurts most attend
"from a word to the same word in the other sentence". :func:`word_match_shares` measures that
pattern for every head: the share of attention that goes from a piece to its copies in the
other sentence of the pair, averaged over the pieces that have a copy. :func:`hurting_heads_match`
places the heads whose disabling hurts most among all heads by that share.

Which sentence a piece belongs to is its segment id (``token_type_ids``) where the tokenizer gives segment ids
(BERT, ALBERT, ELECTRA); a tokenizer without them (RoBERTa, XLM-R, DistilBERT, MPNet, ModernBERT) frames the pair
with separators (``<s> a </s></s> b </s>``), and the second sentence starts after the first run of separators
(:func:`segments_from_separators`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.engine.extract import stream_batches
from attnbook.engine.inputs import Batch
from attnbook.stats import Estimate, bootstrap_counts, percentile_interval
from attnbook.studies.heads_off.effects import extreme_heads


def cross_sentence_matches(
    input_ids: torch.Tensor,
    token_type_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    skip_ids: Iterable[int] = (),
) -> torch.Tensor:
    """``match[batch, query, key]``: key is the same word piece as query, in the *other* sentence.

    Both tokens must be real (``attention_mask``), lie in different segments (``token_type_ids``)
    and not be in ``skip_ids`` (special tokens, punctuation).
    """
    ids = input_ids
    real = attention_mask.bool()
    if skip_ids:
        skip = torch.as_tensor(sorted(set(int(i) for i in skip_ids)), dtype=ids.dtype, device=ids.device)
        real = real & ~torch.isin(ids, skip)
    same = ids[:, :, None] == ids[:, None, :]
    other = token_type_ids[:, :, None] != token_type_ids[:, None, :]
    return same & other & real[:, :, None] & real[:, None, :]


def segments_from_separators(input_ids: torch.Tensor, sep_ids: Iterable[int]) -> torch.Tensor:
    """``segment[batch, seq]``: 0 up to and including the first run of separator tokens (``sep_ids``), 1 after it
    (``[CLS] a [SEP] b [SEP]`` and ``<s> a </s></s> b </s>`` alike); all 0 for a row without a separator."""
    seps = torch.as_tensor(sorted({int(i) for i in sep_ids}), dtype=input_ids.dtype, device=input_ids.device)
    is_sep = torch.isin(input_ids, seps)
    after_first = (is_sep.cumsum(1) > 0) & ~is_sep
    return (after_first.cumsum(1) > 0).to(torch.long)


def segment_ids(batch: Batch, sep_ids: Iterable[int] = ()) -> torch.Tensor:
    """The sentence of every piece of a batch of pairs: its ``token_type_ids`` when they tell the sentences apart,
    else :func:`segments_from_separators` (tokenizers without segment ids)."""
    types = batch.token_type_ids
    if types is not None and bool((types != 0).any()):
        return types
    sep_ids = tuple(sep_ids)
    if not sep_ids:
        raise ParameterError("word matching needs sentence pairs: segment ids (token_type_ids) or the tokenizer's "
                             "separator ids to find where the second sentence starts")
    return segments_from_separators(batch.input_ids, sep_ids)


@dataclass
class WordMatchShare:
    """Reducer of Kovaleva §5: per head, the attention a word piece gives to its copies in the other sentence.

    Over every query token that has at least one copy in the other sentence, ``share[layer, head]``
    is the mean of ``Σ_{key: copy} α[query, key]``; ``chance`` is the same mean under uniform
    attention over the real tokens (copies / real length), the level a head with no preference reaches.
    As a reducer of the engine (:func:`attnbook.engine.extract.stream_batches`) it finds the copies in
    each batch itself, never counting the pieces in ``skip_ids``. It also keeps each input's totals
    (``unit_mass[input, layer, head]``, ``unit_queries[input]``, zeros for an input without copies) in the order
    the inputs were seen, so the share can be bootstrapped over the inputs with the same draws as a sweep over
    the same batches (:func:`match_estimate`).
    """

    skip_ids: tuple[int, ...] = ()
    sep_ids: tuple[int, ...] = ()
    total: np.ndarray | None = None
    uniform: float = 0.0
    n_queries: int = 0
    unit_mass: list = field(default_factory=list)
    unit_queries: list = field(default_factory=list)

    def update(self, attn: torch.Tensor, batch: Batch) -> None:
        """``attn[batch, layer, head, query, key]`` of a batch of sentence pairs (sentences told apart by
        :func:`segment_ids`)."""
        match = cross_sentence_matches(batch.input_ids, segment_ids(batch, self.sep_ids), batch.attention_mask,
                                       self.skip_ids)
        self.add(attn, match, batch.attention_mask)

    def add(self, attn: torch.Tensor, match: torch.Tensor, attention_mask: torch.Tensor) -> None:
        """``attn[batch, layer, head, query, key]``, ``match[batch, query, key]`` (bool),
        ``attention_mask[batch, key]``."""
        m = match.to(attn.dtype)
        mass = torch.einsum("blhqk,bqk->blhq", attn, m)  # attention to copies, per query
        has = match.any(-1)  # [batch, query]
        per = (mass * has[:, None, None, :].to(attn.dtype)).sum(3).double().cpu().numpy()  # [batch, layer, head]
        self.unit_mass.extend(per.astype(np.float32))
        self.unit_queries.extend(has.sum(-1).cpu().numpy().astype(np.int64))
        summed = per.sum(0)
        self.total = summed if self.total is None else self.total + summed
        length = attention_mask.sum(-1, keepdim=True).to(torch.float64)  # [batch, 1]
        self.uniform += float((m.sum(-1).double() / length)[has].sum())
        self.n_queries += int(has.sum())

    def result(self) -> dict:
        if self.total is None or self.n_queries == 0:
            raise EmptyDataError("no token has a copy in the other sentence; nothing to measure")
        return {"share": self.total / self.n_queries, "chance": self.uniform / self.n_queries,
                "n_queries": self.n_queries, "unit_mass": np.stack(self.unit_mass),
                "unit_queries": np.asarray(self.unit_queries)}


def skip_token_ids(tokenizer: Any) -> list[int]:
    """Ids never counted as word matches: the special tokens and single-character punctuation pieces."""
    import string

    ids = set(int(i) for i in getattr(tokenizer, "all_special_ids", []))
    vocab = tokenizer.get_vocab()
    ids.update(int(vocab[c]) for c in string.punctuation if c in vocab)
    return sorted(ids)


def separator_ids(tokenizer: Any) -> list[int]:
    """The ids of the tokenizer's separator token (``[SEP]``, ``</s>``), which frame the sentences of a pair."""
    sep = getattr(tokenizer, "sep_token_id", None)
    return [] if sep is None else [int(sep)]


def word_match_shares(model: Any, batches: Sequence[Batch], skip_ids: Iterable[int] = (),
                      sep_ids: Iterable[int] = ()) -> dict:
    """:class:`WordMatchShare` of ``model`` (a :class:`~attnbook.engine.models.LoadedModel` or a torch module
    with eager attention) over ``batches`` of sentence pairs, run by the engine (``sep_ids``: the separators that
    tell the sentences apart when the batches have no segment ids)."""

    return stream_batches(model, batches, [WordMatchShare(tuple(skip_ids), tuple(sep_ids))],
                          desc="word matching")[0]


def hurting_heads_match(classifier: Any, batches: Sequence[Batch], delta: np.ndarray, top_k: int) -> dict:
    """Kovaleva §5 for one task: the word-matching share of every head of the fine-tuned ``classifier`` and
    where the ``top_k`` heads whose disabling hurts most (smallest ``delta[layer, head]``) stand among them.

    Returns ``share[layer, head]``, ``chance``, ``n_queries``, ``hurting`` (those heads, most harmful first,
    0-based), ``percentiles`` (head label -> share of heads whose share is at most that head's, in the order
    of ``hurting``) and ``top_matching`` (the head with the largest share).
    """

    wm = word_match_shares(classifier.model, batches, skip_token_ids(classifier.tokenizer),
                           separator_ids(classifier.tokenizer))
    share = wm["share"]
    hurting = extreme_heads(delta, top_k, largest=False)
    return {**wm, "hurting": hurting,
            "percentiles": {head_label(*lh): float(np.mean(share <= share[lh])) for lh in hurting},
            "top_matching": extreme_heads(share, 1, largest=True)[0]}


def match_estimate(match: Mapping[str, Any], resampled: np.ndarray, top_k: int, *, n_resamples: int = 2000,
                   seed: int = 0) -> Estimate:
    """The mean percentile (among all heads, by word-matching share) of the ``top_k`` heads whose disabling hurts
    most, with its 95% bootstrap interval over the inputs: in every resample the heads are chosen again from the
    resampled changes (``resampled[resample, layer, head]``,
    :func:`attnbook.studies.kovaleva.disabling.resampled_deltas`, same ``seed`` and examples) and the shares are
    measured on the same draws of inputs."""

    mass = np.asarray(match["unit_mass"], dtype=np.float64)  # [input, layer, head]
    queries = np.asarray(match["unit_queries"], dtype=np.float64)
    counts = bootstrap_counts(len(mass), n_resamples, seed).astype(np.float64)
    if len(counts) != len(resampled):
        raise ParameterError(f"{len(counts)} resamples of the shares but {len(resampled)} of the changes")
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (counts @ mass.reshape(len(mass), -1)) / (counts @ queries)[:, None]  # [resample, head]
    hurt = np.argsort(resampled.reshape(len(resampled), -1), axis=1, kind="stable")[:, :top_k]
    picked = np.take_along_axis(share, hurt, axis=1)  # [resample, top_k]
    pct = (share[:, None, :] <= picked[:, :, None]).mean(2).mean(1)
    value = float(np.mean(list(match["percentiles"].values())))
    lo, hi = percentile_interval(pct[~np.isnan(pct)])
    return Estimate(value, float(lo), float(hi), int(len(mass)), "dev examples (heads re-chosen per resample)")


def match_numbers(match: Mapping[str, Any]) -> dict:
    """What the chapter records of :func:`hurting_heads_match` (shares to
    5 decimals, chance, tokens with a copy, the hurting heads sorted, their percentiles, the top matching head)."""
    return {"share": match["share"].round(5).tolist(), "chance": match["chance"], "n_queries": match["n_queries"],
            "hurting_heads": sorted(head_label(*lh) for lh in match["hurting"]), "percentiles": match["percentiles"],
            "top_matching_head": head_label(*match["top_matching"])}


def word_match_rows(task: str, match: Mapping[str, Any], delta: np.ndarray) -> list[dict]:
    """Table rows of §5 for one task: each hurting head's change when disabled, its word-matching share and its
    percentile among all heads."""
    return [{"task": task, "head": head_label(*lh), "change when disabled": delta[lh],
             "word-matching share": match["share"][lh], "percentile among heads": match["percentiles"][head_label(*lh)]}
            for lh in match["hurting"]]


def match_text(task: str, match: Mapping[str, Any]) -> str:
    """:func:`hurting_heads_match` of one task in one sentence: tokens with a copy, chance, the strongest
    word-matching head."""
    top = head_label(*match["top_matching"])
    return (f"{task}: {match['n_queries']} tokens with a copy in the other sentence; uniform attention would give "
            f"{match['chance']:.3f}; strongest word-matching head {top} ({match['share'][match['top_matching']]:.3f})")


def all_numbers(matches: Mapping[str, Mapping[str, Any]]) -> dict[str, dict]:
    """:func:`match_numbers` of every task, under the results file's keys (``word_match_<task>``)."""
    return {f"word_match_{t}": match_numbers(m) for t, m in matches.items()}


def match_table(matches: Mapping[str, Mapping[str, Any]], deltas: Mapping[str, np.ndarray]):
    """The §5 table of every task (:func:`word_match_rows`), formatted for the page; ``None`` without a task."""
    import pandas as pd

    rows = [r for t, m in matches.items() for r in word_match_rows(t, m, deltas[t])]
    if not rows:
        return None
    return pd.DataFrame(rows).style.format({"change when disabled": "{:+.2f}", "word-matching share": "{:.3f}",
                                            "percentile among heads": "{:.0%}"}).hide(axis="index")
