"""MultiHeadProjector: C independent two-layer MLP heads in one batched pass."""

from __future__ import annotations

import pytest
import torch

from contrastkit.models import MultiHeadProjector


def _head_ref(module: MultiHeadProjector, c: int, h: torch.Tensor) -> torch.Tensor:
    """Head ``c`` as an explicit per-sample loop: ``W2ᵀ relu(W1ᵀ h + b1) + b2``."""
    rows = []
    for x in h:
        hidden = torch.relu(x @ module.w1[c] + module.b1[c, 0])
        rows.append(hidden @ module.w2[c] + module.b2[c, 0])
    return torch.stack(rows)


def test_each_head_is_its_own_two_layer_mlp():
    torch.manual_seed(0)
    module = MultiHeadProjector(in_dim=6, out_dim=4, heads=3, hidden=5).double()
    h = torch.randn(7, 6, dtype=torch.float64)
    out = module(h)
    assert out.shape == (3, 7, 4)
    for c in range(3):
        assert torch.allclose(out[c], _head_ref(module, c, h))
    assert not torch.allclose(out[0], out[1])  # independent initialisations


def test_per_head_inputs_feed_slice_c_to_head_c():
    torch.manual_seed(1)
    module = MultiHeadProjector(in_dim=4, out_dim=4, heads=2).double()
    h = torch.randn(2, 5, 4, dtype=torch.float64)
    out = module(h)
    for c in range(2):
        assert torch.allclose(out[c], _head_ref(module, c, h[c]))


def test_heads_share_no_parameters():
    torch.manual_seed(2)
    module = MultiHeadProjector(in_dim=6, out_dim=3, heads=3)
    module(torch.randn(4, 6))[1].sum().backward()
    for p in (module.w1, module.b1, module.w2, module.b2):
        assert p.grad[1].abs().sum() > 0
        assert p.grad[0].abs().sum() == 0 and p.grad[2].abs().sum() == 0


def test_defaults_and_init_bounds():
    module = MultiHeadProjector(in_dim=32)
    assert (module.heads, module.out_dim, module.hidden) == (3, 128, 32)  # SimCLR head, C = 3
    assert module.w1.abs().max() <= 32**-0.5 and module.w2.abs().max() <= 32**-0.5


def test_bad_inputs():
    module = MultiHeadProjector(in_dim=6, out_dim=3, heads=2)
    with pytest.raises(ValueError, match=r"h must have shape \[N, 6\] or \[2, N, 6\]"):
        module(torch.randn(4, 5))
    with pytest.raises(ValueError, match=r"h must have shape"):
        module(torch.randn(3, 4, 6))
    with pytest.raises(TypeError, match="floating-point"):
        module(torch.ones(4, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="heads must be an int >= 1"):
        MultiHeadProjector(in_dim=6, heads=0)
