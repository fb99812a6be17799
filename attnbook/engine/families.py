"""Where the attention heads are, for every encoder family the book supports: one table.

transformers 5 dropped ``head_mask`` and ``prune_heads``, and every family names its attention modules
differently, so the head machinery (:mod:`attnbook.engine.interventions` and its hooks, :mod:`attnbook.engine.pruning`,
:mod:`attnbook.engine.extract`) needs, per family, a map of the model: the base encoder inside
a head model, the attention layers in order of depth, and per layer the query/key/value projections (separate
``nn.Linear`` modules, or one fused ``qkv`` projection) and the attention *output* projection ``W_o`` that reads
the concatenated head outputs ``[batch, seq, heads * head_size]``. That projection is the one place where every
head's contribution is a separate slice whatever the attention implementation (eager, SDPA, flash) computes
inside, which is why the whole head machinery hooks it.

One frozen :class:`Family` per family, all in :data:`FAMILIES`. Per family (base encoder . layers -> q/k/v ->
``W_o``, module paths relative to one layer):

* BERT ``bert.encoder.layer[i]`` -> ``attention.self.query/key/value`` -> ``attention.output.dense``; token types.
* RoBERTa ``roberta.encoder.layer[i]``, same modules as BERT; no token types; ``<s>`` classifier pooling.
* XLM-RoBERTa: RoBERTa's architecture and base prefix ``roberta``; SentencePiece unigram vocabulary.
* DistilBERT ``distilbert.transformer.layer[i]`` -> ``attention.q_lin/k_lin/v_lin`` -> ``attention.out_lin``;
  head count in ``n_heads``.
* ALBERT ``albert.encoder.albert_layer_groups[g].albert_layers[j]`` -> ``attention.query/key/value`` ->
  ``attention.dense``; shared across depths (below).
* ELECTRA (discriminator) ``electra.encoder.layer[i]``, same modules as BERT.
* MPNet ``mpnet.encoder.layer[i]`` -> ``attention.attn.q/k/v`` -> ``attention.attn.o``; shared position bias.
* DeBERTa-v2/v3 ``deberta.encoder.layer[i]`` -> ``attention.self.query_proj/key_proj/value_proj`` ->
  ``attention.output.dense``; disentangled position projections.
* ModernBERT ``model.layers[i]`` -> ``attn.Wqkv`` (fused) -> ``attn.Wo``; global and local layers.

What needs care:

* **ALBERT** shares its layer weights: ``num_hidden_groups`` groups of ``inner_group_num`` layers serve
  ``num_hidden_layers`` depths (usually one layer applied 12 times). The table lists one entry per *application*
  (depth), so ``[layer, head]`` arrays have ``num_hidden_layers * inner_group_num`` rows like the model's
  ``output_attentions``. The same modules then appear at several depths: a gate on head ``[d, h]`` acts only at
  depth ``d`` (the hook counts the calls of the shared module, and a pre-hook on the base model resets the count
  at every forward). Pruning removes weights, so it acts at every depth at once (see :func:`attnbook.engine.pruning.prune_heads`).
* **MPNet** adds a relative-position bias ``[batch, head, query, key]`` computed *once* by the encoder from an
  embedding with one column per head and passed to every layer (``position_bias``, 3rd argument of the
  self-attention); pruning slices it per layer with a pre-hook.
* **DeBERTa-v2/v3** disentangled attention: extra per-head projections of the relative-position embeddings
  (``pos_key_proj``/``pos_query_proj`` unless ``share_att_key``, in which case the query/key projections are
  reused). Its mask also masks the padded *query* rows (they attend uniformly to every key).
* **ModernBERT** has one fused ``Wqkv`` (rows: all query heads, then all key heads, then all value heads), rotary
  positions, no biases by default, and alternates global (``full_attention``) and local layers
  (``sliding_attention``: keys within ``config.sliding_window = local_attention // 2`` positions of the query).
  Its classifier pools ``[CLS]`` or the mean over tokens (``config.classifier_pooling``).

Adding a family = adding a :class:`Family` entry to :data:`FAMILIES` below (the names are read from
``transformers/models/<family>/modeling_*.py``); ``tests/test_families.py`` then checks it once a tiny model of
it is planted in ``tests/tiny_families.py``.

Labels a reader sees are 1-based ``layer-head`` (``"2-3"``); arrays are 0-based ``[layer, head]``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from torch import nn

from attnbook.core.errors import ModelError
from attnbook.core.heads import head_label

#: attribute set on an attention module once heads were pruned: the original head index of each remaining slice
#: (``-1`` marks the inert placeholder a layer keeps when all its heads were pruned)
SLICES_ATTR = "_attnbook_slices"


class UnsupportedModelError(ModelError):
    """The model is not one of the encoder families of :data:`FAMILIES` (a decoder, an encoder-decoder, unknown)."""


@dataclass(frozen=True)
class Family:
    """Where one encoder family keeps its attention heads. Dotted paths are attribute paths (``"encoder.layer"``).

    ``layers``: from the base encoder to the ``nn.ModuleList`` of layers, or a callable ``base -> [layer per
    depth]`` (ALBERT). ``attention``: from a layer to the module that owns q/k/v and the head-count attributes.
    ``query``/``key``/``value``: names of the separate projections on that module, or ``qkv`` for a fused one.
    ``output``: from a layer to the attention output projection ``W_o`` (an ``nn.Linear`` whose input is
    ``[batch, seq, heads * head_size]``, head ``h`` in columns ``h*head_size:(h+1)*head_size``).
    ``head_rows``: further per-head output-row projections on the attention module (DeBERTa positional ones).
    ``count_attrs``/``size_attrs``: attributes of the attention module holding the head count / ``heads *
    head_size``, updated by pruning. ``head_bias``: ``(kwarg, position)`` of a per-head bias
    ``[batch, head, q, k]`` the encoder passes to every layer's attention module (MPNet).
    """

    name: str
    label: str
    model_types: tuple[str, ...]
    base_attr: str
    layers: str | Callable[[nn.Module], list]
    attention: str
    output: str
    query: str | None = None
    key: str | None = None
    value: str | None = None
    qkv: str | None = None
    head_rows: tuple[str, ...] = ()
    count_attrs: tuple[str, ...] = ("num_attention_heads",)
    size_attrs: tuple[str, ...] = ("all_head_size",)
    head_bias: tuple[str, int] | None = None
    token_type_ids: bool | Callable[[Any], bool] = False
    mlm_class: str = ""
    mlm_head: tuple[str, ...] = ()
    classifier_class: str = ""
    classifier_head: tuple[str, ...] = ()
    pooling: str = "first"
    shared_layers: bool = False
    layer_kind: Callable[[Any, int], str] | None = None
    notes: str = ""

    # ------------------------------------------------------------------ config-derived facts
    def n_heads(self, config) -> int:
        """Heads per layer of the original (unpruned) model."""
        return int(config.num_attention_heads)

    def head_size(self, config) -> int:
        """Width of one head's query/key/value/context vector."""
        size = getattr(config, "attention_head_size", None) if self.name == "deberta-v2" else None
        return int(size or config.hidden_size // config.num_attention_heads)

    def takes_token_type_ids(self, config) -> bool:
        """Whether the model has a segment (token type) embedding to feed."""
        return bool(self.token_type_ids(config) if callable(self.token_type_ids) else self.token_type_ids)

    def pooling_of(self, config) -> str:
        """How the sequence classifier pools: ``"first"`` token (``[CLS]``/``<s>``) or ``"mean"`` over tokens."""
        if self.pooling == "config":
            return "first" if getattr(config, "classifier_pooling", "cls") == "cls" else "mean"
        return self.pooling

    def kind_of(self, config, depth: int) -> str:
        """``"global"`` (every token sees every token) or ``"local"`` (sliding window) attention at ``depth``."""
        return self.layer_kind(config, depth) if self.layer_kind else "global"

    def window_of(self, config, depth: int) -> int | None:
        """Largest ``|query - key|`` a local layer allows (``None``: global)."""
        return int(config.sliding_window) if self.kind_of(config, depth) == "local" else None


def _albert_layers(base: nn.Module) -> list:
    """ALBERT's layer per depth: depth ``i`` runs group ``int(i / (L / G))``, each of its inner layers in turn."""
    cfg = base.config
    n, groups = cfg.num_hidden_layers, cfg.num_hidden_groups
    out = []
    for i in range(n):
        out.extend(base.encoder.albert_layer_groups[int(i / (n / groups))].albert_layers)
    return out


def _modernbert_kind(config, depth: int) -> str:
    return "local" if config.layer_types[depth] == "sliding_attention" else "global"


_BERT_LIKE = {"layers": "encoder.layer", "attention": "attention.self", "output": "attention.output.dense",
              "query": "query", "key": "key", "value": "value"}

FAMILIES: tuple[Family, ...] = (
    Family("bert", "BERT", ("bert",), "bert", **_BERT_LIKE, token_type_ids=True,
           mlm_class="BertForMaskedLM", mlm_head=("cls",),
           classifier_class="BertForSequenceClassification", classifier_head=("bert.pooler", "classifier"),
           notes="[CLS] ... [SEP] (WordPiece); pooler = dense+tanh over [CLS]"),
    Family("roberta", "RoBERTa", ("roberta",), "roberta", **_BERT_LIKE,
           mlm_class="RobertaForMaskedLM", mlm_head=("lm_head",),
           classifier_class="RobertaForSequenceClassification", classifier_head=("classifier",),
           notes="<s> ... </s> (byte-level BPE); positions start after padding_idx; no token types"),
    Family("xlm-roberta", "XLM-RoBERTa", ("xlm-roberta",), "roberta", **_BERT_LIKE,
           mlm_class="XLMRobertaForMaskedLM", mlm_head=("lm_head",),
           classifier_class="XLMRobertaForSequenceClassification", classifier_head=("classifier",),
           notes="RoBERTa architecture (base prefix 'roberta') with a SentencePiece unigram vocabulary"),
    Family("distilbert", "DistilBERT", ("distilbert",), "distilbert", "transformer.layer", "attention",
           "attention.out_lin", query="q_lin", key="k_lin", value="v_lin", count_attrs=("n_heads",),
           size_attrs=(), mlm_class="DistilBertForMaskedLM",
           mlm_head=("vocab_transform", "vocab_layer_norm", "vocab_projector"),
           classifier_class="DistilBertForSequenceClassification", classifier_head=("pre_classifier", "classifier"),
           notes="W_o lives inside the self-attention module; config attrs n_heads/dim/n_layers"),
    Family("albert", "ALBERT", ("albert",), "albert", _albert_layers, "attention", "attention.dense",
           query="query", key="key", value="value", token_type_ids=True, shared_layers=True,
           mlm_class="AlbertForMaskedLM", mlm_head=("predictions",),
           classifier_class="AlbertForSequenceClassification", classifier_head=("albert.pooler", "classifier"),
           notes="one layer (per group) applied at every depth: gates are per depth, pruning is for all depths"),
    Family("electra", "ELECTRA", ("electra",), "electra", **_BERT_LIKE, token_type_ids=True,
           mlm_class="ElectraForMaskedLM", mlm_head=("generator_predictions", "generator_lm_head"),
           classifier_class="ElectraForSequenceClassification", classifier_head=("classifier",),
           notes="discriminator = ElectraForPreTraining (replaced-token head 'discriminator_predictions'); "
                 "ElectraForMaskedLM is the generator-style MLM head"),
    Family("mpnet", "MPNet", ("mpnet",), "mpnet", "encoder.layer", "attention.attn", "attention.attn.o",
           query="q", key="k", value="v", head_bias=("position_bias", 2),
           mlm_class="MPNetForMaskedLM", mlm_head=("lm_head",),
           classifier_class="MPNetForSequenceClassification", classifier_head=("classifier",),
           notes="<s> ... </s> with a WordPiece vocabulary; relative-position bias shared by all layers"),
    Family("deberta-v2", "DeBERTa-v2/v3", ("deberta-v2",), "deberta", "encoder.layer", "attention.self",
           "attention.output.dense", query="query_proj", key="key_proj", value="value_proj",
           head_rows=("pos_key_proj", "pos_query_proj"),
           token_type_ids=lambda config: getattr(config, "type_vocab_size", 0) > 0,
           mlm_class="DebertaV2ForMaskedLM", mlm_head=("lm_predictions", "cls"),
           classifier_class="DebertaV2ForSequenceClassification", classifier_head=("pooler", "classifier"),
           notes="disentangled content/position attention; MLM head 'cls' when config.legacy else "
                 "'lm_predictions'; v3 has no token types (type_vocab_size=0)"),
    Family("modernbert", "ModernBERT", ("modernbert",), "model", "layers", "attn", "attn.Wo", qkv="Wqkv",
           count_attrs=(), size_attrs=(), mlm_class="ModernBertForMaskedLM", mlm_head=("head", "decoder"),
           classifier_class="ModernBertForSequenceClassification", classifier_head=("head", "classifier"),
           pooling="config", layer_kind=_modernbert_kind,
           notes="fused Wqkv, rotary positions, no biases; global every n-th layer, others sliding-window"),
)

#: names of the supported families, in table order
SUPPORTED: tuple[str, ...] = tuple(f.name for f in FAMILIES)
_BY_TYPE: dict[str, Family] = {t: f for f in FAMILIES for t in f.model_types}


def _supported_text() -> str:
    return ", ".join(f"{f.label} ({'/'.join(f.model_types)})" for f in FAMILIES)


def _unsupported(model_type: str, why: str) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"model type '{model_type}' is {why}; the head machinery supports these encoder families: "
        f"{_supported_text()}.\n  To add an encoder family, write a `Family` entry (model types, base encoder, "
        "layers, q/k/v or fused qkv projection, attention output projection, head-count attributes) in "
        "FAMILIES in attnbook/engine/families.py."
    )


def _config_of(model_or_config) -> Any:
    if isinstance(model_or_config, str):  # a config.model_type
        from types import SimpleNamespace

        return SimpleNamespace(model_type=model_or_config)
    model = getattr(model_or_config, "model", None)  # a LoadedModel-like wrapper
    if model is not None and hasattr(model, "config") and not hasattr(model_or_config, "config"):
        model_or_config = model
    return getattr(model_or_config, "config", model_or_config)


def family_of(model_or_config) -> Family:
    """The :class:`Family` of a model (any head model or the base encoder) or of its config.

    Raises :class:`UnsupportedModelError` for decoders, encoder-decoders and unknown model types.
    """
    config = _config_of(model_or_config)
    model_type = getattr(config, "model_type", None)
    if not model_type:
        raise UnsupportedModelError(f"{type(model_or_config).__name__} has no config.model_type; "
                                    f"supported encoder families: {_supported_text()}")
    if getattr(config, "is_encoder_decoder", False):
        raise _unsupported(model_type, "an encoder-decoder")
    family = _BY_TYPE.get(model_type)
    if family is None:
        try:
            from transformers.models.auto.modeling_auto import (
                MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                MODEL_FOR_MASKED_LM_MAPPING_NAMES,
            )
            decoder = (model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
                       and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES)
        except ImportError:  # pragma: no cover - transformers layout changed
            decoder = False
        raise _unsupported(model_type, "a decoder (causal language model)" if decoder else "not a known encoder")
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        raise _unsupported(model_type, "configured as a decoder (is_decoder / add_cross_attention)")
    return family


# ---------------------------------------------------------------------------------------------- resolving modules
def get_path(root: nn.Module, dotted: str) -> Any:
    """``root.a.b.c`` for ``dotted = "a.b.c"`` (``None`` if an attribute is missing)."""
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def set_path(root: nn.Module, dotted: str, value: nn.Module) -> None:
    """Replace the submodule at ``dotted`` (relative to ``root``) by ``value``."""
    parent, _, name = dotted.rpartition(".")
    setattr(get_path(root, parent) if parent else root, name, value)


def base_model(model: nn.Module) -> nn.Module:
    """The base encoder inside any head model (``model.bert``, ``model.roberta``, ``model.model``...), or the
    model itself if it is the base encoder. Uses the class's ``base_model_prefix`` like transformers does."""
    family = family_of(model)
    prefix = getattr(model, "base_model_prefix", None) or family.base_attr
    base = getattr(model, prefix, None)
    if base is None and prefix != family.base_attr:
        base = getattr(model, family.base_attr, None)
    return model if base is None else base


@dataclass(frozen=True)
class Site:
    """One attention layer at one depth. For shared layers (ALBERT) several sites hold the same modules.

    ``path`` is the dotted path of ``layer`` inside the base model (for messages); ``kind``/``window`` give
    global vs local attention (``window``: largest allowed ``|query - key|``).
    """

    depth: int
    path: str
    layer: nn.Module
    attention: nn.Module
    output: nn.Linear
    query: nn.Linear | None
    key: nn.Linear | None
    value: nn.Linear | None
    qkv: nn.Linear | None
    kind: str
    window: int | None


def layer_modules(model: nn.Module) -> list[nn.Module]:
    """The attention layer module of each depth, in order (shared modules repeat, ALBERT)."""
    family = family_of(model)
    base = base_model(model)
    if callable(family.layers):
        return list(family.layers(base))
    layers = get_path(base, family.layers)
    if layers is None:
        raise ModelError(f"{family.label}: no '{family.layers}' in {type(base).__name__}; the transformers "
                         "version may have renamed it; fix the Family entry in attnbook/engine/families.py")
    return list(layers)


def sites(model: nn.Module) -> list[Site]:
    """Every attention layer of ``model`` with its projections, one :class:`Site` per depth."""
    family = family_of(model)
    base = base_model(model)
    names = {id(m): n for n, m in base.named_modules()}
    out = []
    for depth, layer in enumerate(layer_modules(model)):
        attention = get_path(layer, family.attention)
        output = get_path(layer, family.output)
        proj = {k: get_path(attention, getattr(family, k)) if getattr(family, k) and attention is not None
                else None for k in ("query", "key", "value", "qkv")}
        missing = [what for what, mod in (("attention", attention), ("output", output)) if mod is None]
        missing += [k for k in ("query", "key", "value", "qkv") if getattr(family, k) and proj[k] is None]
        if missing:
            raise ModelError(f"{family.label} layer {depth}: cannot find {', '.join(missing)} "
                             f"({type(layer).__name__}); fix the Family entry in attnbook/engine/families.py")
        out.append(Site(depth, names.get(id(layer), "?"), layer, attention, output, proj["query"], proj["key"],
                        proj["value"], proj["qkv"], family.kind_of(base.config, depth),
                        family.window_of(base.config, depth)))
    return out


def model_shape(model: nn.Module) -> tuple[int, int, int]:
    """``(layers, heads, head_size)`` of the original model (depths for ALBERT; heads before any pruning): the
    book's one reading of a model's head shape. A model outside the family table that has BERT's config fields (it
    runs through transformers' attention interface, :mod:`attnbook.engine.interventions`) is read from its config;
    any other raises :class:`UnsupportedModelError`."""
    try:
        family = family_of(model)
    except UnsupportedModelError:
        config = _config_of(model)
        layers, heads = getattr(config, "num_hidden_layers", None), getattr(config, "num_attention_heads", None)
        if not isinstance(layers, int) or not isinstance(heads, int):
            raise
        return layers, heads, int(getattr(config, "hidden_size", 0)) // heads
    config = _config_of(model)
    return len(layer_modules(model)), family.n_heads(config), family.head_size(config)


def slices_of(site: Site, n_heads: int) -> tuple[int, ...]:
    """Original head index of each ``head_size`` slice the output projection of ``site`` reads (``-1``: an inert
    placeholder left in a layer whose heads were all pruned)."""
    kept = site.attention.__dict__.get(SLICES_ATTR)
    return tuple(range(n_heads)) if kept is None else tuple(kept)


def describe(model: nn.Module, tokenizer: Any = None) -> dict:
    """What the head machinery sees of ``model``: family, layers, heads (per layer once pruned), head size,
    layer kinds, pooling, MLM class, and, if a tokenizer is given, the special tokens and their roles."""
    family = family_of(model)
    config = _config_of(model)
    n_layers, n_heads, size = model_shape(model)
    per_layer = [len([h for h in slices_of(s, n_heads) if h >= 0]) for s in sites(model)]
    info = {
        "family": family.name, "label": family.label, "model_type": config.model_type,
        "class": type(model).__name__, "layers": n_layers,
        "heads": n_heads if all(n == n_heads for n in per_layer) else per_layer,
        "head_size": size, "hidden_size": int(config.hidden_size),
        "shared_layers": family.shared_layers,
        "layer_kinds": [family.kind_of(config, d) for d in range(n_layers)],
        "token_type_ids": family.takes_token_type_ids(config), "pooling": family.pooling_of(config),
        "mlm_class": family.mlm_class, "classifier_class": family.classifier_class,
        "first_head": head_label(0, 0), "last_head": head_label(n_layers - 1, n_heads - 1),
        "notes": family.notes,
    }
    if family.layer_kind:
        info["window"] = int(config.sliding_window)
    if tokenizer is not None:
        info["special_tokens"] = special_tokens(tokenizer)
    return info


def special_tokens(tokenizer: Any) -> dict:
    """``{role: {"token", "id"}}`` for the tokenizer's special tokens (cls, sep, pad, mask, unk, bos, eos), plus
    ``"starts"``/``"ends"``: the tokens it puts around a single sentence."""
    roles: dict[str, Any] = {}
    for role in ("cls", "sep", "pad", "mask", "unk", "bos", "eos"):
        token = getattr(tokenizer, f"{role}_token", None)
        if token is not None:
            roles[role] = {"token": str(token), "id": tokenizer.convert_tokens_to_ids(str(token))}
    ids = tokenizer("a")["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    roles["starts"], roles["ends"] = tokens[0], tokens[-1]
    return roles


def _deberta_logits(mlm: nn.Module, hidden):
    if getattr(mlm.config, "legacy", True) and hasattr(mlm, "cls"):
        return mlm.cls(hidden)
    return mlm.lm_predictions(hidden, mlm.deberta.embeddings.word_embeddings)


#: per family, the masked-LM model's head from final hidden states to vocabulary logits (as its own forward does)
_MLM_LOGITS: dict[str, Callable[[nn.Module, Any], Any]] = {
    "bert": lambda m, h: m.cls(h),
    "roberta": lambda m, h: m.lm_head(h),
    "xlm-roberta": lambda m, h: m.lm_head(h),
    "mpnet": lambda m, h: m.lm_head(h),
    "distilbert": lambda m, h: m.vocab_projector(m.vocab_layer_norm(m.activation(m.vocab_transform(h)))),
    "albert": lambda m, h: m.predictions(h),
    "electra": lambda m, h: m.generator_lm_head(m.generator_predictions(h)),
    "deberta-v2": _deberta_logits,
    "modernbert": lambda m, h: m.decoder(m.head(h)),
}


def mlm_logits(mlm_model: nn.Module, hidden):
    """``logits[..., vocab]`` of ``mlm_model``'s (a family's ``...ForMaskedLM``) head on final hidden states
    ``hidden[..., hidden_size]``: what its forward computes after the encoder."""
    return _MLM_LOGITS[family_of(mlm_model).name](mlm_model, hidden)


def family_table() -> list[Mapping[str, Any]]:
    """The table as rows (for a book page): one dict per family."""
    return [{"family": f.label, "model_types": ", ".join(f.model_types), "base": f.base_attr,
             "layers": f.layers if isinstance(f.layers, str) else "encoder.albert_layer_groups[g].albert_layers",
             "attention": f.attention, "qkv": f.qkv or f"{f.query}/{f.key}/{f.value}", "output": f.output,
             "mlm": f.mlm_class, "notes": f.notes} for f in FAMILIES]
