"""NNCLR: nearest-neighbour positives from the support set, loss against a float64
reference, FIFO support set, loss compatibility from the registry."""

from __future__ import annotations

import pytest
import torch

from contrastkit.frameworks import NNCLR, build_framework
from contrastkit.frameworks.nnclr import nearest_neighbours
from contrastkit.models import build_encoder


def _model(loss: str = "ntxent", queue: int = 32, **kw: object) -> NNCLR:
    torch.manual_seed(0)
    enc = build_encoder("2d", (1, 8, 8), feature_dim=16, width=4)
    return build_framework("nnclr", enc, loss, kw or None, proj_dim=8, queue_size=queue)


def test_nearest_neighbours_match_a_loop() -> None:
    g = torch.Generator().manual_seed(0)
    z, s = torch.randn(5, 4, generator=g), torch.randn(7, 4, generator=g)
    out = nearest_neighbours(z, s)
    for i in range(5):
        cos = [float(torch.dot(z[i], s[j]) / (z[i].norm() * s[j].norm())) for j in range(7)]
        assert torch.equal(out[i], s[max(range(7), key=cos.__getitem__)])


def test_loss_equals_float64_reference_and_support_set_is_fifo() -> None:
    model = _model(temperature=0.2).double()
    x1, x2 = (
        torch.rand(6, 1, 8, 8, dtype=torch.float64),
        torch.rand(6, 1, 8, 8, dtype=torch.float64),
    )
    support = model.support.clone()
    loss = model([x1, x2])
    with torch.no_grad():  # the same train-mode batch statistics, recomputed
        z = model.projector(model.encoder(torch.cat([x1, x2])))
        p = model.predictor(z)
    z1, z2 = z[:6], z[6:]
    p1, p2 = p[:6], p[6:]

    def unit(v: torch.Tensor) -> torch.Tensor:
        return v / v.norm(dim=1, keepdim=True)

    def nn_of(q: torch.Tensor) -> torch.Tensor:
        return support[(unit(q) @ unit(support).T).argmax(1)]

    total = 0.0
    for a, b in ((nn_of(z1), p2), (nn_of(z2), p1)):
        logits = unit(a) @ unit(b).T / 0.2
        for i in range(6):
            total += float(-logits[i, i] + torch.logsumexp(logits[i], 0))
    assert float(loss.detach()) == pytest.approx(total / 12, rel=1e-9)
    assert torch.allclose(model.support[:6], unit(z1))
    assert torch.equal(model.support[6:], support[6:]) and int(model.support_ptr) == 6


def test_gradient_flows_through_predictions_only_and_losses_are_checked() -> None:
    model = _model("macl")
    loss = model([torch.rand(4, 1, 8, 8), torch.rand(4, 1, 8, 8)])
    loss.backward()
    assert model.predictor[0].weight.grad is not None and torch.isfinite(loss)
    assert model.loss.last_alignment is not None  # MACL's A over neighbour/prediction pairs
    with pytest.raises(ValueError, match="cannot train with loss 'supcon'"):
        _model("supcon")
    with pytest.raises(ValueError, match="queue_size must be >= 1"):
        NNCLR(build_encoder("2d", (1, 8, 8), 16, 4), queue_size=0)
