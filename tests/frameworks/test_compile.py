"""A framework's whole forward (encoder, heads, MoCo's queue and momentum encoder, NNCLR's
support set, the loss) through ``torch.compile(fullgraph=True)``: one graph, compiled once
over successive training steps, with the eager framework's values. ``aot_eager`` traces
forward and backward without generating code; the losses alone are in
``tests/losses/test_compile.py``."""

from __future__ import annotations

import copy

import pytest
import torch
import torch._dynamo

from contrastkit.frameworks import build_framework
from contrastkit.models import build_encoder

CASES = [
    ("simclr", "ntxent", {}),
    ("simclr", "macl", {}),
    ("simclr", "cosine_temperature", {}),
    ("moco", "infonce", {"queue_size": 32}),
    ("moco", "macl", {"queue_size": 32}),
    ("simsiam", "simsiam", {}),
    ("barlow_twins", "barlow_twins", {}),
    ("multiview", "cacr", {"num_views": 3}),
    ("supervised", "supcon", {}),
    ("nnclr", "ntxent", {"queue_size": 32}),
]


@pytest.mark.parametrize(("framework", "loss", "options"), CASES)
def test_a_framework_compiles_once_into_one_graph(framework: str, loss: str, options: dict) -> None:
    torch._dynamo.reset()
    torch.manual_seed(0)
    encoder = build_encoder("2d", (1, 8, 8), feature_dim=16, width=4)
    model = build_framework(framework, encoder, loss, proj_dim=8, **options)
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    g = torch.Generator().manual_seed(1)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for _ in range(3):
            views = [torch.rand(16, 1, 8, 8, generator=g) for _ in range(model.num_views)]
            labels = torch.arange(16) % 4
            value = compiled(views, labels)
            value.backward()
            expected = eager(views, labels)
            expected.backward()
            torch.testing.assert_close(value, expected, rtol=1e-4, atol=1e-5)
    for got, want in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-3, atol=1e-5)
