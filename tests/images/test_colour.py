"""The batched colour jitter against per-image float64 references of torchvision's
``ColorJitter`` definitions (brightness, contrast, saturation blends; hue via colorsys)."""

from __future__ import annotations

import colorsys

import numpy as np
import pytest
import torch

from contrastkit.images.colour import blend, gray, jitter, plan_jitter, shift_hue


def _img(b: int, side: int, seed: int) -> torch.Tensor:
    return torch.rand(b, 3, side, side, generator=torch.Generator().manual_seed(seed))


def _np_gray(a: np.ndarray) -> np.ndarray:
    return 0.299 * a[0] + 0.587 * a[1] + 0.114 * a[2]


def _reference(a: np.ndarray, op: int, f: float) -> np.ndarray:
    """One op on one image ``a [3, H, W]``, float64, as torchvision defines it."""
    if op == 0:
        out = f * a
    elif op == 1:
        out = f * a + (1 - f) * _np_gray(a).mean()
    elif op == 2:
        out = f * a + (1 - f) * _np_gray(a)[None]
    else:
        out = np.empty_like(a)
        for r in range(a.shape[1]):
            for c in range(a.shape[2]):
                h, s, v = colorsys.rgb_to_hsv(*a[:, r, c])
                out[:, r, c] = colorsys.hsv_to_rgb((h + f) % 1.0, s, v)
    return np.clip(out, 0.0, 1.0)


def test_blend_is_each_of_the_three_ops_by_its_coefficients() -> None:
    x = _img(3, 5, 0).double()
    f = torch.tensor([0.7, 1.3, 0.55], dtype=torch.float64)
    ones, zeros = torch.ones(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    for op, coef in ((0, (f, zeros, zeros)), (1, (f, 1 - f, zeros)), (2, (f, zeros, 1 - f)),
                     (None, (ones, zeros, zeros))):  # fmt: skip
        out = blend(x, torch.stack(coef, 1))
        for i in range(3):
            ref = x[i].numpy() if op is None else _reference(x[i].numpy(), op, float(f[i]))
            assert np.allclose(out[i].numpy(), ref, atol=1e-12), op


def test_hue_shift_matches_colorsys_per_pixel() -> None:
    x = _img(4, 6, 1).double()
    x[0, :, 0, :] = 0.5  # grey pixels: chroma 0
    x[1, :, 1, :3] = torch.tensor([0.9, 0.9, 0.1], dtype=torch.float64)[:, None]  # tied max
    turns = torch.tensor([0.07, -0.1, 0.5, -0.45], dtype=torch.float64)
    out = shift_hue(x, 6 * turns)
    for i in range(4):
        ref = _reference(x[i].numpy(), 3, float(turns[i]))
        assert np.abs(out[i].numpy() - ref).max() < 1e-9


def test_gray_is_itu_601_luma() -> None:
    x = _img(2, 4, 2).double()
    assert np.allclose(gray(x)[:, 0].numpy(), [_np_gray(a) for a in x.numpy()])


@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-9), (torch.float32, 5e-6)])
def test_jitter_gives_each_sample_its_four_ops_in_its_own_order(
    dtype: torch.dtype, atol: float
) -> None:
    """Every jittered sample undergoes brightness, contrast, saturation and hue once each,
    in the order drawn for it; the others are untouched: equal to applying the ops to each
    image alone (float64 references)."""
    b, g = 24, torch.Generator().manual_seed(3)
    x = _img(b, 4, 4).to(dtype)
    apply = torch.rand(b, generator=g) < 0.7
    factors = torch.stack(
        [torch.rand(b, generator=g) * 0.8 + 0.6 for _ in range(3)]
        + [torch.rand(b, generator=g) * 0.6 - 0.3],
        1,
    ).to(dtype)
    order = torch.rand(b, 4, generator=g).argsort(1)
    plan = plan_jitter(apply, factors, order)
    assert sum(len(r) for r in plan.hue_rows) == int(apply.sum())
    out = jitter(x, plan)
    for i in range(b):
        ref = x[i].double().numpy()
        if apply[i]:
            for op in order[i].tolist():
                ref = _reference(ref, op, float(factors[i, op]))
        assert np.abs(out[i].double().numpy() - ref).max() < atol, i


def test_jitter_leaves_its_input_alone_and_skips_empty_steps() -> None:
    x = _img(3, 4, 5)
    before = x.clone()
    order = torch.tensor([[3, 0, 1, 2]] * 3)  # step 0: hue only
    plan = plan_jitter(torch.tensor([True, False, True]), torch.full((3, 4), 0.2), order)
    assert plan.blends == (False, True, True, True)
    assert [r.tolist() for r in plan.hue_rows] == [[0, 2], [], [], []]
    out = jitter(x, plan)
    assert torch.equal(x, before) and torch.equal(out[1], x[1])
    assert not torch.equal(out[0], x[0])


def test_fixed_shape_jitter_equals_the_row_sets_bit_for_bit() -> None:
    """The form ``torch.compile`` traces (every step blends the whole batch, the hue shift
    taken where ``plan.hue`` says) gives exactly the row-set form's values in eager mode,
    samples left alone and steps without a blend or a hue included."""
    b, g = 16, torch.Generator().manual_seed(5)
    x = _img(b, 5, 6)
    order = torch.rand(b, 4, generator=g).argsort(1)
    order[:4] = torch.tensor([3, 0, 1, 2])  # step 0: hue or nothing for these
    factors = torch.rand(b, 4, generator=g) * 0.4 + torch.tensor([0.8, 0.8, 0.8, -0.2])
    plan = plan_jitter(torch.rand(b, generator=g) < 0.6, factors, order)
    fixed = plan._replace(hue_rows=(), blends=())
    out = jitter(x, fixed)
    assert torch.equal(out, jitter(x, plan))
    assert not torch.equal(out, jitter(x, fixed._replace(hue=torch.zeros_like(plan.hue))))
