"""Small synthetic inputs shared by the Clark tests: head distances with planted layers, per-head
surface statistics, UD-like sentences and probe data with a planted signal."""
from __future__ import annotations

import numpy as np
from scipy.spatial.distance import pdist, squareform

from attnbook.data.conllu import Sentence
from attnbook.studies.clark.probe_data import ProbeData


def planted(n_layers=6, n_heads=8, spread=0.15, seed=0):
    """Distances between heads whose positions cluster by layer."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_layers, 2)) * 3
    pts = np.repeat(centres, n_heads, axis=0) + rng.normal(scale=spread, size=(n_layers * n_heads, 2))
    return squareform(pdist(pts))


def stats_2x3():
    z = np.zeros((2, 3))
    s = {k: z.copy() for k in ("prev", "next", "self", "cls", "sep", "punct", "entropy")}
    s["prev"][0, 0] = 0.6
    s["next"][0, 1] = 0.51
    s["sep"][1, 0] = 0.7
    s["sep"][1, 1] = 0.5  # not more than half
    s["punct"][1, 2] = 0.55
    s["entropy"][:] = [[4.0, 1.0, 0.5], [0.2, 0.3, 2.0]]
    return s


def make_sentence(rows: list[tuple[str, int, str]]) -> Sentence:
    n = len(rows)
    words, heads, rels = (list(c) for c in zip(*rows))
    return Sentence(ids=list(range(1, n + 1)), words=words, lemmas=words, upos=["X"] * n, xpos=["X"] * n,
                    feats=["_"] * n, head=heads, deprel=rels, deps=["_"] * n, misc=["_"] * n)


CAT = make_sentence([("the", 2, "det"), ("cat", 3, "nsubj"), ("sat", 0, "root"), ("on", 6, "case"),
                     ("the", 6, "det"), ("mat", 3, "obl"), (".", 3, "punct")])


STORY = make_sentence([("a", 4, "det"), ("very", 3, "advmod"), ("gyroscopic", 4, "amod"), ("story", 0, "root")])


def random_heads(rng, n):
    root = rng.integers(n)
    heads = np.array([-1 if j == root else rng.choice([i for i in range(n) if i != j]) for j in range(n)])
    return heads


def planted_data(n_sent, n_maps=4, planted=2, dim=6, seed=0, word_switch=False):
    """Random maps; in map ``planted`` every dependent attends mostly to its gold head.

    With ``word_switch``, dependents whose vector says "A" find their head in map 0 and a decoy
    in map 1; "B" dependents the other way round (only a word-aware probe can tell).
    """
    rng = np.random.default_rng(seed)
    maps, heads, vecs, words = [], [], [], []
    for _ in range(n_sent):
        n = int(rng.integers(4, 10))
        h = random_heads(rng, n)
        a = rng.dirichlet(np.ones(n), size=(n_maps, n)) * 0.5  # [k, from, to]
        kind = rng.integers(2, size=n)
        v = rng.normal(size=(n, dim)).astype(np.float32) * 0.1
        v[:, 0] += kind  # the word's type is readable from its vector
        for j in range(n):
            if h[j] < 0:
                continue
            if word_switch:
                decoy = rng.choice([i for i in range(n) if i not in (j, h[j])])
                good, bad = (0, 1) if kind[j] == 0 else (1, 0)
                a[good, j, h[j]] += 0.5
                a[bad, j, decoy] += 0.5
            else:
                a[planted, j, h[j]] += 0.5
        maps.append(a.astype(np.float16))
        heads.append(h.astype(np.int64))
        vecs.append(v)
        words.append([f"w{i}" for i in range(n)])
    return ProbeData(maps, heads, vecs, words, 1, n_maps)
