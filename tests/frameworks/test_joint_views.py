"""What batch normalisation sees: all views as one batch (SimCLR's concatenated 2N) or one
view at a time (Barlow Twins' reference loop)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from contrastkit.frameworks import build_framework
from contrastkit.training import TrainConfig, Trainer


class BNEncoder(nn.Module):
    """Linear then BN: each output depends on the batch it was normalised with."""

    feature_dim = 6

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 6)
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.linear(x))


def views() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.randn(8, 4, generator=g) + shift for shift in (0.0, 3.0)]


def standardised(h: torch.Tensor) -> torch.Tensor:
    return (h - h.mean(0)) / (h.var(0, unbiased=False) + 1e-5).sqrt()


@pytest.mark.parametrize("joint", [True, False])
def test_batch_norm_statistics_come_from_the_chosen_batch(joint: bool) -> None:
    torch.manual_seed(0)
    model = build_framework("simclr", BNEncoder(), "ntxent", joint_views=joint)
    x = views()
    feats = [model.encoder.linear(v).detach() for v in x]
    outputs: list[torch.Tensor] = []
    model.encoder.register_forward_hook(lambda m, i, out: outputs.append(out.detach()))
    model.project(x)
    if joint:  # one call on the 2N batch, normalised by its statistics
        expected, running = [standardised(torch.cat(feats))], 0.1 * torch.cat(feats).mean(0)
    else:  # one call per view; two momentum-0.1 updates of the running mean
        expected = [standardised(f) for f in feats]
        running = 0.9 * 0.1 * feats[0].mean(0) + 0.1 * feats[1].mean(0)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(model.encoder.bn.running_mean, running)


def test_eval_mode_outputs_do_not_depend_on_the_batching() -> None:
    torch.manual_seed(0)
    joint = build_framework("simclr", BNEncoder(), "ntxent", joint_views=True).eval()
    separate = build_framework("simclr", BNEncoder(), "ntxent", joint_views=False).eval()
    separate.load_state_dict(joint.state_dict())
    for a, b in zip(joint.project(views()), separate.project(views()), strict=True):
        torch.testing.assert_close(a, b)


def test_defaults_follow_the_reference_implementations() -> None:
    enc = BNEncoder
    assert build_framework("simclr", enc(), "ntxent").joint_views
    assert build_framework("supervised", enc(), "supcon").joint_views
    assert build_framework("multiview", enc(), "cacr", num_views=3).joint_views
    assert not build_framework("barlow_twins", enc(), "barlow_twins").joint_views
    assert build_framework("barlow_twins", enc(), "barlow_twins", joint_views=True).joint_views


def test_config_reaches_the_framework() -> None:
    config = TrainConfig(epochs=1, joint_views=False)
    assert Trainer(config, progress=False).model.joint_views is False


def test_views_of_different_shapes_cannot_be_joined() -> None:
    model = build_framework("simclr", BNEncoder(), "ntxent")
    with pytest.raises(ValueError, match="joint_views needs views of one shape"):
        model.project([torch.randn(8, 4), torch.randn(6, 4)])
