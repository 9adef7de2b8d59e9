"""The gradients of the fused Gram statistics as differentiable torch operations: what the
backward passes of :class:`._gram_torch._GramLogSumExp`, :class:`._gram_torch._GramSoftmaxMean`
and :class:`._gram_triton._GramStatistic` compute when that backward is itself differentiated.

Their fast backward passes work in place on kept exponentials (torch) or in kernels
(Triton): autograd cannot differentiate them, and recording them would give a wrong second
derivative (the dependence of the kept tensors on the inputs is lost). A backward run with
grad mode on, which is what ``torch.autograd.grad(..., create_graph=True)`` (or
``backward(create_graph=True)``) does, calls :func:`gram_grads` instead: the same gradient
as plain torch operations on the saved inputs, which autograd records, so second (and
higher) derivatives are exact, those through the incoming gradient included. It forms the
whole ``[M, K]`` softmax (``block_size`` does not apply: the recorded graph keeps it
anyway), in at least float32. The first-order path (grad mode off) never runs it and so
launches no extra kernel.

Example:
    >>> import torch
    >>> a = torch.randn(4, 3, dtype=torch.float64)
    >>> grad_a, _ = gram_grads(a, None, None, None, 2.0, "lse", torch.ones(4, dtype=a.dtype), False)
    >>> grad_a.shape
    torch.Size([4, 3])
"""

from __future__ import annotations

import torch
from torch import Tensor

MODES = ("lse", "mean", "mean_detached")


def differentiating_backward() -> bool:
    """Whether the running backward is recorded by autograd (``create_graph=True`` turns
    grad mode on in backward; a plain ``backward()`` runs it with grad mode off). False
    while ``torch.compile`` traces: compiled graphs take no double backward (AOTAutograd
    refuses one itself), and the traced backward keeps the fast path. Also the switch of
    :class:`.infonce._Terms`."""
    return torch.is_grad_enabled() and not torch.compiler.is_compiling()


def gram_grads(
    anchors: Tensor,
    keys: Tensor | None,
    extra: Tensor | None,
    exclude: Tensor | None,
    scale: float | Tensor,
    mode: str,
    grad: Tensor,
    need_keys: bool,
) -> tuple[Tensor, Tensor | None]:
    """``(∂anchors, ∂keys)`` of the row statistic ``mode`` over ``s = anchors·kᵀ``,
    ``k = cat(keys or anchors, extra)`` (``extra`` constant), columns in ``exclude``
    left out, for the incoming gradient ``grad [M]``, as differentiable operations.

    With ``p_i = softmax_j(scale·s_ij)``: ``"lse"`` (``log Σ_j exp(scale·s_ij)``) has
    ``∂/∂s_ij = scale·p_ij``; ``"mean"`` (``E_i = Σ_j p_ij·s_ij``) has
    ``p_ij·(1 + scale·(s_ij - E_i))``; ``"mean_detached"`` has ``sg(p_ij)``, so its
    second derivative holds the weights constant, as autograd does for
    ``(p.detach()·s).sum(1)``. ``∂keys`` is None for own keys (their part is in
    ``∂anchors``) or without ``need_keys``; both come back in their inputs' dtypes.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    dtype = torch.promote_types(anchors.dtype, torch.float32)
    a = anchors.to(dtype)
    own = a if keys is None else keys.to(dtype)
    k = own if extra is None else torch.cat([own, extra.detach().to(dtype)])
    sim = a @ k.T
    logits = sim * scale
    if exclude is not None:
        logits = logits.scatter(1, exclude, float("-inf"))
    p = torch.softmax(logits, dim=1)  # exactly 0 at the excluded columns
    g = grad.to(dtype)[:, None]
    if mode == "lse":
        x = p * (g * scale)
    elif mode == "mean":
        mean = (p * sim).sum(dim=1, keepdim=True)
        x = p * (1.0 + scale * (sim - mean)) * g
    else:
        x = p.detach() * g
    grad_a = x @ k
    if keys is None:
        return (grad_a + x[:, : a.shape[0]].T @ a).to(anchors.dtype), None
    grad_k = (x[:, : own.shape[0]].T @ a).to(keys.dtype) if need_keys else None
    return grad_a.to(anchors.dtype), grad_k
