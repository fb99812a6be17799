"""Statistical cues in the ARCT warrants and the adversarial construction (Niven & Kao, 2019).

The ARCT files are read by :mod:`attnbook.data.arct`; this module is the paper's science without a
neural model:

* **cue statistics** over the warrants (§4): applicability, productivity and coverage of every
  unigram and bigram (:func:`cue_statistics`, :func:`cue_row`, :func:`top_cues`), and "not" by
  split with two tokenisations (:func:`not_cue_table`, Table 2);
* **the adversarial transform** (§6): negate the claim and invert the label
  (:func:`negate_claims`, :func:`make_adversarial`), the warrant swap of the training file the
  paper's adversarial runs actually used (:func:`swap_warrants`), the check against the shipped
  files (:func:`agreement_with_shipped`, :func:`transform_agreement`), how far the adversarial
  data leave any warrant cue from chance (:func:`max_cue_gap`) and their two halves
  (:func:`adversarial_halves`);
* the two **baselines without training**: majority label and the "not" cue
  (:func:`majority_baseline`, :func:`cue_baseline`, :func:`baseline_table`).

Tokenisation for the cue statistics (stated once, used everywhere), see :func:`tokenize`:
lowercase; with ``negation="expand"`` (default) the contractions "n't" become a
separate "not" ("don't" → "do not", "can't" → "can not", "won't" → "will not")
and "cannot" becomes "can not", the effect of the authors' cleaning step;
then the words are the maximal runs of letters and digits (punctuation and
apostrophes split words: "it's" → "it", "s"). ``negation="keep"`` skips the
rewriting, so only a whole word "not" counts as "not".
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from attnbook.core.errors import AttnbookError, EmptyDataError, ParameterError
from attnbook.data.arct import NEGATED_SUFFIX, SWAPPED_SUFFIX, ArctItem, labels_of
from attnbook.stats import accuracy


# ---- cue statistics (Niven & Kao §4) ---------------------------------------------------------

_CONTRACTIONS = ((re.compile(r"\bcan'?t\b"), "can not"), (re.compile(r"\bwon'?t\b"), "will not"),
                 (re.compile(r"\bcannot\b"), "can not"), (re.compile(r"n't\b"), " not"))
_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str, negation: str = "expand") -> list[str]:
    """Lowercased words of ``text`` for the cue statistics (the policy is in the module doc).

    ``negation="expand"`` rewrites "n't" / "cannot" to "not" first (as the authors'
    cleaning does); ``"keep"`` leaves them, so "don't" gives "don", "t".
    """
    if negation not in ("expand", "keep"):
        raise ParameterError(f"negation must be 'expand' or 'keep', got {negation!r}")
    text = text.lower().replace("\u2019", "'")
    if negation == "expand":
        for pattern, repl in _CONTRACTIONS:
            text = pattern.sub(repl, text)
    return _WORD.findall(text)


def ngrams(tokens: Sequence[str], orders: Sequence[int] = (1, 2)) -> set[str]:
    """The set of n-grams (space-joined) of ``tokens`` for every order in ``orders``."""
    out: set[str] = set()
    for n in orders:
        out.update(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return out


def cue_counts(
    cues0: Sequence[set[str]], cues1: Sequence[set[str]], labels: Sequence[int] | np.ndarray
) -> tuple[Counter, Counter]:
    """Per cue k: applicability α_k and the number of applicable items where k is in the correct warrant.

    ``cues0[i]`` / ``cues1[i]`` are the cue sets T_0^(i), T_1^(i) of item i's two
    warrants and ``labels[i]`` its label. A cue is *applicable* to item i when it
    is in exactly one of the two warrants (Niven & Kao §4); it is *productive*
    there when that warrant is the correct one.
    """
    if not (len(cues0) == len(cues1) == len(labels)):
        raise ValueError("cues0, cues1 and labels must have the same length")
    applicable: Counter = Counter()
    productive: Counter = Counter()
    for t0, t1, y in zip(cues0, cues1, labels):
        only0, only1 = t0 - t1, t1 - t0
        applicable.update(only0)
        applicable.update(only1)
        productive.update(only1 if int(y) == 1 else only0)
    return applicable, productive


def warrant_cues(
    items: Sequence[ArctItem], orders: Sequence[int] = (1, 2), negation: str = "expand"
) -> tuple[list[set[str]], list[set[str]]]:
    """The cue sets (n-grams of :func:`tokenize`) of every item's ``warrant0`` and ``warrant1``."""
    c0 = [ngrams(tokenize(it.warrant0, negation), orders) for it in items]
    c1 = [ngrams(tokenize(it.warrant1, negation), orders) for it in items]
    return c0, c1


def cue_statistics(
    items: Sequence[ArctItem],
    orders: Sequence[int] = (1, 2),
    negation: str = "expand",
    min_applicability: int = 1,
):
    """Applicability, productivity and coverage of every unigram and bigram cue in the warrants (§4).

    For n items and a cue k:

    * applicability α_k = number of items where k is in one warrant but not the other;
    * productivity π_k = share of those items where k is in the correct warrant;
    * coverage ξ_k = α_k / n.

    A cue helps a learner when π_k > 1/2 (two labels). Returns a pandas DataFrame with
    columns ``cue``, ``order`` (1 or 2), ``applicability``, ``productive``,
    ``productivity``, ``coverage``, sorted by productivity then applicability
    (both descending), with cues of applicability below ``min_applicability`` left out.
    """
    import pandas as pd

    if not items:
        raise EmptyDataError("no ARCT items to count cues in")
    c0, c1 = warrant_cues(items, orders, negation)
    applicable, productive = cue_counts(c0, c1, labels_of(items))
    n = len(items)
    rows = [
        (k, k.count(" ") + 1, a, productive[k], productive[k] / a, a / n)
        for k, a in applicable.items()
        if a >= min_applicability
    ]
    table = pd.DataFrame(rows, columns=["cue", "order", "applicability", "productive", "productivity", "coverage"])
    return top_cues(table, n=None)


def top_cues(
    table, *, min_applicability: int = 1, by: str = "productivity", n: int | None = 20, order: int | None = None
):
    """The rows of a :func:`cue_statistics` table sorted by ``by`` (descending; ties by applicability, then cue).

    Keeps cues with applicability ≥ ``min_applicability`` (and of n-gram ``order`` if given); ``n=None`` keeps all.
    """
    if by not in ("productivity", "applicability", "coverage", "productive"):
        raise ParameterError(f"cannot sort cues by {by!r}")
    keep = table[table["applicability"] >= min_applicability]
    if order is not None:
        keep = keep[keep["order"] == order]
    secondary = "applicability" if by != "applicability" else "productivity"
    keep = keep.sort_values([by, secondary, "cue"], ascending=[False, False, True], kind="mergesort")
    keep = keep.reset_index(drop=True)
    return keep if n is None else keep.head(n)


def cue_row(items: Sequence[ArctItem], cue: str, negation: str = "expand") -> dict:
    """α, π and ξ of one cue (a word or a space-separated bigram) over ``items``, e.g. Table 2's "not".

    ``productive`` is the count behind π (applicable items where the cue is in the correct warrant), so
    π's exact interval over the applicable items and ξ's over all items can be computed from the row."""
    if not items:
        raise EmptyDataError("no ARCT items to count the cue in")
    order = len(tokenize(cue, negation))
    if order < 1:
        raise ParameterError(f"cue {cue!r} has no words after tokenisation")
    key = " ".join(tokenize(cue, negation))
    c0, c1 = warrant_cues(items, (order,), negation)
    applicable, productive = cue_counts(c0, c1, labels_of(items))
    a = applicable[key]
    return {
        "cue": key,
        "n_items": len(items),
        "applicability": a,
        "productive": productive[key],
        "productivity": productive[key] / a if a else float("nan"),
        "coverage": a / len(items),
    }


# ---- the adversarial transform (Niven & Kao §6) ----------------------------------------------


class MissingNegationError(AttnbookError, KeyError):
    """A claim has no entry in the claim map, so its adversarial copy cannot be made."""

    def __init__(self, claim: str, item_id: str):
        self.claim, self.item_id = claim, item_id
        super().__init__(
            f"item {item_id}: claim {claim!r} is not in the claim map; add an 'original,negated' row for it"
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


def negate_claims(items: Sequence[ArctItem], claim_map: Mapping[str, str]) -> list[ArctItem]:
    """The adversarial copy of every item: claim negated, label inverted, warrants unchanged (§6).

    Since R ∧ A → ¬C, the alternative warrant A is the correct warrant for the
    negated claim ¬C. Each copy gets the id ``<id>-adversarial`` and ``flag=True``
    (as in the shipped files). A claim missing from ``claim_map`` raises
    :class:`MissingNegationError`.
    """
    out = []
    for it in items:
        if it.claim not in claim_map:
            raise MissingNegationError(it.claim, it.id)
        out.append(replace(it, id=it.id + NEGATED_SUFFIX, claim=claim_map[it.claim], label=1 - it.label, flag=True))
    return out


def make_adversarial(items: Sequence[ArctItem], claim_map: Mapping[str, str]) -> list[ArctItem]:
    """The adversarial data set of §6: the originals (``flag=False``) followed by their negated copies.

    Every warrant pair then occurs once with each label, so any cue in the
    warrants alone is worth exactly 50%.
    """
    originals = [replace(it, flag=False) for it in items]
    return originals + negate_claims(items, claim_map)


def swap_warrants(items: Sequence[ArctItem]) -> list[ArctItem]:
    """The originals followed by copies with ``warrant0``/``warrant1`` swapped and the label flipped.

    This is ``train-swapped.csv``, the training file the paper's adversarial runs
    actually used (repository README erratum): the claim is *not* negated, so
    the correct warrant stays correct; only its position changes.
    """
    originals = [replace(it, flag=False) for it in items]
    copies = [
        replace(it, id=it.id + SWAPPED_SUFFIX, warrant0=it.warrant1, warrant1=it.warrant0, label=1 - it.label,
                flag=True)
        for it in items
    ]
    return originals + copies


def agreement_with_shipped(ours: Sequence[ArctItem], shipped: Sequence[ArctItem]) -> dict:
    """Compare a constructed file with a shipped one, item by item through the ids.

    Returns counts: ``n_ours``, ``n_shipped``, ``matched_ids``, ``identical`` (all
    fields equal), ``claim_differs``, ``label_differs``, ``warrants_differ``,
    ``other_differs``, ``agreement`` (identical / matched ids) and up to five
    example ids that differ.
    """
    by_id = {it.id: it for it in shipped}
    matched = identical = 0
    diff = Counter()
    examples: list[str] = []
    for it in ours:
        other = by_id.get(it.id)
        if other is None:
            continue
        matched += 1
        if it == other:
            identical += 1
            continue
        diff["claim_differs"] += it.claim != other.claim
        diff["label_differs"] += it.label != other.label
        diff["warrants_differ"] += it.warrants != other.warrants
        diff["other_differs"] += (it.reason, it.debate_title, it.debate_info, it.flag) != (
            other.reason, other.debate_title, other.debate_info, other.flag)
        if len(examples) < 5:
            examples.append(it.id)
    return {
        "n_ours": len(ours),
        "n_shipped": len(shipped),
        "matched_ids": matched,
        "identical": identical,
        "claim_differs": diff["claim_differs"],
        "label_differs": diff["label_differs"],
        "warrants_differ": diff["warrants_differ"],
        "other_differs": diff["other_differs"],
        "agreement": identical / matched if matched else float("nan"),
        "examples": examples,
    }


def adversarial_halves(items: Sequence[ArctItem]) -> dict[str, list[ArctItem]]:
    """An adversarial file split into its ``original_half`` (flag ``False``) and ``negated_half`` (the copies).

    A model that ignores the claim gives both copies of an item the same answer, so its accuracies on
    the two halves add up to 1 (§6).
    """
    return {"original_half": [it for it in items if not it.flag], "negated_half": [it for it in items if it.flag]}


# ---- baselines without training (Niven & Kao Table 1, §4) -----------------------------------


def majority_label(train: Sequence[ArctItem]) -> int:
    """The more frequent label in the training items (ties: 0)."""
    labels = labels_of(train)
    if labels.size == 0:
        raise EmptyDataError("no training items")
    return int(labels.sum() * 2 > labels.size)


def majority_baseline(train: Sequence[ArctItem], test: Sequence[ArctItem]) -> float:
    """Accuracy on ``test`` of always predicting the majority label of ``train``."""
    return accuracy(np.full(len(test), majority_label(train)), labels_of(test))


def cue_predictions(
    items: Sequence[ArctItem],
    cue: str = "not",
    *,
    fallback: str = "majority",
    majority: int = 0,
    seed: int = 0,
    negation: str = "expand",
) -> tuple[np.ndarray, np.ndarray]:
    """Predict the warrant that contains ``cue`` when exactly one does (the cue-only learner of §4).

    Elsewhere predict ``majority`` (``fallback="majority"``) or a seeded coin flip
    (``fallback="random"``). Returns ``(predictions[n], applicable[n])``.
    """
    if fallback not in ("majority", "random"):
        raise ParameterError(f"fallback must be 'majority' or 'random', got {fallback!r}")
    order = len(tokenize(cue, negation))
    key = " ".join(tokenize(cue, negation))
    c0, c1 = warrant_cues(items, (order,), negation)
    rng = np.random.default_rng(seed)
    coins = rng.integers(0, 2, size=len(items))
    preds = np.empty(len(items), dtype=np.int64)
    applicable = np.zeros(len(items), dtype=bool)
    for i, (t0, t1) in enumerate(zip(c0, c1)):
        if (key in t0) != (key in t1):
            preds[i] = 0 if key in t0 else 1
            applicable[i] = True
        else:
            preds[i] = majority if fallback == "majority" else coins[i]
    return preds, applicable


def cue_baseline(
    train: Sequence[ArctItem], test: Sequence[ArctItem], cue: str = "not", *, fallback: str = "majority", seed: int = 0
) -> dict:
    """Accuracy of the cue-only learner on ``test`` (fallback label from ``train``), overall and where it applies."""
    preds, applicable = cue_predictions(test, cue, fallback=fallback, majority=majority_label(train), seed=seed)
    labels = labels_of(test)
    return {
        "cue": cue,
        "accuracy": accuracy(preds, labels),
        "coverage": float(applicable.mean()),
        "accuracy_where_applicable": (
            accuracy(preds[applicable], labels[applicable]) if applicable.any() else float("nan")
        ),
    }


# ---- tables for the chapter ------------------------------------------------------------------


def not_cue_table(
    splits: Mapping[str, Sequence[ArctItem]], cue: str = "not", paper: Mapping[str, Mapping[str, float]] | None = None
):
    """Productivity and coverage of ``cue`` per split, with two tokenisations (Niven & Kao Table 2).

    ``splits`` maps ``train``/``dev``/``test`` (and optionally ``all``) to items. Two
    tokenisations are counted (module doc): ``expand`` ("n't" → "not", the authors'
    cleaning) and ``keep`` (whole word "not" only); ``applicability`` and ``productive`` are the counts
    behind the ``expand`` columns (for their intervals). ``paper`` (split -> ``productivity``,
    ``coverage``) fills the columns ``paper productivity`` / ``paper coverage`` beside ours
    (:func:`attnbook.studies.niven_kao.paper.not_cue_table` passes Table 2).
    """
    import pandas as pd

    rows = []
    for split, items in splits.items():
        given = (paper or {}).get(split, {})
        e, k = cue_row(items, cue, "expand"), cue_row(items, cue, "keep")
        rows.append({
            "split": split, "items": len(items),
            "paper productivity": given.get("productivity"), "paper coverage": given.get("coverage"),
            "productivity": round(e["productivity"], 3), "coverage": round(e["coverage"], 3),
            "productivity (whole word)": round(k["productivity"], 3), "coverage (whole word)": round(k["coverage"], 3),
            "applicability": e["applicability"], "productive": e["productive"],
        })
    return pd.DataFrame(rows)


def baseline_table(train: Sequence[ArctItem], tests: Mapping[str, Sequence[ArctItem]], cue: str = "not", seed: int = 0):
    """Accuracy of the majority label and of the cue-only learner (majority / coin-flip fallback) per test set."""
    import pandas as pd

    rows = []
    for name, items in tests.items():
        maj = cue_baseline(train, items, cue, fallback="majority", seed=seed)
        coin = cue_baseline(train, items, cue, fallback="random", seed=seed)
        rows.append({"test set": name, "items": len(items), "majority label": round(majority_baseline(train, items), 3),
                     f'"{cue}" cue, else majority': round(maj["accuracy"], 3),
                     f'"{cue}" cue, else coin flip': round(coin["accuracy"], 3),
                     "cue applies to": round(maj["coverage"], 3),
                     "accuracy where it applies": round(maj["accuracy_where_applicable"], 3)})
    return pd.DataFrame(rows)


#: columns of :func:`transform_agreement` the chapter shows
AGREEMENT_COLUMNS = ("n_shipped", "matched_ids", "identical", "claim_differs", "label_differs")


def transform_agreement(data: Mapping[str, Sequence[ArctItem]], claim_map: Mapping[str, str]) -> dict[str, dict]:
    """Our §6 files against the shipped ones: :func:`agreement_with_shipped` for every constructed file.

    ``data`` holds the loaded files by name (:data:`attnbook.data.arct.FILES`): each original split
    with its claims negated (:func:`make_adversarial`) is checked against ``<split>-adv-negated``,
    and the training split with its warrants swapped (:func:`swap_warrants`) against ``train-swapped``.
    """
    out = {
        f"{split}-adv-negated": agreement_with_shipped(make_adversarial(data[split], claim_map),
                                                       data[f"{split}-adv-negated"])
        for split in ("train", "dev", "test")
    }
    out["train-swapped"] = agreement_with_shipped(swap_warrants(data["train"]), data["train-swapped"])
    return out


def agreement_table(agreement: Mapping[str, Mapping]):
    """:func:`transform_agreement` as a DataFrame, one row per file, the columns :data:`AGREEMENT_COLUMNS`."""
    import pandas as pd

    return pd.DataFrame(agreement).T[list(AGREEMENT_COLUMNS)]


def max_cue_gap(table) -> float:
    """max |π_k − ½| over the cues of a :func:`cue_statistics` table: 0 when no warrant cue beats chance (§6).

    NaN for a table without cues (no cue applies to any item)."""
    return float((table["productivity"] - 0.5).abs().max())


def cues_at_chance(table) -> tuple[int, int]:
    """How many cues of a :func:`cue_statistics` table have productivity exactly ½ (twice the productive count
    equals the applicability, an exact count), and how many cues there are (§6: all of them, on adversarial data)."""
    at_half = int(((2 * table["productive"]) == table["applicability"]).sum())
    return at_half, int(len(table))


__all__: list[str] = [
    "tokenize", "ngrams", "cue_counts", "warrant_cues", "cue_statistics", "top_cues", "cue_row",
    "MissingNegationError", "negate_claims", "make_adversarial", "swap_warrants", "agreement_with_shipped",
    "adversarial_halves",
    "majority_label", "majority_baseline", "cue_predictions", "cue_baseline",
    "not_cue_table", "baseline_table", "transform_agreement", "agreement_table", "AGREEMENT_COLUMNS", "max_cue_gap",
    "cues_at_chance",
]
