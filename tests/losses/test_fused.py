"""The fused 2N log-sum-exp (GramNegatives) against plain autograd on the dense layout."""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from contrastkit.losses import functional as F
from contrastkit.losses.views import ntxent_negatives, ntxent_similarities

NAMES = ["ntxent", "dcl", "dclw", "flatnce", "dual_temperature", "hcl", "macl"]


def grads_both_ways(
    name: str, z1: torch.Tensor, z2: torch.Tensor, queue: torch.Tensor | None, **kw: float
):
    module = losses.get(name, **kw)
    out = []
    for layout in (ntxent_negatives, ntxent_similarities):
        a, b = z1.detach().clone().requires_grad_(True), z2.detach().clone().requires_grad_(True)
        loss = module.similarity_loss(*layout(a, b, None if queue is None else queue.detach()))
        out.append((loss.detach(), *torch.autograd.grad(loss, (a, b))))
    return out


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("with_queue", [False, True])
@pytest.mark.parametrize("n", [2, 9])
def test_fused_value_and_gradient_equal_dense_autograd(name: str, with_queue: bool, n: int) -> None:
    g = torch.Generator().manual_seed(n)
    z1, z2, queue = (torch.randn(s, 6, generator=g, dtype=torch.float64) for s in (n, n, 5))
    fused, dense = grads_both_ways(name, z1, z2, queue if with_queue else None)
    for x, y in zip(fused, dense, strict=True):
        torch.testing.assert_close(x, y)


def test_rows_that_underflow_are_recomputed_exactly() -> None:
    # τ = 0.005: anchors whose negatives all sit far below the bound underflow exp(logit - s)
    z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.2]])
    z2 = torch.tensor([[0.9, 0.1], [0.1, 0.9], [-1.0, 0.1]])
    fused, dense = grads_both_ways("ntxent", z1, z2, None, temperature=0.005)
    assert all(torch.isfinite(t).all() for t in fused)
    for x, y in zip(fused, dense, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)


def test_count_and_scale_zero_give_the_number_of_negatives() -> None:
    z1, z2 = torch.randn(4, 3), torch.randn(4, 3)
    _, gram = ntxent_negatives(z1, z2, queue=torch.randn(3, 3))
    torch.testing.assert_close(gram.count(), torch.full((8,), 9.0))
    torch.testing.assert_close(gram.logsumexp(0.0), torch.full((8,), 9.0).log())


def test_a_second_backward_through_the_kept_exponentials_is_right() -> None:
    z = torch.nn.functional.normalize(torch.randn(6, 4), dim=1).requires_grad_(True)
    lse = F.GramNegatives(z).logsumexp(5.0).sum()  # all other rows as negatives
    (first,) = torch.autograd.grad(lse, z, retain_graph=True)
    (second,) = torch.autograd.grad(lse, z)
    torch.testing.assert_close(second, first, rtol=0, atol=0)


def test_softmax_mean_refuses_a_second_backward_instead_of_a_wrong_one() -> None:
    z = torch.nn.functional.normalize(torch.randn(6, 4), dim=1).requires_grad_(True)
    mean = F.GramNegatives(z).softmax_mean(5.0).sum()
    mean.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="one backward"):
        mean.backward()
