"""Analyses of switched-off heads shared by the Kovaleva (§4.6, §5) and Michel (§3-§4) chapters.

The sweeps themselves live in :mod:`attnbook.engine.sweeps`, :mod:`attnbook.studies.michel.importance` and
:mod:`attnbook.engine.pruning`; this module turns their outputs into the chapters' numbers:

* :func:`dev_batches` — a GLUE dev split as length-sorted :class:`~attnbook.engine.sweeps.Batch` es;
* :func:`paired_bootstrap` — every configuration of a sweep against the baseline on the *task's own
  metric* (accuracy, F1, Pearson r, x 100), all resamples at once as weighted metrics, with a
  percentile interval, a percentile p-value, a normal-approximation p-value (no floor at
  ``2/(R+1)``, so a Holm correction over 72 or 144 heads can be passed) and McNemar's exact test
  where the metric is accuracy; :func:`holm_table` adds the corrected p-values;
* :func:`random_head_effect` — Kovaleva §4.6: the mean change when a random head is disabled;
* :func:`cross_sentence_matches` / :class:`WordMatchShare` — Kovaleva §5: how much of a head's
  attention goes from a word piece to the *same* piece in the other sentence of the pair;
* :func:`rank_agreement` — Pearson, Spearman and top-k overlap of two ``values[layer, head]``
  (Michel §3.4's across-dataset correlation; Kovaleva's disabling vs Michel's masking);
* :func:`largest_safe_share` — Michel §4.2: the largest share of heads pruned with at most
  ``tolerance`` points lost at every step up to it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.data.glue import GlueSplit, TaskSpec, task_spec
from attnbook.data.glue_metrics import TABLE1_METRIC
from attnbook.engine.sweeps import Batch, SweepResult, adjust_pvalues, bootstrap_counts, classification_batches, mcnemar_exact

# ----------------------------------------------------------------------------- data


def dev_batches(tokenizer: Any, split: GlueSplit, *, batch_size: int = 32, max_length: int = 128) -> list[Batch]:
    """``split`` tokenised as the fine-tuned classifier saw it (``[CLS] a [SEP] b [SEP]``), batches of
    similar length (examples sorted by length, so little padding); the gold labels travel with them."""
    if not len(split):
        raise EmptyDataError(f"{split.task.name} {split.split} holds no examples")
    spec = split.task
    lengths = [len(e.text_a) + len(e.text_b or "") for e in split.examples]
    order = np.argsort(lengths, kind="stable")
    exs = [split.examples[i] for i in order]
    labels = np.asarray([e.label for e in exs], dtype=np.float32 if spec.is_regression else np.int64)
    return classification_batches(
        tokenizer,
        [e.text_a for e in exs],
        [e.text_b or "" for e in exs] if spec.is_pair else None,
        labels,
        batch_size=batch_size,
        max_length=max_length,
    )


def halves(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint, seeded random halves of ``range(n)`` (sorted index arrays)."""
    if n < 2:
        raise ParameterError(f"need at least 2 examples to split in halves, got {n}")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[: n // 2]), np.sort(perm[n // 2 :])


def subset_batches(batches: Sequence[Batch], keep: np.ndarray) -> list[Batch]:
    """The examples ``keep`` (indices into the concatenation of ``batches``), batch structure kept."""
    keep = set(int(i) for i in keep)
    out, offset = [], 0
    for b in batches:
        rows = [i for i in range(b.size) if offset + i in keep]
        offset += b.size
        if not rows:
            continue
        out.append(b.select(rows))
    if not out:
        raise EmptyDataError("the subset keeps no example")
    return out


# ----------------------------------------------------------------------------- paired statistics


def weighted_scores(task: str | TaskSpec, outputs: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The task's Table 1 metric (x 100) of ``outputs[example, out]`` under each row of
    ``weights[resample, example]`` (bootstrap counts: a weighted metric equals the metric of the resample)."""
    spec = task_spec(task)
    metric = TABLE1_METRIC[spec.name]
    w = np.asarray(weights, dtype=np.float64)
    outputs = np.asarray(outputs)
    gold = np.asarray(gold)
    if spec.is_regression:
        x = outputs.reshape(len(gold), -1)[:, 0].astype(np.float64)
        y = gold.astype(np.float64)
        n = w.sum(1)
        mx, my = w @ x / n, w @ y / n
        sxy = w @ (x * y) / n - mx * my
        sxx = w @ (x * x) / n - mx**2
        syy = w @ (y * y) / n - my**2
        with np.errstate(invalid="ignore", divide="ignore"):
            r = sxy / np.sqrt(np.maximum(sxx, 0) * np.maximum(syy, 0))
        return 100.0 * r
    pred = np.argmax(outputs, axis=-1)
    if metric == "f1":
        p, g = pred == 1, gold == 1
        tp, fp, fn = w @ (p & g), w @ (p & ~g), w @ (~p & g)
        denom = 2 * tp + fp + fn
        return 100.0 * np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)
    return 100.0 * (w @ (pred == gold)) / w.sum(1)


def paired_bootstrap(
    sweep: SweepResult,
    task: str | TaskSpec,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
):
    """Each configuration of ``sweep`` against its baseline on the task's metric (x 100), paired over examples.

    Returns a DataFrame in ``sweep.names`` order: ``name, score, delta, ci_low, ci_high`` (percentile
    interval of the resampled Δ), ``p_bootstrap`` (two-sided percentile p, floor ``2/(R+1)``),
    ``p_normal`` (two-sided, Δ over the bootstrap standard error) and, when the metric is accuracy,
    McNemar's ``b, c, p_mcnemar``. Every configuration uses the same seeded resamples.
    """
    from scipy.stats import norm

    spec = task_spec(task)
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence}")
    gold = sweep.gold
    counts = bootstrap_counts(len(gold), n_resamples, seed)
    ones = np.ones((1, len(gold)))
    base = weighted_scores(spec, sweep.baseline_outputs, gold, ones)[0]
    base_bs = weighted_scores(spec, sweep.baseline_outputs, gold, counts)
    is_acc = TABLE1_METRIC[spec.name] == "accuracy"
    base_ok = np.argmax(sweep.baseline_outputs, -1) == gold if is_acc else None
    alpha = (1 - confidence) / 2
    rows = []
    for name, outs in zip(sweep.names, sweep.flat_outputs()):
        score = weighted_scores(spec, outs, gold, ones)[0]
        d = np.nan_to_num(weighted_scores(spec, outs, gold, counts) - base_bs)
        sd = float(np.std(d, ddof=1)) if len(d) > 1 else 0.0
        delta = float(score - base)
        below, above = int(np.sum(d <= 0)), int(np.sum(d >= 0))
        p_norm = float(2 * norm.sf(abs(delta) / sd)) if sd > 0 else (1.0 if delta == 0 else 0.0)
        row = {
            "name": name,
            "score": float(score),
            "delta": delta,
            "ci_low": float(np.quantile(d, alpha)),
            "ci_high": float(np.quantile(d, 1 - alpha)),
            "p_bootstrap": min(1.0, 2 * (min(below, above) + 1) / (len(d) + 1)),
            "p_normal": p_norm,
        }
        if is_acc:
            mc = mcnemar_exact(base_ok, np.argmax(outs, -1) == gold)
            row.update(b=mc["b"], c=mc["c"], p_mcnemar=mc["p_value"])
        rows.append(row)
    return pd.DataFrame(rows)


def holm_table(table, *, alpha: float = 0.05, column: str | None = None):
    """``table`` (from :func:`paired_bootstrap`) with ``p_holm`` over *all* its rows and ``significant``.

    ``column`` defaults to McNemar's p where present, else the normal-approximation bootstrap p.
    """
    column = column or ("p_mcnemar" if "p_mcnemar" in table else "p_normal")
    if column not in table:
        raise ParameterError(f"no column {column!r} in the table")
    out = table.copy()
    out["test"] = {"p_mcnemar": "McNemar", "p_normal": "bootstrap (normal)", "p_bootstrap": "bootstrap"}.get(column, column)
    out["p_holm"] = adjust_pvalues(out[column].to_numpy(), "holm")
    out["significant"] = out["p_holm"] < alpha
    return out


def random_head_effect(delta: np.ndarray) -> dict:
    """Kovaleva §4.6: the change expected from disabling one head drawn at random.

    Returns the mean and median Δ over heads, the share of heads whose Δ > 0 and < 0, and
    the best and worst Δ.
    """
    d = np.asarray(delta, dtype=np.float64).ravel()
    if d.size == 0:
        raise EmptyDataError("no heads")
    return {
        "mean": float(d.mean()),
        "median": float(np.median(d)),
        "share_better": float(np.mean(d > 0)),
        "share_worse": float(np.mean(d < 0)),
        "best": float(d.max()),
        "worst": float(d.min()),
    }


def extreme_heads(values: np.ndarray, k: int, *, largest: bool) -> list[tuple[int, int]]:
    """The ``k`` heads ``(layer, head)`` with the largest (or smallest) ``values[layer, head]``; ties layer-major."""
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(-v.ravel() if largest else v.ravel(), kind="stable")[:k]
    return [tuple(int(x) for x in np.unravel_index(i, v.shape)) for i in order]  # type: ignore[misc]


# ----------------------------------------------------------------------------- cross-sentence word matching (§5)


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


@dataclass
class WordMatchShare:
    """Reducer of Kovaleva §5: per head, the attention a word piece gives to its copies in the other sentence.

    Over every query token that has at least one copy in the other sentence, ``share[layer, head]``
    is the mean of ``Σ_{key: copy} α[query, key]``; ``chance`` is the same mean under uniform
    attention over the real tokens (copies / real length), the level a head with no preference reaches.
    """

    total: np.ndarray | None = None
    uniform: float = 0.0
    n_queries: int = 0

    def update(self, attn: torch.Tensor, match: torch.Tensor, attention_mask: torch.Tensor) -> None:
        """``attn[batch, layer, head, query, key]``, ``match[batch, query, key]`` (bool), ``attention_mask[batch, key]``."""
        m = match.to(attn.dtype)
        mass = torch.einsum("blhqk,bqk->blhq", attn, m)  # attention to copies, per query
        has = match.any(-1)  # [batch, query]
        summed = (mass * has[:, None, None, :].to(attn.dtype)).sum((0, 3)).double().cpu().numpy()
        self.total = summed if self.total is None else self.total + summed
        length = attention_mask.sum(-1, keepdim=True).to(torch.float64)  # [batch, 1]
        self.uniform += float((m.sum(-1).double() / length)[has].sum())
        self.n_queries += int(has.sum())

    def result(self) -> dict:
        if self.total is None or self.n_queries == 0:
            raise EmptyDataError("no token has a copy in the other sentence; nothing to measure")
        return {"share": self.total / self.n_queries, "chance": self.uniform / self.n_queries, "n_queries": self.n_queries}


def skip_token_ids(tokenizer: Any) -> list[int]:
    """Ids never counted as word matches: the special tokens and single-character punctuation pieces."""
    import string

    ids = set(int(i) for i in getattr(tokenizer, "all_special_ids", []))
    vocab = tokenizer.get_vocab()
    ids.update(int(vocab[c]) for c in string.punctuation if c in vocab)
    return sorted(ids)


def word_match_shares(model: torch.nn.Module, batches: Sequence[Batch], skip_ids: Iterable[int] = ()) -> dict:
    """Run ``model`` (eager attention) over ``batches`` and reduce with :class:`WordMatchShare`."""
    skip = list(skip_ids)
    red = WordMatchShare()
    was = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for b in batches:
                if "token_type_ids" not in b.inputs:
                    raise ParameterError("word matching needs sentence pairs (token_type_ids)")
                out = model(**b.inputs, output_attentions=True)
                attn = torch.stack(out.attentions, dim=1)
                match = cross_sentence_matches(b.inputs["input_ids"], b.inputs["token_type_ids"], b.inputs["attention_mask"], skip)
                if match.any():
                    red.update(attn, match, b.inputs["attention_mask"])
    finally:
        model.train(was)
    return red.result()


# ----------------------------------------------------------------------------- agreement




# ----------------------------------------------------------------------------- pruning


def largest_safe_share(curve, baseline: float, tolerance: float) -> float:
    """Michel §4.2: the largest ``share_pruned`` of ``curve`` (rows of one ordering, ascending shares,
    columns ``share_pruned`` and ``score``) such that every step up to it keeps
    ``score >= baseline - tolerance``; 0 when even the first pruning step loses more."""
    safe = 0.0
    for share, score in zip(curve["share_pruned"], curve["score"]):
        if score < baseline - tolerance:
            break
        safe = float(share)
    return safe


def one_head_per_layer_mask(keep: Sequence[int], n_heads: int) -> np.ndarray:
    """``mask[layer, head]`` keeping only head ``keep[layer]`` (0-based) in every layer (Michel §3.3/§4.2)."""
    mask = np.zeros((len(keep), n_heads), dtype=np.float32)
    for layer, head in enumerate(keep):
        if not 0 <= int(head) < n_heads:
            raise ParameterError(f"head {head} of layer {layer} is outside 0..{n_heads - 1}")
        mask[layer, int(head)] = 1.0
    return mask


def throughput_pool(batches: Sequence[Batch], n: int, pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Up to ``n`` examples of ``batches`` as one right-padded input dict (the speed test's pool, Michel §4.3)."""
    rows: list[dict[str, torch.Tensor]] = []
    for b in batches:
        for i in range(b.size):
            length = int(b.inputs["attention_mask"][i].sum()) if "attention_mask" in b.inputs else b.inputs["input_ids"].shape[1]
            rows.append({k: v[i, :length] for k, v in b.inputs.items()})
            if len(rows) >= n:
                break
        if len(rows) >= n:
            break
    if not rows:
        raise EmptyDataError("no examples for the throughput pool")
    width = max(r["input_ids"].shape[0] for r in rows)
    out = {}
    for k in rows[0]:
        fill = pad_id if k == "input_ids" else 0
        t = torch.full((len(rows), width), fill, dtype=rows[0][k].dtype)
        for j, r in enumerate(rows):
            t[j, : r[k].shape[0]] = r[k]
        out[k] = t
    return out


def subset_sweep(sweep: SweepResult, keep: np.ndarray, score_fn) -> SweepResult:
    """``sweep`` restricted to the examples ``keep`` (indices in ``sweep.gold`` order), re-scored with
    ``score_fn`` (e.g. a dev half for Michel App. A's choose-on-one-set, score-on-another)."""
    from dataclasses import replace

    keep = np.asarray(keep, dtype=np.int64)
    if keep.size == 0:
        raise EmptyDataError("the subset keeps no example")
    flat = sweep.flat_outputs()[:, keep]
    gold = sweep.gold[keep]
    base = sweep.baseline_outputs[keep]
    scores = np.array([score_fn(o, gold) for o in flat], dtype=np.float64).reshape(sweep.scores.shape)
    outputs = flat.reshape(*sweep.scores.shape, *flat.shape[1:])
    return replace(sweep, scores=scores, baseline_score=float(score_fn(base, gold)), outputs=outputs,
                   baseline_outputs=base, gold=gold, meta={**sweep.meta, "n_examples": int(keep.size)})


def curve_area(curve, max_share: float = 0.9) -> float:
    """Mean score of a pruning curve over the steps with ``share_pruned <= max_share`` (higher = pruning hurts less)."""
    sel = curve[curve["share_pruned"] <= max_share + 1e-9]
    if sel.empty:
        raise EmptyDataError("no pruning step at or below the share")
    return float(sel.groupby("share_pruned")["score"].mean().mean())


def trivial_score(task: str | TaskSpec, gold: np.ndarray) -> float:
    """The task's metric (x 100) of a constant predictor, the floor a classifier must beat: majority-class
    accuracy, F1 of always answering the positive class (MRPC, QQP), and 0 for Pearson r (STS-B)."""
    spec = task_spec(task)
    gold = np.asarray(gold)
    if gold.size == 0:
        raise EmptyDataError("no gold labels")
    metric = TABLE1_METRIC[spec.name]
    if metric == "pearson":
        return 0.0
    if metric == "f1":
        pos = float(np.mean(gold == 1))
        return 100.0 * 2 * pos / (1 + pos) if pos > 0 else 0.0
    return 100.0 * float(np.max(np.bincount(gold.astype(np.int64))) / gold.size)
