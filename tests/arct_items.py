"""Small ARCT item lists and per-seed frames built inside the Niven & Kao tests (no data files)."""
from __future__ import annotations

import numpy as np

from attnbook.data.arct import ArctItem


def item(i: int, w0: str, w1: str, label: int, claim: str = "Claim one", reason: str = "A reason.") -> ArctItem:
    """An item with id ``id<i>``, the given warrants and label, and fixed debate fields."""
    return ArctItem(id=f"id{i}", warrant0=w0, warrant1=w1, label=label, reason=reason, claim=claim,
                    debate_title="Title?", debate_info="Some info.")


def toy_items() -> list[ArctItem]:
    """Four items whose cue statistics are worked out by hand in the tests."""
    return [
        item(1, "it is not good", "it is good", 0),
        item(2, "people do not care", "people care", 1),
        item(3, "cats are nice", "dogs are nice", 0),
        item(4, "it can't work", "it will not work", 1),
    ]


def planted_cue_items(n: int, seed: int, cue: str = "indeed") -> list[ArctItem]:
    """Correct warrant = the one that contains ``cue``; all other words are random fillers."""
    rng = np.random.default_rng(seed)
    fillers = ["people", "should", "water", "city", "rules", "money", "school", "the", "green", "fast"]
    out = []
    for i in range(n):
        w = [" ".join(rng.choice(fillers, 4)) for _ in range(2)]
        y = int(rng.integers(0, 2))
        w[y] = f"{w[y]} {cue}"
        claim, reason = (" ".join(rng.choice(fillers, 3)) for _ in range(2))
        out.append(ArctItem(id=f"id{i}", warrant0=w[0], warrant1=w[1], label=y, reason=reason, claim=claim))
    return out


def fake_runs(acc, inputs="full", **extra):
    """A per-seed frame as :func:`attnbook.studies.niven_kao.pairwise.run_seeds` returns, with given accuracies."""
    import pandas as pd

    return pd.DataFrame({"inputs": inputs, "seed": range(len(acc)), "test_accuracy": acc, **extra})


class FakeGloVe:
    """8-dimensional seeded random vectors; words in ``<...>`` and "indeed" are out of vocabulary."""

    dim = 8

    def lookup(self, words):
        rng = np.random.default_rng(0)
        vecs = rng.normal(size=(len(words), self.dim)).astype(np.float32)
        oov = np.array([w.startswith("<") or w == "indeed" for w in words])
        vecs[oov] = 0
        return vecs, oov

    def __digest__(self):
        return ("FakeGloVe", self.dim)


def labelled_items(n: int, ones: int | None = None, *, flag: bool | None = None, prefix: str = "id") -> list[ArctItem]:
    """``n`` items whose first ``ones`` (default: half) have label 1, the rest label 0 (for test-set sizes and
    constant predictors); ``flag`` as in an adversarial file."""
    ones = n // 2 if ones is None else ones
    return [ArctItem(id=f"{prefix}{i}", warrant0=f"w0 {i}", warrant1=f"w1 {i}", label=int(i < ones), reason="R.",
                     claim="C.", flag=flag) for i in range(n)]


def adversarial_items(n_pairs: int) -> list[ArctItem]:
    """An adversarial test file of ``n_pairs`` originals (half with label 1) followed by their negated copies."""
    originals = labelled_items(n_pairs, flag=False)
    copies = [ArctItem(id=it.id + "-adversarial", warrant0=it.warrant0, warrant1=it.warrant1, label=1 - it.label,
                       reason=it.reason, claim="not C.", flag=True) for it in originals]
    return originals + copies
