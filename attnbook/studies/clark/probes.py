"""Attention-based probing classifiers for dependency parsing (Clark et al. §5, Table 3).

Clark §5 asks how much syntax is spread over *combinations* of heads. Each probe
is a small graph-based parser: for every dependent ``j`` it gives a distribution
over the other words ``i`` of the sentence as ``j``'s syntactic head, and is
trained with cross-entropy on gold trees. BERT is frozen: its word-level
attention maps (Clark §4.1 conversion) are fixed inputs. With ``α^k_ij`` the
attention of head ``k`` *from* word ``i`` *to* word ``j``:

* **attention-only** (:class:`AttentionOnlyProbe`):
  ``p(i|j) ∝ exp(Σ_k w_k α^k_ij + u_k α^k_ji)``, two weights per head
  (candidate head -> dependent, and dependent -> candidate head);
* **attention-and-words** (:class:`AttentionWordsProbe`): the per-head weights
  depend on the two words, ``w_k = W_k,:(v_i ⊕ v_j)`` and ``u_k = U_k,:(v_i ⊕ v_j)``
  with frozen word vectors ``v``. Here ``v ⊕ 1``: a per-head bias is added, so
  the probe contains the attention-only probe and an out-of-vocabulary word (zero
  vector, :mod:`attnbook.data.glove`) falls back to word-independent weights;
* baselines (Table 3): **right-branching** (the next word is the head);
  **distances + words** (:class:`DistanceMLP`): a one-hidden-layer network over
  ``v_i ⊕ v_j ⊕ distance features`` (indicators of short signed distances plus
  continuous distance ahead/behind, Clark footnote 4); and the attention-and-words
  probe on **a randomly initialised BERT that keeps the pretrained embeddings**
  (:func:`random_init_copy`).

Protocol (stated once):

* Words are UD EWT syntactic words; candidates are the sentence's other words
  (``[CLS]``/``[SEP]`` are not candidates and their attention is not a feature).
* UAS is scored over every word whose gold head is a word (the root word is
  skipped), punctuation included unless ``exclude_punct``; words cut by
  truncation (``max_tokens``, :mod:`attnbook.engine.inputs`) and words whose head was cut
  are not scored.
* Training uses UD train (the first ``n_train`` sentences), evaluation UD dev.
  The probes need every head's maps of every training sentence in memory
  (:mod:`attnbook.studies.clark.probe_data`), which is why ``n_train`` is a parameter.
* Adam, a **fixed number of epochs** (no early stopping: the dev set is the test
  set here and is never used to choose anything), length-bucketed mini-batches
  in a seeded order, parameters initialised at zero (uniform distribution over
  candidates) except the MLP's hidden layer, which is seeded. Learning rates per
  probe: :data:`LEARNING_RATES`, fixed after a few exploratory runs with the
  embedded model (higher rates made the training loss diverge for the
  attention-and-words probe; dev UAS was looked at in those runs too, so dev is
  not untouched by this one choice).
* Two reparametrisations that leave each probe's family of functions unchanged and
  only condition Adam: every head's attention is multiplied by ``1/RMS`` of its
  values on the training pairs (:func:`~attnbook.studies.clark.probe_data.attention_scale`), and word vectors are
  standardised per dimension on the training words (:func:`~attnbook.studies.clark.probe_data.vector_standardizer`).
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import nn

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.core.heads import head_label
from attnbook.data.conllu import Sentence
from attnbook.engine.extract import collect_maps
from attnbook.engine.models import LoadedModel, wrap_model
from attnbook.engine.train import Recipe, fit
from attnbook.engine.wordlevel import token_to_word_attention
from attnbook.studies.clark.probe_data import (
    ProbeBatch,
    ProbeData,
    attention_scale,
    extract_probe_data,
    make_probe_batches,
    vector_standardizer,
)
from attnbook.studies.clark.syntax import best_heads_by_relation

#: readable names of the Table 3 rows, in the paper's order (the paper's words are GloVe)
TABLE3_NAMES: dict[str, str] = {
    "right_branching": "Right-branching",
    "distances_words": "Distances + word vectors",
    "random_init_attn_words": "Random-init attn + word vectors",
    "attn": "Attn",
    "attn_words": "Attn + word vectors",
}

#: Adam learning rates per probe (see the module doc for how they were chosen)
LEARNING_RATES: dict[str, float] = {"distances_words": 1e-2, "attn": 1e-2, "attn_words": 3e-3}


#: short signed distances (candidate minus dependent) with an indicator feature in :class:`DistanceMLP`
SHORT_DISTANCES = (-4, -3, -2, -1, 1, 2, 3, 4)


# ---------------------------------------------------------------------------------------------
# probes
# ---------------------------------------------------------------------------------------------
def _scale_tensor(scale, n_maps: int) -> torch.Tensor:
    if scale is None:
        return torch.ones(n_maps)
    t = torch.as_tensor(np.asarray(scale, dtype=np.float32))
    if t.shape != (n_maps,):
        raise ValueError(f"alpha_scale must have shape ({n_maps},), got {tuple(t.shape)}")
    return t


class AttentionOnlyProbe(nn.Module):
    """``score(i head of j) = Σ_k w_k α^k_ij + u_k α^k_ji`` (Clark §5, attention-only)."""

    def __init__(self, n_maps: int, alpha_scale: np.ndarray | torch.Tensor | None = None):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(n_maps))  # candidate head -> dependent (per scaled unit)
        self.u = nn.Parameter(torch.zeros(n_maps))  # dependent -> candidate head (per scaled unit)
        self.register_buffer("alpha_scale", _scale_tensor(alpha_scale, n_maps))

    def raw_weights(self) -> tuple[np.ndarray, np.ndarray]:
        """``(w, u)`` per unit of attention (the paper's ``w_k``, ``u_k``), undoing the feature scaling."""
        s = self.alpha_scale.numpy()
        return self.w.detach().numpy() * s, self.u.detach().numpy() * s

    def forward(self, batch: ProbeBatch) -> torch.Tensor:
        a = batch.alpha.float() * self.alpha_scale[None, :, None, None]
        # result [b, j, i]: a[b, k, i, j] is attention from candidate i to dependent j
        return torch.einsum("k,bkij->bji", self.w, a) + torch.einsum("k,bkji->bji", self.u, a)


class AttentionWordsProbe(nn.Module):
    """Clark §5 attention-and-words probe.

    ``score(i head of j) = Σ_k W_k·(v_i ⊕ v_j ⊕ 1) α^k_ij + U_k·(v_i ⊕ v_j ⊕ 1) α^k_ji``.
    """

    def __init__(self, n_maps: int, dim: int, alpha_scale: np.ndarray | torch.Tensor | None = None):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(n_maps, 2 * dim + 1))
        self.U = nn.Parameter(torch.zeros(n_maps, 2 * dim + 1))
        self.dim = dim
        self.register_buffer("alpha_scale", _scale_tensor(alpha_scale, n_maps))

    @staticmethod
    def _weights(M: torch.Tensor, v: torch.Tensor, dim: int) -> torch.Tensor:
        """``[b, k, j, i]`` = M_k · (v_i ⊕ v_j ⊕ 1) for candidate ``i`` and dependent ``j``."""
        cand = torch.einsum("kd,bid->bki", M[:, :dim], v)
        dep = torch.einsum("kd,bjd->bkj", M[:, dim : 2 * dim], v)
        return dep[:, :, :, None] + cand[:, :, None, :] + M[:, 2 * dim][None, :, None, None]

    def forward(self, batch: ProbeBatch) -> torch.Tensor:
        a = batch.alpha.float() * self.alpha_scale[None, :, None, None]  # a[b, k, from, to]
        v = batch.vectors
        head_to_dep = a.transpose(-1, -2)  # [b, k, j, i] = α^k_ij
        dep_to_head = a  # [b, k, j, i] = α^k_ji
        w = self._weights(self.W, v, self.dim)
        u = self._weights(self.U, v, self.dim)
        return (w * head_to_dep + u * dep_to_head).sum(1)


def distance_features(n: int) -> torch.Tensor:
    """``[j, i, f]`` features of the signed distance ``d = i - j`` (candidate minus dependent).

    Indicators of ``d`` in :data:`SHORT_DISTANCES`, then ``log1p`` of the distance ahead
    (``d > 0``) and behind (``d < 0``) and both linear (/10), kept apart for word order.
    """
    idx = torch.arange(n)
    d = (idx[None, :] - idx[:, None]).float()  # [j, i]
    feats = [(d == s).float() for s in SHORT_DISTANCES]
    ahead, behind = d.clamp(min=0), (-d).clamp(min=0)
    feats += [torch.log1p(ahead), torch.log1p(behind), ahead / 10, behind / 10]
    return torch.stack(feats, -1)


N_DISTANCE_FEATURES = len(SHORT_DISTANCES) + 4


class DistanceMLP(nn.Module):
    """One hidden layer over ``v_i ⊕ v_j ⊕ distance features`` (Clark §5 baseline, footnote 4)."""

    def __init__(self, dim: int, hidden: int = 64):
        super().__init__()
        self.cand = nn.Linear(dim, hidden, bias=False)
        self.dep = nn.Linear(dim, hidden, bias=False)
        self.dist = nn.Linear(N_DISTANCE_FEATURES, hidden)
        self.out = nn.Linear(hidden, 1)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, batch: ProbeBatch) -> torch.Tensor:
        v = batch.vectors
        n = v.shape[1]
        h = self.dep(v)[:, :, None, :] + self.cand(v)[:, None, :, :] + self.dist(distance_features(n))[None]
        return self.out(torch.relu(h)).squeeze(-1)  # [b, j, i]


def _masked_scores(scores: torch.Tensor, batch: ProbeBatch) -> torch.Tensor:
    return scores.masked_fill(~batch.candidates(), float("-inf"))


def probe_loss(scores: torch.Tensor, batch: ProbeBatch) -> torch.Tensor:
    """Mean cross-entropy of the gold head over the scored dependents."""
    s = _masked_scores(scores, batch)
    scored = batch.gold >= 0
    return nn.functional.cross_entropy(s[scored], batch.gold[scored])


@dataclass
class ProbeRun:
    """A trained probe: its dev UAS (fraction), per-epoch training loss, counts, and its right heads per dev
    sentence (``right[sentence]``, for the bootstrap over sentences)."""

    name: str
    probe: nn.Module | None
    uas: float
    losses: list[float] = field(default_factory=list)
    n_scored: int = 0
    right: np.ndarray | None = None


def train_probe(
    probe: nn.Module,
    train: ProbeData,
    *,
    epochs: int = 10,
    lr: float = 1e-2,
    batch_size: int = 32,
    weight_decay: float = 0.0,
    seed: int = 0,
    progress: bool = True,
    desc: str = "probe",
) -> list[float]:
    """Train ``probe`` for a fixed number of ``epochs`` (the book's training loop, constant learning rate,
    decoupled ``weight_decay``); returns the mean loss per scored word of each epoch."""
    if train.n_scored == 0:
        raise EmptyDataError("no scored words in the training data")
    batches = make_probe_batches(train, batch_size)
    rng = np.random.default_rng(seed)
    order = [[batches[k] for k in rng.permutation(len(batches)) if bool((batches[k].gold >= 0).any())]
             for _ in range(epochs)]

    def loss_fn(model: nn.Module, batch: ProbeBatch):
        return probe_loss(model(batch), batch), {"n": int((batch.gold >= 0).sum())}

    log = fit(probe, order, loss_fn, Recipe(lr=lr, weight_decay=weight_decay, schedule="constant", fused=False),
              progress=progress, desc=desc)
    return [entry["loss"] for entry in log.history]


def predict_heads(probe: nn.Module, data: ProbeData, batch_size: int = 64) -> list[np.ndarray]:
    """The probe's head for every word of every sentence (argmax over candidates; ``-1`` for one-word sentences)."""
    order = sorted(range(len(data)), key=lambda s: len(data.heads[s]))
    out: list[np.ndarray | None] = [None] * len(data)
    probe.eval()
    with torch.no_grad():
        for start, batch in zip(range(0, len(data), batch_size), make_probe_batches(data, batch_size)):
            s = _masked_scores(probe(batch), batch)
            pred = s.argmax(-1)
            pred[~torch.isfinite(s.max(-1).values)] = -1
            for b, idx in enumerate(order[start : start + batch_size]):
                out[idx] = pred[b, : len(data.heads[idx])].numpy()
    return out  # type: ignore[return-value]


def uas(predicted: Sequence[np.ndarray], data: ProbeData) -> float:
    """Unlabelled attachment score: share of scored words whose predicted head is the gold head."""
    right = int(sentence_right(predicted, data).sum())
    total = data.n_scored
    if total == 0:
        raise EmptyDataError("no scored words")
    return right / total


def sentence_right(predicted: Sequence[np.ndarray], data: ProbeData) -> np.ndarray:
    """Right heads per sentence (``right[sentence]``): the numerators of the per-sentence bootstrap of UAS."""
    return np.array([int(((p == h) & (h >= 0)).sum()) for p, h in zip(predicted, data.heads)], dtype=np.int64)


def sentence_scored(data: ProbeData) -> np.ndarray:
    """Scored words per sentence (words whose gold head is a word): the denominators of UAS."""
    return np.array([int((h >= 0).sum()) for h in data.heads], dtype=np.int64)


def right_branching_predictions(data: ProbeData) -> list[np.ndarray]:
    """The right-branching baseline's heads: word ``j``'s head is ``j + 1`` (none for the last word)."""
    out = []
    for h in data.heads:
        p = np.arange(1, len(h) + 1)
        p[-1] = -1
        out.append(p)
    return out


def attention_weights_table(probe: AttentionOnlyProbe, n_layers: int, n_heads: int):
    """The attention-only probe's weights per head (DataFrame), strongest first.

    Columns: label (1-based ``layer-head``), layer, head; ``w_head_to_dep`` and
    ``u_dep_to_head``: the weights on the (RMS-scaled, :func:`attention_scale`) attention
    from the candidate head to the dependent and from the dependent to the candidate head,
    i.e. the change in score per typical amount of that head's attention, comparable
    across heads; ``raw_w``/``raw_u``: the same per unit of attention (the paper's
    ``w_k``, ``u_k``); ``weight``: the larger of the two scaled weights (the sort key).
    """
    import pandas as pd

    w = probe.w.detach().numpy().reshape(n_layers, n_heads)
    u = probe.u.detach().numpy().reshape(n_layers, n_heads)
    raw_w, raw_u = (x.reshape(n_layers, n_heads) for x in probe.raw_weights())
    rows = [
        {"label": head_label(l, h), "layer": l + 1, "head": h + 1, "w_head_to_dep": float(w[l, h]),
         "u_dep_to_head": float(u[l, h]), "raw_w": float(raw_w[l, h]), "raw_u": float(raw_u[l, h]),
         "weight": float(max(w[l, h], u[l, h]))}
        for l in range(n_layers) for h in range(n_heads)
    ]
    return pd.DataFrame(rows).sort_values("weight", ascending=False, kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# the random-init baseline model
# ---------------------------------------------------------------------------------------------
def random_init_copy(loaded: LoadedModel, seed: int = 0) -> LoadedModel:
    """A copy of ``loaded`` whose transformer layers (and pooler) are freshly initialised, seeded.

    The embeddings module (word-piece, position and segment embeddings and their
    LayerNorm) is copied from ``loaded``: Clark §5's "pretrained word/positional
    embeddings but randomly initialized other weights". Initialisation is the model
    class's own (``config.initializer_range``); eager attention as in ``loaded``.
    """
    config = copy.deepcopy(loaded.model.config)
    config._attn_implementation = "eager"
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        fresh = type(loaded.model)(config)
    finally:
        torch.random.set_rng_state(state)
    fresh.embeddings.load_state_dict(loaded.model.embeddings.state_dict())
    device = next(loaded.model.parameters()).device
    fresh.eval().to(device)
    return wrap_model(fresh, loaded.tokenizer, name=f"{loaded.name} [random init except embeddings, seed {seed}]")


# ---------------------------------------------------------------------------------------------
# the whole of Table 3
# ---------------------------------------------------------------------------------------------
def _learning_rates(lr: float | dict | None) -> dict[str, float]:
    rates = dict(LEARNING_RATES)
    if isinstance(lr, dict):
        unknown = set(lr) - set(rates)
        if unknown:
            raise ParameterError(f"unknown probes in lr: {sorted(unknown)}; known: {sorted(rates)}")
        rates.update(lr)
    elif lr is not None:
        rates = {k: float(lr) for k in rates}
    return rates


def run_probes(
    loaded: LoadedModel,
    train_sentences: Sequence[Sentence],
    dev_sentences: Sequence[Sentence],
    *,
    word_vectors: str = "glove",
    glove=None,
    max_tokens: int = 128,
    batch_size: int = 32,
    epochs: int = 8,
    lr: float | dict | None = None,
    probe_batch_size: int = 32,
    hidden: int = 64,
    exclude_punct: bool = False,
    random_init: bool = True,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Clark §5 Table 3 on ``loaded``: trains every probe on ``train_sentences``, scores UAS on ``dev_sentences``.

    ``lr``: ``None`` uses :data:`LEARNING_RATES`, a float sets every probe's, a dict
    overrides some. The random-init row uses a :func:`random_init_copy` seeded with
    ``seed`` and the ``attn_words`` learning rate. Every probe is trained with the same
    seed and ``epochs``. The maps are extracted in memory (:func:`~attnbook.studies.clark.probe_data.extract_word_maps`);
    :func:`probe_result_arrays` caches the summary.

    Returns a dict: ``uas`` (row -> UAS in percent, rows of :data:`TABLE3_NAMES` in Table 3's order),
    ``per_sentence`` (``scored[sentence]`` and, per row, ``right[sentence]`` on the dev sentences, in input
    order: every probe is scored on the same sentences, so differences can be bootstrapped paired),
    ``weights`` (attention-only probe weights,
    :func:`attention_weights_table`), ``losses`` (row -> per-epoch training loss),
    ``info`` (train/dev counts, OOV rates, map memory, learning rates) and ``probes``
    (the trained modules).
    """
    rates = _learning_rates(lr)

    def data_for(model: LoadedModel, sents: Sequence[Sentence], what: str) -> tuple[ProbeData, dict]:
        return extract_probe_data(
            model, sents, word_vectors=word_vectors, glove=glove, max_tokens=max_tokens, batch_size=batch_size,
            exclude_punct=exclude_punct, progress=progress, desc=f"{what} maps (§5)",
        )

    def fit(name: str, probe: nn.Module, train: ProbeData, dev: ProbeData, rate_of: str) -> ProbeRun:
        losses = train_probe(probe, train, epochs=epochs, lr=rates[rate_of], batch_size=probe_batch_size,
                             seed=seed, progress=progress, desc=TABLE3_NAMES[name])
        predicted = predict_heads(probe, dev)
        return ProbeRun(name, probe, uas(predicted, dev), losses, dev.n_scored, sentence_right(predicted, dev))

    train, train_info = data_for(loaded, train_sentences, "train")
    dev, dev_info = data_for(loaded, dev_sentences, "dev")
    standardize = vector_standardizer(train)
    train, dev = standardize(train), standardize(dev)
    n_maps = loaded.n_layers * loaded.n_heads
    runs: dict[str, ProbeRun] = {}

    rb = right_branching_predictions(dev)
    runs["right_branching"] = ProbeRun("right_branching", None, uas(rb, dev), n_scored=dev.n_scored,
                                       right=sentence_right(rb, dev))
    torch.manual_seed(seed)
    runs["distances_words"] = fit("distances_words", DistanceMLP(train.dim, hidden), train, dev, "distances_words")
    if random_init:
        rnd = random_init_copy(loaded, seed)
        rtrain = standardize(data_for(rnd, train_sentences, "random-init train")[0])
        rdev = standardize(data_for(rnd, dev_sentences, "random-init dev")[0])
        probe = AttentionWordsProbe(n_maps, rtrain.dim, attention_scale(rtrain))
        runs["random_init_attn_words"] = fit("random_init_attn_words", probe, rtrain, rdev, "attn_words")
        del rtrain, rdev, rnd
    scale = attention_scale(train)
    runs["attn"] = fit("attn", AttentionOnlyProbe(n_maps, scale), train, dev, "attn")
    runs["attn_words"] = fit("attn_words", AttentionWordsProbe(n_maps, train.dim, scale), train, dev, "attn_words")

    order = [k for k in TABLE3_NAMES if k in runs]
    return {
        "uas": {k: 100 * runs[k].uas for k in order},
        "per_sentence": {"scored": sentence_scored(dev), **{k: runs[k].right for k in order}},
        "weights": attention_weights_table(runs["attn"].probe, loaded.n_layers, loaded.n_heads),
        "losses": {k: runs[k].losses for k in order},
        "info": {"train": train_info, "dev": dev_info, "word_vectors": word_vectors, "epochs": epochs,
                 "learning_rates": rates, "n_scored_dev": dev.n_scored},
        "probes": {k: runs[k].probe for k in order},
    }


@cache.memoized("probe_results", ignore=("progress",))
def probe_result_arrays(loaded: LoadedModel, train_sentences: Sequence[Sentence], dev_sentences: Sequence[Sentence],
                        *, glove=None, progress: bool = True, **kwargs) -> dict[str, np.ndarray]:
    """:func:`run_probes`' summary as arrays (UAS per row, per-sentence counts, losses, the attention-only probe's
    weights, the info record), cached by model, sentences, GloVe table and every keyword argument."""
    res = run_probes(loaded, train_sentences, dev_sentences, glove=glove, progress=progress, **kwargs)
    attn = res["probes"]["attn"]
    out = {
        "rows": np.array(list(res["uas"])), "uas": np.array(list(res["uas"].values()), dtype=np.float64),
        "attn_w": attn.w.detach().numpy(), "attn_u": attn.u.detach().numpy(),
        "attn_scale": attn.alpha_scale.numpy(), "info": np.array(json.dumps(res["info"], sort_keys=True)),
    }
    out.update({f"losses_{k}": np.asarray(v, dtype=np.float64) for k, v in res["losses"].items()})
    out.update({f"right_{k}": np.asarray(v, dtype=np.int64) for k, v in res["per_sentence"].items()})
    return out


def cached_run_probes(
    loaded: LoadedModel,
    train_sentences: Sequence[Sentence],
    dev_sentences: Sequence[Sentence],
    *,
    glove=None,
    progress: bool = True,
    **kwargs,
) -> dict:
    """:func:`run_probes` with its whole summary cached (:func:`probe_result_arrays`), so re-running a chapter
    costs no training. The result has :func:`run_probes`' keys; ``probes`` holds only the attention-only probe,
    rebuilt from its weights (the other probes are not kept)."""
    a = probe_result_arrays(loaded, train_sentences, dev_sentences, glove=glove, progress=progress, **kwargs)
    rows = [str(r) for r in a["rows"]]
    attn = AttentionOnlyProbe(loaded.n_layers * loaded.n_heads, a["attn_scale"])
    with torch.no_grad():
        attn.w.copy_(torch.as_tensor(a["attn_w"]))
        attn.u.copy_(torch.as_tensor(a["attn_u"]))
    return {
        "uas": {k: float(v) for k, v in zip(rows, a["uas"])},
        "weights": attention_weights_table(attn, loaded.n_layers, loaded.n_heads),
        "losses": {k: [float(x) for x in a[f"losses_{k}"]] for k in rows},
        "per_sentence": {k: np.asarray(a[f"right_{k}"]) for k in ["scored", *rows]},
        "info": json.loads(str(a["info"])),
        "probes": {"attn": attn},
    }


# ---------------------------------------------------------------------------------------------
# what the chapter shows of a run
# ---------------------------------------------------------------------------------------------
def table3(results: dict):
    """Clark Table 3 measured here as a DataFrame: model (readable name), key, this run's UAS (percent).

    (:func:`attnbook.studies.clark.paper.table3` adds the paper's column.)
    """
    import pandas as pd

    return pd.DataFrame(
        [{"model": name, "key": k, "uas": results["uas"].get(k, float("nan"))} for k, name in TABLE3_NAMES.items()]
    )


def probe_info(results: dict) -> dict:
    """The run's key counts: training sentences, scored dev words, epochs and the GloVe OOV rate on dev."""
    info = results["info"]
    return {"train_sentences": info["train"]["n_sentences"], "dev_scored_words": info["n_scored_dev"],
            "epochs": info["epochs"], "glove_oov_dev": info["dev"].get("oov_rate")}


def describe(results: dict) -> str:
    """One line on what the probes were trained and scored on."""
    info = probe_info(results)
    oov = info["glove_oov_dev"]
    return (f"trained on {info['train_sentences']} sentences for {info['epochs']} epochs; "
            f"scored {info['dev_scored_words']} dev words" + (f"; GloVe OOV rate on dev {oov:.1%}" if oov else ""))


def top_heads(weights, accuracy, n: int = 10):
    """The ``n`` heads the attention-only probe weights most, with the Table 1 relations each is best at.

    ``weights`` is :func:`attention_weights_table`'s frame, ``accuracy`` the
    :class:`attnbook.studies.clark.syntax.HeadAccuracy` of the same model (Clark §4.2).
    Columns: label, w_head_to_dep, u_dep_to_head, "best head at (Table 1)".
    """

    best_for = best_heads_by_relation(accuracy)
    top = weights.head(n).copy()
    top["best head at (Table 1)"] = [", ".join(best_for.get(x, [])) for x in top.label]
    return top[["label", "w_head_to_dep", "u_dep_to_head", "best head at (Table 1)"]]


def row_peaks(loaded: LoadedModel, example, seed: int = 0) -> dict[str, float]:
    """Mean largest weight in a row of the example's word maps, trained vs random-init model (Clark §5 baseline).

    ``example`` is a :class:`attnbook.studies.clark.wordmaps.WordMapExample` of ``loaded``; the
    random-init model is :func:`random_init_copy` with ``seed``. Flat rows (near ``1 / n_words``)
    say little about which word is next to which.
    """
    rnd = random_init_copy(loaded, seed)
    rnd_maps = token_to_word_attention(collect_maps(rnd, [example.encoded])[0], example.encoded.words)
    return {name: float(m.max(-1).mean()) for name, m in (("trained", example.word_maps), ("random init", rnd_maps))}
