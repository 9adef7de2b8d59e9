"""A training step reads nothing on the host for the loss's diagnostics: MACL's τ_a and A,
CACR's parts, AMCL's temperatures and the cosine schedule's τ stay device tensors until the
epoch's end, which copies each diagnostic's values to the host at once, whatever the
number of steps."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from contrastkit.training import TRACE_SUFFIX


class ScalarReads(TorchDispatchMode):
    """Counts the reads of a tensor's value by the host (``.item()``, ``float(t)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        if str(func) in ("aten._local_scalar_dense.default", "aten.item.default"):
            self.counts[str(func)] += 1
        return func(*args, **(kwargs or {}))


def _reads(trainer: object) -> tuple[int, dict]:
    with ScalarReads() as reads:
        record = trainer.train_epoch()
    return sum(reads.counts.values()), record


@pytest.mark.parametrize(
    ("framework", "loss", "keys"),
    [
        ("simclr", "macl", ("temperature", "alignment_A")),
        ("multiview", "cacr", ("attraction", "repulsion")),
        ("simclr", "cosine_temperature", ("temperature",)),
        ("simclr", "amcl", ("tau_pos_mean", "tau_neg_mean")),
    ],
)
def test_diagnostics_are_read_once_an_epoch_not_once_a_step(
    make_trainer: Callable, framework: str, loss: str, keys: tuple[str, ...]
) -> None:
    """Against the same run whose framework reports no diagnostics: over four steps the
    diagnostics add no read of a single value (they added one each per step). The epoch's
    end copies each diagnostic's values at once (``tolist``: no scalar read on a CPU, one
    copy on a GPU)."""
    counts = {}
    for report in (False, True):
        trainer = make_trainer(framework, loss, batch_size=8)  # 32 samples: four steps
        if not report:
            trainer.model.step_values = trainer.model.step_logs = dict
        counts[report], record = _reads(trainer)
    assert counts[True] == counts[False]
    # and nothing left to read later either: the step's values are device tensors (a
    # ``tolist`` is no scalar read on a CPU, but one copy and wait on a GPU)
    values = trainer.model.step_values()
    assert set(keys) <= set(values) and all(isinstance(v, torch.Tensor) for v in values.values())
    for key in keys:  # the epoch's record: the mean of the steps' floats, and the trace
        assert isinstance(record[key], float)
    trace = record.get(f"{keys[0]}{TRACE_SUFFIX}")
    if trace is not None:
        assert len(trace) == 4 and all(isinstance(v, float) for v in trace)
        assert record[keys[0]] == pytest.approx(sum(trace) / 4)


def test_the_epoch_logs_are_the_floats_of_each_step(make_trainer: Callable) -> None:
    """What the record keeps is what reading each step's diagnostics would have given."""
    trainer = make_trainer("simclr", "macl", batch_size=8)
    seen: list[float] = []
    loss = trainer.model.loss
    original = loss.forward

    def forward(*args: torch.Tensor) -> torch.Tensor:
        out = original(*args)
        seen.append(float(loss.diagnostic_tensors()["temperature"]))
        return out

    loss.forward = forward
    record = trainer.train_epoch()
    assert record[f"temperature{TRACE_SUFFIX}"] == seen
