"""Encoders and MLP heads: shapes and input validation."""

from __future__ import annotations

import pytest
import torch

from contrastkit.models import build_encoder, mlp


def test_encoder_shapes() -> None:
    assert build_encoder("2d", (1, 8, 8), 48, 8)(torch.randn(5, 1, 8, 8)).shape == (5, 48)
    assert build_encoder("1d", (1, 40), 24, 8)(torch.randn(5, 1, 40)).shape == (5, 24)
    assert mlp(24, 32, 16, layers=3, last_bn=True)(torch.randn(5, 24)).shape == (5, 16)


def test_encoder_rejects_bad_input() -> None:
    enc = build_encoder("1d", (1, 40), 24, 8)
    with pytest.raises(ValueError, match=r"x must have shape \[B, 1, 40\]"):
        enc(torch.randn(5, 1, 41))
    with pytest.raises(ValueError, match="kind must be"):
        build_encoder("3d", (1, 8, 8, 8))
