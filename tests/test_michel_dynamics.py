"""Michel et al. §6: pruning curves of the checkpoints taken during fine-tuning."""
from __future__ import annotations


import numpy as np
import pytest

from attnbook.engine.inputs import Batch
from attnbook.engine.sweeps import accuracy
from attnbook.studies.heads_off import effects as hs
from attnbook.studies.michel import dynamics
from attnbook.studies.michel.importance import head_importance
from attnbook.studies.michel.pruning import iterative_pruning, largest_safe_share

from test_importance import dev_batches
from tiny_models import Named, tiny_classifier


def test_training_dynamics_prunes_each_checkpoint_by_its_own_importance(monkeypatch):
    made = []

    def fake_classifier(base, task, recipe, seed, *, fraction=1.0):
        made.append(fraction)
        return Named(key=f"ckpt-{fraction}", model=tiny_classifier(seed=30 + int(100 * fraction)))

    monkeypatch.setattr(hs, "classifier", fake_classifier)
    final = Named(key="final", model=tiny_classifier(seed=40))
    imp_b = [Batch.from_mapping(b) for b in dev_batches(seed=31)]
    dev_b = [Batch.from_mapping(b) for b in dev_batches(seed=32)]
    final_imp = head_importance(final.model, imp_b)
    curves, summary = dynamics.training_dynamics(None, "SST-2", {}, 0, [0.1, 0.5], imp_b, dev_b, accuracy, final=final,
                                                 final_importance=final_imp, step=0.5, tolerance=0.1)
    assert made == [0.1, 0.5]
    assert list(summary.index) == ["10% of training", "50% of training", "100% of training"]
    assert list(summary.columns) == ["unpruned", "safe", "rho_final"]
    assert summary.loc["100% of training", "rho_final"] == pytest.approx(1.0)
    ckpt = fake_classifier(None, "SST-2", {}, 0, fraction=0.5)
    own = iterative_pruning(ckpt.model, dev_b, accuracy, ordering=head_importance(ckpt.model, imp_b), step=0.5)
    mine = curves[curves["checkpoint"] == "50% of training"]
    assert mine["score"].tolist() == own["score"].tolist()
    assert mine["unpruned"].iloc[0] == own["score"].iloc[0]
    assert np.allclose(mine["relative"], 100 * own["score"] / own["score"].iloc[0])
    assert summary.loc["50% of training", "safe"] == largest_safe_share(own, own["score"].iloc[0], 0.1)


def test_checkpoint_names():
    assert dynamics.checkpoint_name(0.25) == "25% of training" and dynamics.checkpoint_name(1.0) == "100% of training"
