"""Training monitors beside the loss: the online linear probe and TensorBoard scalars.

Online linear probe: a classifier trained beside the encoder on detached features.

As in solo-learn's online classifier, a linear layer ``W h + b`` on the encoder's
features ``h`` of the first view is trained with its own optimiser (Adam, lr 1e-3, no
weight decay: this project's choice) and cross-entropy on the batch labels; the features
are detached, so the probe never changes the encoder. It starts from zeros (no draw from
the global RNG, so turning it on leaves the run's own random stream untouched). Per epoch
it reports its mean training loss and accuracy and, at evaluation epochs, its test
accuracy on the frozen features the kNN monitor uses.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class OnlineProbe:
    """A linear probe for ``num_classes`` classes on ``feature_dim`` features, on ``device``.

    Use :meth:`capture` around the training forward pass to record the encoder's output,
    then :meth:`step` with the batch labels."""

    def __init__(self, feature_dim: int, num_classes: int, device: torch.device) -> None:
        self.layer = nn.Linear(feature_dim, num_classes, device=device)
        nn.init.zeros_(self.layer.weight)
        nn.init.zeros_(self.layer.bias)
        self.optimizer = torch.optim.Adam(self.layer.parameters(), lr=1e-3)
        self._features: Tensor | None = None
        self._sums = torch.zeros(2, device=device)  # loss sum, correct (read once an epoch)
        self._samples = 0

    @classmethod
    def for_labels(
        cls, feature_dim: int, y_train: Tensor, y_test: Tensor, device: torch.device, name: str
    ) -> OnlineProbe:
        """A probe over the classes of ``y_train`` and ``y_test`` (dataset ``name``);
        continuous labels are refused."""
        if y_train.is_floating_point():
            raise ValueError(f"online_probe needs class labels; {name} has continuous labels")
        return cls(feature_dim, int(max(y_train.max(), y_test.max())) + 1, device)

    @contextmanager
    def capture(self, encoder: nn.Module) -> Iterator[None]:
        """Record the first output of ``encoder`` inside the block (the first view, or the
        joint batch of all views whose first rows are the first view)."""
        self._features = None

        def hook(module: nn.Module, args: object, output: Tensor) -> None:
            if self._features is None:
                self._features = output.detach()

        handle = encoder.register_forward_hook(hook)
        try:
            yield
        finally:
            handle.remove()

    def step(self, labels: Tensor) -> None:
        """One optimiser step of the probe on the captured features of ``labels [N]``."""
        if self._features is None:
            raise RuntimeError("OnlineProbe.step without captured features")
        h = self._features[: labels.shape[0]].float()
        with torch.enable_grad():
            logits = self.layer(h)
            loss = F.cross_entropy(logits, labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        correct = (logits.detach().argmax(1) == labels).sum()
        self._sums += torch.stack([loss.detach() * labels.shape[0], correct.float()])
        self._samples += labels.shape[0]  # a host number: no blocking copy to the device

    def epoch_logs(self) -> dict[str, float]:
        """Mean training loss and accuracy since the last call."""
        (loss, correct), n = self._sums.tolist(), self._samples
        self._sums.zero_()
        self._samples = 0
        return {"online_probe_loss": loss / max(n, 1), "online_probe_accuracy": correct / max(n, 1)}

    @torch.no_grad()
    def accuracy(self, features: Tensor, labels: Tensor) -> float:
        """Accuracy on ``features [M, d]`` with ``labels [M]``."""
        pred = self.layer(features.float()).argmax(1)
        return float((pred == labels).double().mean())

    def state_dict(self) -> dict[str, object]:
        return {"layer": self.layer.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, object]) -> None:
        self.layer.load_state_dict(state["layer"])  # type: ignore[arg-type]
        self.optimizer.load_state_dict(state["optimizer"])  # type: ignore[arg-type]


class TensorBoardLog:
    """TensorBoard event files in ``directory``: every number of a per-epoch record as a
    scalar at its epoch (``torch.utils.tensorboard``, imported and the files created at
    the first record); ``directory=None`` logs nothing."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.writer: Any = None

    def log(self, record: dict[str, Any]) -> None:
        if self.directory is None:
            return
        if self.writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(self.directory))
        for key, value in record.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and key != "epoch":
                self.writer.add_scalar(key, value, record["epoch"])
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def finite_numbers(metrics: dict[str, Any]) -> dict[str, float]:
    """The finite numbers of an evaluation (no flags, strings or NaN), for a
    ``metrics.jsonl`` record."""
    return {
        k: float(v)
        for k, v in metrics.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    }
