"""A two-step Trainer on synthetic data for the engine tests (no dataset files needed):
the ``make_trainer`` fixture builds one from ``tiny_config`` keywords."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from contrastkit.data import Split
from contrastkit.training import TrainConfig, Trainer


class TinyTrainer(Trainer):
    """Trains on 32 random 8×8 images in 4 classes: batch 16 gives two steps per epoch."""

    def load_data(self) -> Split:
        g = torch.Generator().manual_seed(0)
        x = torch.rand(48, 1, 8, 8, generator=g)
        y = torch.arange(48) % 4
        return Split("tiny", "2d", x[:32], y[:32], x[32:], y[32:])


def tiny_config(framework: str = "simclr", loss: str = "ntxent", **kw: object) -> TrainConfig:
    values: dict[str, object] = dict(
        framework=framework,
        loss=loss,
        dataset="digits",  # names the config only; TinyTrainer supplies the data
        epochs=1,
        batch_size=16,
        feature_dim=8,
        width=2,
        proj_dim=8,
        queue_size=32,
        knn_k=5,
        knn_small_k=2,
        device="cpu",
    )
    if framework == "multiview":
        values["num_views"] = 3
    values.update(kw)
    return TrainConfig(**values)


@pytest.fixture
def make_trainer() -> Callable[..., TinyTrainer]:
    """``make_trainer(framework, loss, out=None, **config)`` → a :class:`TinyTrainer`."""

    def make(
        framework: str = "simclr", loss: str = "ntxent", out: Path | None = None, **kw: object
    ) -> TinyTrainer:
        return TinyTrainer(tiny_config(framework, loss, **kw), out, False)

    return make
