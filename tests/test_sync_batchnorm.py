"""SyncBatchNorm outside a process group, and convert_sync_batchnorm (the 2-process check
against one process on the whole batch is in tests/test_distributed.py)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from contrastkit.distributed import SyncBatchNorm, convert_sync_batchnorm


def test_without_a_process_group_it_is_plain_batch_norm() -> None:
    torch.manual_seed(0)
    plain, sync = nn.BatchNorm2d(3), SyncBatchNorm(3)
    x = torch.randn(4, 3, 5, 5)
    torch.testing.assert_close(sync(x), plain(x))
    torch.testing.assert_close(sync.running_var, plain.running_var)
    sync.eval(), plain.eval()
    torch.testing.assert_close(sync(x + 1), plain(x + 1))


def test_conversion_keeps_parameters_buffers_dtype_and_nesting() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Sequential(nn.BatchNorm1d(6, momentum=None)))
    model = model.double()
    model(torch.randn(5, 4, dtype=torch.float64))  # non-trivial running statistics
    with torch.no_grad():
        model[1][0].weight.uniform_()
    model[1][0].bias.requires_grad_(False)  # frozen (a momentum encoder's) stays frozen
    before = {k: v.clone() for k, v in model.state_dict().items()}
    converted = convert_sync_batchnorm(model)
    bn = converted[1][0]
    assert isinstance(bn, SyncBatchNorm) and bn.momentum is None
    assert bn.weight.dtype == torch.float64 and bn.training
    assert bn.weight.requires_grad and not bn.bias.requires_grad
    for key, value in converted.state_dict().items():
        torch.testing.assert_close(value, before[key], msg=key)


def test_input_without_channels_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\[N, C, \*\]"):
        SyncBatchNorm(3)(torch.randn(3))
