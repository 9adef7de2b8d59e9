"""Unit rows: L2 normalisation with a zero gradient for zero rows, the first operation of
every cosine-similarity loss (:func:`unit_rows`), and the pieces of it that the fused
``autograd.Function`` s use inside their own forward and backward (:func:`row_norms`,
:func:`unit_and_norm`, :func:`unit_grad`). A module of its own, under :mod:`._common`,
the fused terms and the Triton wrappers (:mod:`._gram_triton`)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

NORM_EPS = 1e-12  # rows with a smaller L2 norm count as zero rows


def row_norms(z: Tensor) -> Tensor:
    """``‖z‖`` over the last dimension ``[..., 1]``, ``inf`` for the rows of norm <=
    ``NORM_EPS``: dividing by it makes them zero rows with a zero gradient."""
    norm = torch.linalg.vector_norm(z, dim=-1, keepdim=True)
    return norm.masked_fill_(norm <= NORM_EPS, math.inf)


def unit_and_norm(z: Tensor) -> tuple[Tensor, Tensor]:
    """The unit rows ``z/‖z‖`` and :func:`row_norms` (no autograd of their own: for the
    forward of a Function whose backward calls :func:`unit_grad`)."""
    norm = row_norms(z)
    return z / norm, norm


def unit_grad(grad_u: Tensor, u: Tensor, norm: Tensor) -> Tensor:
    """``∂z = (∂u - u·(u·∂u)) / ‖z‖`` for ``u = z/‖z‖`` of ``[M, d]`` rows, in place in
    ``grad_u``."""
    radial = torch.linalg.vecdot(grad_u, u)[:, None]
    return grad_u.addcmul_(u, radial, value=-1.0).div_(norm)


def unit_rows(z: Tensor) -> Tensor:
    """L2-normalise the last dimension; rows of norm <= ``NORM_EPS`` map to zero rows with
    a zero gradient (plain ``z / max(‖z‖, eps)`` gives an exactly-zero row a gradient of
    ``1/eps`` = 1e12 times the upstream one). Rows above ``eps``: identical to
    ``torch.nn.functional.normalize``; a NaN row stays NaN. A row whose norm overflows its
    dtype (float32: entries near 1e19 and above) also becomes a zero row, as it does under
    ``normalize``; rescaling every row first would cost the hot path a kernel."""
    return _UnitRows.apply(z)[0]


class _UnitRows(torch.autograd.Function):
    """``u = z / ‖z‖`` over the last dimension, with the closed-form backward
    ``∂z = (g - u·(u·g)) / ‖z‖`` (four operators; autograd's division and norm take
    eleven). A row of norm <= ``NORM_EPS`` has its norm replaced by ``inf``: ``u = 0``
    and ``∂z = g / inf = 0``.

    Double backward: exact, to any order, at no cost to the first-order path. The
    backward reads only the Function's outputs, ``u`` and the norm (a second output that
    :func:`unit_rows` drops), with differentiable operations, so autograd carries their
    dependence on ``z`` back through this Function; the norm's own gradient
    (``∂‖z‖/∂z = u``, zero for the rows below ``NORM_EPS``) arrives only then. Nothing is
    saved beyond ``u`` and the norm (not ``z``: no extra ``[N, d]`` kept alive).
    """

    @staticmethod
    def forward(ctx, z: Tensor) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        unit, norm = unit_and_norm(z)
        ctx.save_for_backward(unit, norm)
        ctx.set_materialize_grads(False)
        return unit, norm

    @staticmethod
    def backward(ctx, grad: Tensor | None, grad_norm: Tensor | None) -> Tensor | None:  # type: ignore[override]
        unit, norm = ctx.saved_tensors
        out = None
        if grad is not None:
            radial = (grad * unit).sum(dim=-1, keepdim=True)
            out = grad.addcmul(unit, radial, value=-1.0) / norm
        # torch.compile hands the dropped norm a zero gradient; only a second derivative
        # (never compiled) gives it a nonzero one
        if grad_norm is not None and not torch.compiler.is_compiling():
            out = unit * grad_norm if out is None else out.addcmul(unit, grad_norm)
        return out
