"""A sequence classifier on a pre-trained encoder, initialised as one of Kovaleva et al.'s three Table 1 columns (§3):
``"pretrained"`` (the encoder with an untrained head), ``"random_ft"`` (every weight re-drawn as BERT initialises it,
then fine-tuned) and ``"pretrained_ft"`` (the encoder, fine-tuned).

Every encoder family of :mod:`attnbook.engine.families` gets its own ``...ForSequenceClassification`` (the class
``AutoModelForSequenceClassification`` picks for the encoder's config) with the family's own pooling and head:
BERT and ALBERT a pooler (dense + tanh over ``[CLS]``) and a linear layer, RoBERTa, XLM-R, ELECTRA and MPNet a
two-layer head on the first token, DistilBERT ``pre_classifier`` + ``classifier``, DeBERTa its ``ContextPooler``
(``pooler``) and a linear layer, ModernBERT ``head`` on the ``[CLS]`` token or the mean over tokens
(``config.classifier_pooling``). A pooler the encoder's base model has but its classifier's encoder does not
(RoBERTa's, MPNet's) is simply not copied; whatever lies outside the classifier's encoder is drawn new.
"""
from __future__ import annotations

import copy

import torch

from attnbook.core.errors import ModelError, ParameterError
from attnbook.data.glue import TaskSpec, task_spec
from attnbook.engine.models import LoadedModel, prepare_model

#: The three initialisations of Kovaleva et al.'s Table 1, in the table's column order.
INITS = ("pretrained", "random_ft", "pretrained_ft")


def normal_init_(module: torch.nn.Module, std: float, generator: torch.Generator) -> None:
    """Re-draw weights as BERT initialises them: Linear/Embedding ~ N(0, std), biases 0, LayerNorm 1/0.

    This is the "weights randomly sampled from normal distribution" configuration
    of Kovaleva et al. §4.3 when applied to the whole model.
    """
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.Linear):
                m.weight.normal_(0.0, std, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, torch.nn.Embedding):
                m.weight.normal_(0.0, std, generator=generator)
                if m.padding_idx is not None:
                    m.weight[m.padding_idx].zero_()
            elif isinstance(m, torch.nn.LayerNorm):
                if m.weight is not None:
                    m.weight.fill_(1.0)
                if m.bias is not None:
                    m.bias.zero_()


def head_modules(classifier: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules outside the encoder (for BERT: dropout and the linear ``classifier``; DeBERTa: its ``pooler``
    too; ModernBERT: ``head``, ``drop`` and ``classifier``)."""
    prefix = classifier.base_model_prefix
    return [m for name, m in classifier.named_children() if name != prefix]


def output_layer(classifier: torch.nn.Module) -> torch.nn.Linear:
    """The linear layer that writes the classifier's outputs (``config.num_labels`` of them): BERT's
    ``classifier``, RoBERTa's ``classifier.out_proj``, ..."""
    n = int(classifier.config.num_labels)
    found = [m for head in head_modules(classifier) for m in head.modules()
             if isinstance(m, torch.nn.Linear) and m.out_features == n]
    if not found:
        raise ModelError(f"{type(classifier).__name__} has no linear layer with {n} outputs outside its encoder")
    return found[-1]


def _encoder_keys_fit(classifier: torch.nn.Module, missing: list[str], unexpected: list[str]) -> bool:
    """Whether the encoder's weights filled the classifier's encoder: nothing missing but position-id buffers, and
    nothing left over but a pooler the classifier's encoder does not have (RoBERTa, MPNet: their classifiers pool
    in their own head)."""
    encoder = classifier.base_model
    extra_pooler = getattr(encoder, "pooler", None) is None
    left = [k for k in unexpected if not (extra_pooler and k.startswith("pooler."))]
    return not left and not [k for k in missing if not k.endswith("position_ids")]


def build_classifier(base: LoadedModel, task: str | TaskSpec, init: str, seed: int) -> torch.nn.Module:
    """A sequence classifier for ``task`` on top of ``base``'s architecture, initialised as ``init``.

    ``"pretrained"`` and ``"pretrained_ft"`` copy the pre-trained encoder (pooler
    included) and draw a new head; ``"random_ft"`` re-draws every weight. The
    draw is seeded by ``seed`` alone (a private generator), so it is
    reproducible whatever else used the global RNG.
    """
    from transformers import AutoModelForSequenceClassification

    spec = task_spec(task)
    check_init(init)
    config = copy.deepcopy(base.model.config)
    config.num_labels = spec.num_labels
    config.problem_type = "regression" if spec.is_regression else "single_label_classification"
    if spec.labels is not None:
        config.id2label = dict(enumerate(spec.labels))
        config.label2id = {v: k for k, v in config.id2label.items()}
    else:
        config.id2label, config.label2id = {0: "score"}, {"score": 0}
    with torch.random.fork_rng(devices=[]):  # from_config's own initialisation is overwritten below
        classifier = AutoModelForSequenceClassification.from_config(config, attn_implementation="eager")
    std = float(getattr(config, "initializer_range", 0.02))
    generator = torch.Generator().manual_seed(int(seed))
    if init == "random_ft":
        normal_init_(classifier, std, generator)
    else:
        encoder = classifier.base_model
        missing, unexpected = encoder.load_state_dict(base.model.state_dict(), strict=False)
        if not _encoder_keys_fit(classifier, missing, unexpected):
            raise ModelError(
                f"the encoder of {base.name} does not fit a sequence classifier: "
                f"missing {missing[:5]}, unexpected {unexpected[:5]}"
            )
        for m in head_modules(classifier):
            normal_init_(m, std, generator)
    classifier.to(next(base.model.parameters()).device)
    classifier.eval()
    return prepare_model(classifier)


def check_init(init: str) -> str:
    if init not in INITS:
        raise ParameterError(f"unknown initialisation {init!r}; choose one of: {', '.join(INITS)}")
    return init
