"""The gradient of the loss with respect to the head gates (attnbook.engine.mask_gradients)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnbook.core.errors import ParameterError
from attnbook.engine.mask_gradients import mask_gradients

from test_importance import dev_batches, mean_abs_gradient_one_by_one
from tiny_models import tiny_classifier


def ce(outputs, labels):
    return F.cross_entropy(outputs, labels.long(), reduction="none")


def test_gradients_under_a_base_mask_are_those_of_the_masked_model():
    """Each example's |dL/dxi| at xi = base_mask, averaged; checked one example at a time with a shared xi."""
    model = tiny_classifier(seed=50, dtype=torch.float64)
    batches = dev_batches(seed=50)
    base = np.ones((3, 4))
    base[1, 2] = base[2, 0] = 0.0
    got = mask_gradients(model, batches, ce, base_mask=base)
    assert np.allclose(got, mean_abs_gradient_one_by_one(model, batches, ce, base), rtol=1e-8, atol=1e-12)
    assert not np.allclose(got, mask_gradients(model, batches, ce))  # the base mask matters
    assert model.config._attn_implementation == "eager" and not model.training


def test_errors_name_the_problem():
    model = tiny_classifier(seed=51)
    batches = dev_batches(seed=51)
    with pytest.raises(ParameterError, match="granularity"):
        mask_gradients(model, batches, ce, granularity="word")
    with pytest.raises(ParameterError, match="one loss per example"):
        mask_gradients(model, batches, lambda o, y: ce(o, y).mean())
    with pytest.raises(ParameterError, match="gold labels"):
        mask_gradients(model, [{k: v for k, v in b.items() if k != "labels"} for b in batches], ce)
    with pytest.raises(ParameterError, match="one mask"):
        mask_gradients(model, batches, ce, base_mask=np.ones((2, 3, 4)))
