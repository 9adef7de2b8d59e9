"""SentEval's PyTorch logistic regression (``usepytorch=True``, ``nhid = 0``), the
classifier SimCSE and the papers built on its evaluation train on the transfer tasks.

One fit, as SentEval's ``senteval/tools/classifier.py`` describes it (Conneau & Kiela,
2018), with SimCSE's test-mode settings (``batch_size 64, tenacity 5, epoch_size 4``,
which are also SentEval's defaults; ``max_epoch 200``):

* a linear layer ``d -> classes`` created right after ``torch.manual_seed(seed)`` (torch's
  default initialisation, on the CPU generator), and a NumPy generator seeded with
  ``seed`` that draws everything else in order: the 5 % validation split when no
  validation set is given (its first ``int(0.05 n)`` indices of a permutation), then one
  permutation of the training rows per pass;
* Adam at its defaults (lr 1e-3) with ``weight_decay = l2`` (L2 added to the gradient),
  mean cross-entropy over mini-batches of 64 (SentEval sets ``size_average = False`` on
  the loss after building it, which current PyTorch ignores: the mean is what runs);
* after every ``epoch_size`` passes the validation accuracy: a strictly better one keeps
  a copy of the weights; otherwise a miss is counted and training stops once ``tenacity``
  misses were already counted (the count is never reset), or after ``max_epoch`` passes;
  the kept weights are returned.

The L2 grid over which the callers choose is ``10^-5 ... 10^-2`` (:data:`L2_GRID`). On data
so small that 5 % of it is no sample, one sample is held out instead (SentEval would
divide by zero there).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

L2_GRID = tuple(10.0**t for t in range(-5, -1))  # SentEval's regs with usepytorch
VALIDATION_SPLIT = 0.05  # SentEval: the held-out share of a refit without a dev set


@dataclass(frozen=True)
class LogRegSettings:
    """SimCSE's ``--mode test`` classifier settings (SentEval's defaults)."""

    batch_size: int = 64
    tenacity: int = 5
    epoch_size: int = 4
    max_epoch: int = 200


class TorchLogReg:
    """A fitted linear classifier; :meth:`predict` gives class indices for ``[N, d]``."""

    def __init__(self, linear: nn.Linear, device: torch.device) -> None:
        self.linear, self.device = linear, device

    @torch.no_grad()
    def predict(self, x: np.ndarray) -> np.ndarray:
        inputs = torch.as_tensor(np.asarray(x, dtype=np.float32), device=self.device)
        return self.linear(inputs).argmax(1).cpu().numpy()


def _accuracy(linear: nn.Linear, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((linear(x).argmax(1) == y).float().mean())


def fit_logreg(
    x: np.ndarray,
    y: np.ndarray,
    l2: float,
    seed: int,
    classes: int,
    validation: tuple[np.ndarray, np.ndarray] | None = None,
    device: str | torch.device = "cpu",
    settings: LogRegSettings = LogRegSettings(),
) -> TorchLogReg:
    """Fit on ``x [N, d]``, ``y [N]`` (class indices below ``classes``) with early
    stopping on ``validation`` (default: a seeded 5 % of ``x``), as the module doc says."""
    device = torch.device(device)
    rng = np.random.RandomState(seed)
    if validation is None:
        order = rng.permutation(len(x))
        cut = max(int(VALIDATION_SPLIT * len(x)), 1)
        validation = (x[order[:cut]], y[order[:cut]])
        x, y = x[order[cut:]], y[order[cut:]]
    with torch.random.fork_rng(devices=[]):  # the CPU generator only, restored after
        torch.default_generator.manual_seed(seed)
        linear = nn.Linear(x.shape[1], classes)
    linear.to(device)
    optimizer = torch.optim.Adam(linear.parameters(), weight_decay=l2)
    train_x = torch.as_tensor(np.asarray(x, dtype=np.float32), device=device)
    train_y = torch.as_tensor(np.asarray(y, dtype=np.int64), device=device)
    dev_x = torch.as_tensor(np.asarray(validation[0], dtype=np.float32), device=device)
    dev_y = torch.as_tensor(np.asarray(validation[1], dtype=np.int64), device=device)
    best, kept, misses, passes = -1.0, None, 0, 0
    while passes <= settings.max_epoch:
        for _ in range(settings.epoch_size):
            order = torch.as_tensor(rng.permutation(len(train_x)), device=device)
            for batch in order.split(settings.batch_size):
                loss = F.cross_entropy(linear(train_x[batch]), train_y[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        passes += settings.epoch_size
        accuracy = _accuracy(linear, dev_x, dev_y)
        if accuracy > best:
            best, kept = accuracy, copy.deepcopy(linear.state_dict())
        elif misses >= settings.tenacity:
            break
        else:
            misses += 1
    linear.load_state_dict(kept)
    return TorchLogReg(linear, device)
