"""Tiny random encoders of every supported family, with a tokenizer of the family's kind, built offline.

:func:`plant` writes a folder that ``AutoModel*.from_pretrained(folder)`` and
``AutoTokenizer.from_pretrained(folder)`` load, exactly like a downloaded checkpoint: a small randomly initialised
model (3 layers, 4 heads, hidden 32, intermediate 64) and a tokenizer trained with the ``tokenizers`` library on
:data:`SENTENCES`, wrapped in the family's own tokenizer class (which sets the family's normaliser,
pre-tokeniser and special-token template):

* WordPiece with ``##`` continuation: BERT, DistilBERT, ELECTRA (``[CLS] ... [SEP]``), MPNet (``<s> ... </s>``);
* byte-level BPE with ``Ġ`` for spaces: RoBERTa (``<s> ... </s>``), ModernBERT (``[CLS] ... [SEP]``);
* Unigram / SentencePiece style with ``▁``: XLM-R (``<s> ... </s>``), ALBERT and DeBERTa-v3 (``[CLS] ... [SEP]``).

Weights are drawn with a larger ``initializer_range`` than the real models' so that attention patterns are sharp
and masking or disabling a head visibly changes the outputs.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FAMILIES = ["bert", "roberta", "xlm-roberta", "distilbert", "albert", "electra", "mpnet", "deberta-v2",
            "modernbert"]

SENTENCES = [
    "The cat sat on the mat and looked at the door.",
    "A dog chased the ball across the green park.",
    "She reads a book every night before she sleeps.",
    "The children played in the garden until it rained.",
    "He bought fresh bread and cheese at the market.",
    "Our teacher explained the lesson with great patience.",
    "The train to the city leaves at seven in the morning.",
    "They painted the old house white last summer.",
    "My brother plays the guitar in a small band.",
    "The river flows slowly through the quiet valley.",
    "We watched the stars from the top of the hill.",
    "The doctor asked the patient how he was feeling.",
    "Birds sing in the trees when the sun rises.",
    "The students wrote their names on the papers.",
    "Please close the window because it is cold.",
    "The company hired three new engineers this year.",
    "I think the movie was longer than the book.",
    "The old man walked his dog along the beach.",
    "Rain fell on the roofs of the sleeping town.",
    "She wanted to know why the shop was closed.",
    "The lawyer said that the contract was not valid.",
    "Two friends shared a pizza after the game.",
    "The museum opens its doors to visitors at noon.",
    "He forgot his keys, so he waited outside.",
    "The baker who lives next door makes cakes.",
    "Farmers grow wheat and corn in these fields.",
    "The question was harder than the answer seemed.",
    "Every morning the mayor reads the newspaper.",
    "The girls ran quickly to catch the last bus.",
    "Nobody knew where the little boat had gone.",
    "The scientist tested the theory in her laboratory.",
    "Snow covered the mountains during the long winter.",
    "The waiter brought the soup and the salad.",
    "If you study hard, you will pass the exam.",
    "The president gave a speech about the economy.",
    "Their neighbors have a garden full of roses.",
]

# kind, special tokens in vocabulary order, tokenizer class, its special-token keyword arguments
_TOKENIZERS: dict[str, tuple[str, list[str], str, dict]] = {
    "bert": ("wordpiece", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "BertTokenizer", {}),
    "distilbert": ("wordpiece", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "DistilBertTokenizer", {}),
    "electra": ("wordpiece", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "BertTokenizer", {}),
    "mpnet": ("wordpiece", ["<s>", "<pad>", "</s>", "[UNK]", "<mask>"], "MPNetTokenizer", {}),
    "roberta": ("bpe", ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], "RobertaTokenizer", {}),
    "modernbert": ("bpe", ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"], "TokenizersBackend",
                   {"unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                    "mask_token": "[MASK]", "bos_token": "[CLS]", "eos_token": "[SEP]"}),
    "xlm-roberta": ("unigram", ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], "XLMRobertaTokenizer", {}),
    "albert": ("unigram", ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], "AlbertTokenizer", {}),
    "deberta-v2": ("unigram", ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"], "DebertaV2Tokenizer", {}),
}

SHAPE = {"hidden": 32, "layers": 3, "heads": 4, "intermediate": 64, "positions": 128}
INIT = 0.2  # initializer_range: sharp attention in a tiny random model


def _train(kind: str, specials: list[str], lowercase: bool):
    """A ``tokenizers.Tokenizer`` of ``kind`` trained on :data:`SENTENCES` (only its vocabulary is used)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    if kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token=specials[[s.lower() for s in specials].index("[unk]")]))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=220, special_tokens=specials, continuing_subword_prefix="##")
    elif kind == "bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        tok = Tokenizer(models.Unigram())
        if lowercase:
            tok.normalizer = normalizers.Lowercase()
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()])
        unk = next(s for s in specials if "unk" in s.lower())
        trainer = trainers.UnigramTrainer(vocab_size=200, special_tokens=specials, unk_token=unk)
    tok.train_from_iterator(SENTENCES, trainer=trainer)
    return tok


def make_tokenizer(family: str):
    """The family's tokenizer class around a vocabulary trained on :data:`SENTENCES`."""
    import transformers
    from tokenizers import decoders, processors

    kind, specials, cls_name, special_kwargs = _TOKENIZERS[family]
    tok = _train(kind, specials, lowercase=family == "albert")
    model = json.loads(tok.to_str())["model"]
    cls = getattr(transformers, cls_name)
    if cls_name == "TokenizersBackend":  # ModernBERT ships a generic fast tokenizer: BPE + [CLS] ... [SEP]
        cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
            special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
        tok.decoder = decoders.ByteLevel()
        return cls(tokenizer_object=tok, model_input_names=["input_ids", "attention_mask"], **special_kwargs)
    if kind == "wordpiece":
        return cls(vocab=model["vocab"], **special_kwargs)
    if kind == "bpe":
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        return cls(vocab=model["vocab"], merges=merges, **special_kwargs)
    return cls(vocab=[(piece, float(score)) for piece, score in model["vocab"]], **special_kwargs)


def make_config(family: str, tokenizer, shape: dict | None = None, **overrides: Any):
    """A tiny config of ``family`` matching ``tokenizer``'s vocabulary and special-token ids (``shape``: other
    sizes than :data:`SHAPE`, e.g. a benchmark's MiniLM-sized model)."""
    import transformers

    sizes = {**SHAPE, **(shape or {})}
    h, n, k, f, p = (sizes[x] for x in ("hidden", "layers", "heads", "intermediate", "positions"))
    ids = {"pad_token_id": tokenizer.pad_token_id}
    common = {"vocab_size": len(tokenizer), "hidden_size": h, "num_hidden_layers": n, "num_attention_heads": k,
              "intermediate_size": f, "max_position_embeddings": p, "initializer_range": INIT, **ids}
    if family == "bert":
        config = transformers.BertConfig(**common)
    elif family in ("roberta", "xlm-roberta"):
        cls = transformers.RobertaConfig if family == "roberta" else transformers.XLMRobertaConfig
        config = cls(**{**common, "max_position_embeddings": p + tokenizer.pad_token_id + 1}, type_vocab_size=1,
                     bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id)
    elif family == "distilbert":
        config = transformers.DistilBertConfig(vocab_size=len(tokenizer), dim=h, n_layers=n, n_heads=k, hidden_dim=f,
                                               max_position_embeddings=p, initializer_range=INIT, **ids)
    elif family == "albert":
        config = transformers.AlbertConfig(**common, embedding_size=16, num_hidden_groups=1, inner_group_num=1,
                                           bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id)
    elif family == "electra":
        config = transformers.ElectraConfig(**common, embedding_size=16)
    elif family == "mpnet":
        config = transformers.MPNetConfig(**common, relative_attention_num_buckets=32,
                                          bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id)
    elif family == "deberta-v2":  # v3 layout: relative attention with shared keys, no token types
        config = transformers.DebertaV2Config(**common, relative_attention=True, pos_att_type=["p2c", "c2p"],
                                              position_buckets=16, max_relative_positions=-1, share_att_key=True,
                                              norm_rel_ebd="layer_norm", type_vocab_size=0, legacy=False)
    elif family == "modernbert":
        config = transformers.ModernBertConfig(**common, global_attn_every_n_layers=2, local_attention=4,
                                               bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                                               cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id)
    else:
        raise KeyError(f"no tiny {family!r}; families: {FAMILIES}")
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


_HEADS = {"masked-lm": "AutoModelForMaskedLM", "classifier": "AutoModelForSequenceClassification",
          "base": "AutoModel", "discriminator": "AutoModelForPreTraining"}


def plant(family_name: str, folder: Path | str, head: str = "masked-lm", *, seed: int = 0,
          shape: dict | None = None, **overrides: Any) -> Path:
    """Write a tiny ``family_name`` model with ``head`` (``"masked-lm"``, ``"classifier"`` (3 labels), ``"base"``;
    ``"discriminator"`` for ELECTRA) and its tokenizer to ``folder``; returns the folder. ``overrides`` set
    config attributes (e.g. ``share_att_key=False``)."""
    import torch
    import transformers

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(family_name)
    config = make_config(family_name, tokenizer, shape, **overrides)
    if head == "classifier":
        config.num_labels = 3
    torch.manual_seed(seed)
    model = getattr(transformers, _HEADS[head]).from_config(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# ------------------------------------------------------------------------------------------ pytest fixtures
import pytest  # noqa: E402  (the fixtures below; the planting above needs no pytest)


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models run fastest on one thread (and the machine is shared); import it with ``autouse`` in a module."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """``planted(family, head="masked-lm", **config_overrides) -> folder``: each model planted once per module."""
    root = tmp_path_factory.mktemp("families")
    cache = {}

    def get(family, head="masked-lm", **overrides):
        key = (family, head, tuple(sorted(overrides.items())))
        if key not in cache:
            cache[key] = plant(family, root / f"{family}-{head}-{len(cache)}", head, **overrides)
        return cache[key]

    return get
