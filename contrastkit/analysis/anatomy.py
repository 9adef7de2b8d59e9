"""Gradient anatomy: read GD·W and R off autograd for any differentiable two-view loss.

For anchor ``h_i`` the tangent part of ``∂L/∂h_i`` is fitted (least squares, on the tangent
plane at ``h_i``) as

    g_i ≈ Σ_{j≠i} c_ij n_j + c_ii hp_i,       n_j = hp_j ("other") or h_j ("same"),

which is the paradigm of Li, Zhang & Nie (ACL 2024), Eq. (4) / (12), with
``c_ij = GD_i W_ij`` and ``c_ii = −GD_i Σ_j W_ij R_ij``. The implied weight is
``c_ij`` (j ≠ i) and the implied ratio is the W-weighted mean ``R̄_i = −c_ii / Σ_{j≠i} c_ij``
(exactly ``R_i`` when R does not depend on ``j``). The fit is unique when ``N < d``;
``residual`` reports how much of each gradient lies outside the paradigm's span.

``loss_fn`` must be one-directional with one term per anchor and its negatives in one view
(the paradigm losses with ``symmetric=False``; InfoNCE over queries and keys). A symmetric
loss, or SimCLR's 2N layout (NT-Xent, MACL), adds terms that lie outside that basis or
belong to other anchors: the residual can stay small while the implied W and R are not the
loss's.

Example:
    >>> import torch
    >>> from contrastkit.analysis import gradient_anatomy
    >>> from contrastkit.losses import functional as F
    >>> out = gradient_anatomy(lambda a, b: F.mpt(a, b, symmetric=False),
    ...                        torch.randn(6, 16), torch.randn(6, 16))
    >>> out.weight.shape, out.ratio.shape
    (torch.Size([6, 6]), torch.Size([6]))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from contrastkit.losses.functional.paradigm import unit_views


@dataclass(frozen=True)
class Anatomy:
    """What :func:`gradient_anatomy` reads off the gradients of one batch."""

    grad: Tensor  # [N, d] tangent part of ∂L/∂h_i
    weight: Tensor  # [N, N] implied GD·W times the loss's overall scale (a mean over N
    # anchors: 1/N); zero diagonal. Shares and ratios do not depend on the scale
    ratio: Tensor  # [N] implied W-weighted mean ratio; 0 where ``active`` is False
    residual: Tensor  # [N] ‖fit − g_i‖ / ‖g_i‖ (0 where g_i = 0)
    active: Tensor  # [N] bool: the anchor receives a gradient (Σ_j c_ij ≠ 0)


def tangent(v: Tensor, at: Tensor) -> Tensor:
    """Project the rows of ``v`` (``[N, d]`` or ``[N, K, d]``) onto the tangent planes at
    the unit rows of ``at [N, d]``."""
    if v.dim() == 2:
        return v - (v * at).sum(dim=-1, keepdim=True) * at
    return v - (v * at[:, None]).sum(dim=-1, keepdim=True) * at[:, None]


def gradient_anatomy(
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    h: Tensor,
    hp: Tensor,
    negatives: str = "other",
) -> Anatomy:
    """Decompose autograd's per-anchor gradient of ``loss_fn(h, hp)`` into the paradigm.

    Args:
        loss_fn: any differentiable scalar loss of two views ``[N, d]``.
        h, hp: ``[N, d]`` views (normalised here; ``loss_fn`` receives unit rows).
        negatives: ``"other"`` (negatives ``hp_j``, Eq. 4) or ``"same"`` (``h_j``, Eq. 12).
    """
    if negatives not in ("other", "same"):
        raise ValueError(f"negatives must be 'other' or 'same', got {negatives!r}")
    a, b = unit_views(h, hp)
    n, dim = a.shape
    if n >= dim:
        raise ValueError(
            f"h must have shape [N, d] with N < d for a unique decomposition, got {tuple(a.shape)}"
        )
    a = a.detach().requires_grad_(True)
    b = b.detach()
    loss = loss_fn(a, b)
    if not isinstance(loss, Tensor) or loss.dim() != 0:
        raise TypeError("loss_fn must return a scalar tensor")
    (grad,) = torch.autograd.grad(loss, a, allow_unused=True)
    a = a.detach()
    grad = tangent(torch.zeros_like(a) if grad is None else grad.to(a.dtype), a)

    eye = torch.eye(n, dtype=torch.bool, device=a.device)
    base = b if negatives == "other" else a
    # basis of anchor i: rows n_j for j ≠ i, and hp_i in slot i
    basis = torch.where(eye[:, :, None], b[None], base[None].expand(n, n, dim))
    basis = tangent(basis, a)  # [N, N, d]
    coef = torch.linalg.lstsq(basis.transpose(1, 2), grad[:, :, None]).solution[:, :, 0]
    fit = (coef[:, :, None] * basis).sum(dim=1)
    norm = grad.norm(dim=1)
    residual = torch.where(norm > 0, (fit - grad).norm(dim=1) / norm.clamp(min=1e-300), 0.0)
    weight = coef.masked_fill(eye, 0.0)
    total = weight.sum(dim=1)
    finfo = torch.finfo(a.dtype)
    scale = coef.abs().amax(dim=1).clamp(min=finfo.tiny)
    active = (total.abs() > 1e3 * finfo.eps * scale) & (norm > 0)
    ratio = torch.where(active, -torch.diagonal(coef) / torch.where(active, total, 1.0), 0.0)
    return Anatomy(grad, weight, ratio, residual, active)


def summarize(out: Anatomy, h: Tensor, hp: Tensor, negatives: str = "other") -> dict[str, float]:
    """Batch summary of an :class:`Anatomy`, in the terms of the paper's three conjectures.

    * ``active``: fraction of anchors that receive a gradient (GD > 0);
    * ``hardest_share``: over active anchors, the mean share ``W_ij* / Σ_j W_ij`` of the
      hardest negative j* (highest cosine to the anchor, as in §3.1.2);
    * ``ratio_mean``: the mean implied ratio R̄ over active anchors;
    * ``residual_max``: the worst relative residual of the fit.

    Share and ratio are ``nan`` when no anchor is active (there is nothing to summarise);
    the share is also ``nan`` when an implied weight is negative (Barlow Twins' W can be),
    since a share of a signed sum means nothing.
    """
    if negatives not in ("other", "same"):
        raise ValueError(f"negatives must be 'other' or 'same', got {negatives!r}")
    a, b = unit_views(h, hp)
    base = b if negatives == "other" else a
    eye = torch.eye(a.shape[0], dtype=torch.bool, device=a.device)
    hardest = (a @ base.T).masked_fill(eye, float("-inf")).argmax(dim=1)
    w = out.weight.to(a.dtype)
    share = w.gather(1, hardest[:, None])[:, 0] / w.sum(dim=1).where(out.active, 1.0)
    act = out.active
    nan = float("nan")
    # a fitted zero weight may come out as -1e-17: negative means beyond rounding
    unsigned = bool((w >= -1e3 * torch.finfo(w.dtype).eps * w.abs().max()).all())
    return {
        "active": act.double().mean().item(),
        "hardest_share": share[act].mean().item() if act.any() and unsigned else nan,
        "ratio_mean": out.ratio[act].mean().item() if act.any() else nan,
        "residual_max": out.residual.max().item(),
    }
