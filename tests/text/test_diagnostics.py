"""Per-step SimCSE diagnostics (gradient-paradigm §3.2) against direct float64 loops."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as tf

from contrastkit.text.diagnostics import batch_diagnostics, lemma1_min_ratio


def unit(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return tf.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)


def test_diagnostics_equal_direct_loops() -> None:
    h = unit(6, 5, 0)
    hp = tf.normalize(h + 0.6 * unit(6, 5, 1), dim=1)
    out = batch_diagnostics(3 * h, hp, temperature=0.1)  # scale is normalised away
    shares, pos, negs = [], [], []
    for i in range(6):
        others = [j for j in range(6) if j != i]
        logits = torch.tensor([float(h[i] @ hp[j]) / 0.1 for j in others], dtype=torch.float64)
        shares.append(float(torch.softmax(logits, 0).max()))
        pos.append(math.acos(float(h[i] @ hp[i])))
        negs += [math.acos(float(h[i] @ hp[j])) for j in others]
    assert math.isclose(out["hardest_share"], sum(shares) / 6, rel_tol=1e-12)
    assert math.isclose(out["pos_cos"], float((h * hp).sum(1).mean()), rel_tol=1e-12)
    assert math.isclose(out["pos_angle_mean"], sum(pos) / 6, rel_tol=1e-12)
    assert math.isclose(
        out["neg_angle_std"], float(torch.tensor(negs, dtype=torch.float64).std(unbiased=False))
    )
    assert 0 < out["lemma1_defined"] <= 1


def test_lemma1_ratio_is_the_boundary_of_getting_closer() -> None:
    h = unit(40, 4, 2)
    pos = tf.normalize(h + 0.7 * unit(40, 4, 3), dim=1)
    neg = unit(40, 4, 4)
    lam = 0.7
    r = lemma1_min_ratio(h, pos, neg, lam)
    ok = ~torch.isnan(r)
    assert ok.sum() > 5 and (~ok).sum() > 5
    t_p = pos - (h * pos).sum(1, keepdim=True) * h
    t_n = neg - (h * neg).sum(1, keepdim=True) * h

    def gain(ratio: torch.Tensor) -> torch.Tensor:  # > 0: closer to the positive after the step
        step = lam * (ratio[:, None] * t_p - t_n)
        return t_p.norm(dim=1) - (step - t_p).norm(dim=1)

    torch.testing.assert_close(
        gain(r)[ok], torch.zeros(int(ok.sum()), dtype=h.dtype), atol=1e-9, rtol=0
    )
    assert (gain(r + 1e-3)[ok] > 0).all() and (gain(r - 1e-3)[ok] < 0).all()
    # undefined anchors: no ratio on a grid brings the anchor closer
    grid = torch.linspace(-50, 50, 201, dtype=h.dtype)
    assert all((gain(g.expand(40))[~ok] <= 1e-12).all() for g in grid)


def test_the_tensor_form_reads_nothing_and_gives_the_same_floats() -> None:
    """``batch_diagnostic_tensors`` (what a training step keeps) makes no host read and no
    data-dependent shape; its floats are ``batch_diagnostics``'; where no anchor has a
    Lemma 1 ratio (a large λ) the mean ratio is NaN and the defined share 0."""
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    from contrastkit.engine import host_floats
    from contrastkit.text.diagnostics import batch_diagnostic_tensors

    class Reads(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.counts: Counter[str] = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
            name = str(func).split(".")[1]
            masks = name == "index" and any(
                i is not None and i.dtype == torch.bool for i in args[1]
            )  # boolean indexing: an output size that depends on the data
            if name in ("_local_scalar_dense", "nonzero") or masks:
                self.counts[str(func)] += 1
            return func(*args, **(kwargs or {}))

    h = unit(7, 5, 4)
    hp = tf.normalize(h + 0.5 * unit(7, 5, 5), dim=1)
    for lam in (0.1, 100.0):
        with Reads() as reads:
            values = batch_diagnostic_tensors(h, hp, 0.05, lam)
        assert not reads.counts
        floats = dict(zip(values, host_floats(list(values.values())), strict=True))
        expected = batch_diagnostics(h, hp, 0.05, lam)
        assert floats.keys() == expected.keys()
        for key, value in expected.items():
            assert value == floats[key] or (math.isnan(value) and math.isnan(floats[key]))
    assert math.isnan(expected["lemma1_ratio"]) and expected["lemma1_defined"] == 0.0
