"""Chapter 7's pairwise ARCT classifier on every encoder family (issue 29): BERT's layout runs its layers one by
one (frozen states cached, the last layer for the first token only); every other family runs its own forward."""
from __future__ import annotations

import pytest
import torch

from arct_items import planted_cue_items
from attnbook.core.errors import ParameterError
from attnbook.engine import pairwise as S
from attnbook.engine.inputs import pad_rows
from attnbook.engine.models import load_encoder
from attnbook.studies.niven_kao import pairwise as M
from tiny_families import FAMILIES, one_thread, planted  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("one_thread")


def pairs(tokenizer, n=4):
    enc = M.encode_pairs(tokenizer, planted_cue_items(n, 1), "full", 32)
    ids, mask = pad_rows(enc.input_ids, int(tokenizer.pad_token_id or 0))
    types, _ = pad_rows(enc.token_type_ids, 0)
    shape = (n, 2, ids.shape[1])
    return ids.reshape(shape), mask.reshape(shape), types.reshape(shape)


@pytest.mark.parametrize("family", ["bert", "roberta", "xlm-roberta", "electra"])
def test_berts_layout_stacks_its_layers_and_equals_the_models_own_forward(family, planted):
    base = load_encoder(str(planted(family, "base")), device="cpu")
    scorer = S.PairwiseScorer(base.model).eval()
    assert scorer.stacked
    ids, mask, types = pairs(base.tokenizer)
    with torch.no_grad():
        stacked = scorer(ids, mask, types)
        whole = scorer._whole(ids.reshape(-1, ids.shape[-1]), mask.reshape(-1, ids.shape[-1]),
                              types.reshape(-1, ids.shape[-1])).reshape(stacked.shape)
    torch.testing.assert_close(stacked, whole, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_trains_the_pairwise_classifier(family, planted):
    """Regression: before, the scorer reached for BERT's ``encoder.encoder.layer`` and stopped on DistilBERT,
    ALBERT, MPNet, DeBERTa-v2 and ModernBERT, and fed ELECTRA's layers its embeddings before their projection."""
    base = load_encoder(str(planted(family, "base")), device="cpu")
    items = planted_cue_items(12, 3)
    cfg = M.TrainConfig(epochs=1, lr=1e-3, batch_size=4, trainable_layers=None)
    df = M.run_seeds(base, items, items[:4], {"test": items[4:]}, inputs="full", seeds=[0], cfg=cfg, max_length=32)
    assert df["test_accuracy"].between(0, 1).all() and df["dev_accuracy"].between(0, 1).all()


@pytest.mark.parametrize("family", ["distilbert", "deberta-v2", "modernbert", "mpnet"])
def test_frozen_layers_stay_frozen_outside_berts_layout(family, planted):
    base = load_encoder(str(planted(family, "base")), device="cpu")
    items = planted_cue_items(8, 2)
    enc = M.encode_pairs(base.tokenizer, items, "full", 32)
    cfg = M.TrainConfig(epochs=1, lr=1e-2, batch_size=4, trainable_layers=1, freeze_embeddings=True)
    run = M.train_pairwise(base.model, enc, None, cfg, seed=0, pad_id=int(base.tokenizer.pad_token_id or 0))
    assert not run.model.stacked and run.model.start == run.model.n_layers - 1
    before, after = base.model.state_dict(), run.model.encoder.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed, "the top layer trained"
    assert changed <= {k for k in before if k.startswith(("pooler.", "final_norm.")) or ".2." in k}  # layer 3 of 3


def test_albert_shares_its_layer_so_only_all_or_none_train(planted):
    base = load_encoder(str(planted("albert", "base")), device="cpu")
    with pytest.raises(ParameterError, match="shares one layer"):
        S.PairwiseScorer(base.model, trainable_layers=1)
    assert S.PairwiseScorer(base.model, trainable_layers=0).start == base.n_layers
