"""What a sweep returns: :class:`SweepResult`, each configuration's score and every example's output.

A sweep (:mod:`attnbook.engine.sweeps`) runs one model under many head configurations; its result is read by the
statistics over sweeps (:mod:`attnbook.engine.sweep_stats`) and cached by content (``to_arrays``/``from_arrays``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np



@dataclass
class SweepResult:
    """Scores of a model under a set of head interventions, with the outputs behind them.

    ``scores`` is ``[layer, head]`` (single heads), ``[layer]`` (layers) or ``[config]``;
    ``outputs`` is ``[*scores.shape, example, class]``; ``names`` are the 1-based labels shown
    to readers, in ``scores.reshape(-1)`` order.
    """

    kind: str
    mode: str
    scores: np.ndarray
    baseline_score: float
    outputs: np.ndarray
    baseline_outputs: np.ndarray
    gold: np.ndarray
    names: list[str]
    meta: dict = field(default_factory=dict)

    @property
    def delta(self) -> np.ndarray:
        """Score change, intervened − baseline (Michel's Δ, Kovaleva's gain)."""
        return self.scores - self.baseline_score

    def predictions(self) -> np.ndarray:
        """Arg-max classes ``[*scores.shape, example]`` under each intervention."""
        return np.argmax(self.outputs, axis=-1)

    def flat_outputs(self) -> np.ndarray:
        """Outputs as ``[config, example, class]`` in ``names`` order."""
        return self.outputs.reshape(-1, *self.outputs.shape[self.scores.ndim :])

    def table(self):
        """Long table: name, 1-based layer (and head), score, delta."""
        import pandas as pd

        rows = []
        for i, (name, score) in enumerate(zip(self.names, self.scores.reshape(-1))):
            row = {"name": name, "score": float(score), "delta": float(score - self.baseline_score)}
            if self.kind == "single_heads" or self.kind == "all_but_one":
                layer, head = np.unravel_index(i, self.scores.shape)
                row.update(layer=int(layer) + 1, head=int(head) + 1)
            elif self.kind == "layers":
                row.update(layer=i + 1)
            rows.append(row)
        return pd.DataFrame(rows)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The result as plain arrays (for :func:`attnbook.core.cache.cached_arrays`); :meth:`from_arrays` inverts it."""
        return {"scores": self.scores, "baseline_score": np.asarray(self.baseline_score), "outputs": self.outputs,
                "baseline_outputs": self.baseline_outputs, "gold": self.gold, "names": np.asarray(self.names),
                "kind": np.asarray(self.kind), "mode": np.asarray(self.mode)}

    @classmethod
    def from_arrays(cls, got: Mapping[str, np.ndarray]) -> SweepResult:
        return cls(kind=str(got["kind"]), mode=str(got["mode"]), scores=got["scores"],
                   baseline_score=float(got["baseline_score"]), outputs=got["outputs"],
                   baseline_outputs=got["baseline_outputs"], gold=got["gold"], names=[str(n) for n in got["names"]],
                   meta={"cached": True})
