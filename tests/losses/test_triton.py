"""The Triton backend of the fused Gram statistics (issue #38) against the torch path and
float64 references: values and gradients, float32 and bfloat16, exclusions, queues, ragged
tiles, detached weights, and through ``losses.get(name, backend=...)``.

Without a GPU the kernels run in Triton's CPU interpreter (``TRITON_INTERPRET=1``, set by
``tests/conftest.py``); with CUDA they run on the GPU. Shapes stay small (the interpreter is
slow); ``tiles=(16, 16)`` with sizes that are no multiple of 16 gives ragged tiles.
"""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytest.importorskip("triton", reason="the Triton backend needs the gpu extra (triton)")

from contrastkit import losses  # noqa: E402
from contrastkit._optional import MissingExtraError  # noqa: E402
from contrastkit.losses.functional import _backend, _gram_triton  # noqa: E402
from contrastkit.losses.functional._negatives import (  # noqa: E402
    GramNegatives,
    gram_logsumexp,
    gram_softmax_mean,
)

TILES = (16, 16)
SCALE = 5.0  # σ: 1/τ for τ = 0.2, or CACR's 2t⁻ for t⁻ = 2.5
MODES = ("lse", "mean", "mean_detached")


def _unit(rows: int, d: int, g: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    return F.normalize(torch.randn(rows, d, generator=g, dtype=torch.float64), dim=1).to(dtype)


def _statistic(mode: str, backend: str, a, keys, extra, exclude, scale=SCALE):
    """The statistic ``mode`` on ``backend``; the Triton call uses the small test tiles."""
    if backend == "triton":
        if mode == "lse":
            return _gram_triton.logsumexp(a, scale, keys, extra, exclude, TILES)
        return _gram_triton.softmax_mean(
            a, scale, keys, extra, exclude, mode == "mean_detached", TILES
        )
    if mode == "lse":
        return gram_logsumexp(a, scale, keys, extra, exclude)
    return gram_softmax_mean(a, scale, keys, extra, exclude, detach_weights=mode == "mean_detached")


def _value_and_grads(mode, backend, dtype, a, keys, extra, exclude, weight, scale=SCALE):
    """The statistic and the gradients of ``Σ_i w_i·stat_i`` w.r.t. anchors and keys, with
    the inputs first rounded to ``dtype`` (float64 copies of them for the references)."""
    leaves = [t.to(dtype).requires_grad_() if t is not None else None for t in (a, keys)]
    ex = None if extra is None else extra.to(dtype)
    out = _statistic(mode, backend, leaves[0], leaves[1], ex, exclude, scale)
    (out.double() * weight).sum().backward()
    return out.detach().double(), [None if t is None else t.grad.double() for t in leaves]


def _inputs(m: int, n_own: int | None, q: int, d: int, r: int, seed: int = 0):
    """Anchors ``[m, d]``, own keys (``None``: the anchors), a queue ``[q, d]`` and
    ``exclude [m, r]`` (random columns, repeats allowed) on DEVICE, unit rows."""
    g = torch.Generator().manual_seed(seed)
    a = _unit(m, d, g, torch.float64)
    keys = None if n_own is None else _unit(n_own, d, g, torch.float64)
    extra = _unit(q, d, g, torch.float64) if q else None
    width = (m if n_own is None else n_own) + q
    exclude = torch.randint(0, width, (m, r), generator=g) if r else None
    weight = torch.randn(m, generator=g, dtype=torch.float64)
    return [None if t is None else t.to(DEVICE) for t in (a, keys, extra, exclude, weight)]


def _close(got: torch.Tensor, ref: torch.Tensor, rel: float) -> float:
    """Max abs error, asserted below ``rel`` times the reference's largest magnitude."""
    err = (got - ref).abs().max().item()
    assert err <= rel * max(ref.abs().max().item(), 1.0), (err, rel)
    return err


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "layout",
    [
        pytest.param((37, None, 0, 3), id="own-keys-exclude"),  # SimCLR-like: keys = anchors
        pytest.param((37, 29, 21, 2), id="keys-queue-exclude"),  # keys plus a MoCo queue
    ],
)
def test_float32_matches_torch_path_and_float64(mode: str, layout: tuple) -> None:
    m, n_own, q, r = layout
    a, keys, extra, exclude, w = _inputs(m, n_own, q, d=12, r=r)
    got = _value_and_grads(mode, "triton", torch.float32, a, keys, extra, exclude, w)
    torch32 = _value_and_grads(mode, "torch", torch.float32, a, keys, extra, exclude, w)
    ref = _value_and_grads(mode, "torch", torch.float64, a, keys, extra, exclude, w)
    for x, y, z in zip(
        [got[0], *got[1]], [torch32[0], *torch32[1]], [ref[0], *ref[1]], strict=True
    ):
        if z is not None:
            _close(x, z, 2e-6)  # float32 rounding of sums over ~60 terms
            _close(x, y, 2e-6)


@pytest.mark.parametrize("mode", MODES)
def test_bfloat16_inputs_accumulate_in_float32(mode: str) -> None:
    """bf16 in, float32 statistics out: values to float32 accuracy of the bf16 inputs'
    exact statistic; gradients (bf16, from bf16-rounded coefficients) to a few bf16 ulps."""
    a, keys, extra, exclude, w = _inputs(37, 29, 21, d=12, r=2)
    a, keys, extra = (t.bfloat16().double() for t in (a, keys, extra))  # exactly representable
    value, grads = _value_and_grads(mode, "triton", torch.bfloat16, a, keys, extra, exclude, w)
    ref, ref_grads = _value_and_grads(mode, "torch", torch.float64, a, keys, extra, exclude, w)
    assert _statistic(mode, "triton", a.bfloat16(), None, None, None).dtype == torch.float32
    _close(value, ref, 2e-6)
    for x, y in zip(grads, ref_grads, strict=True):
        _close(x, y, 2e-2)


@pytest.mark.parametrize("mode", MODES)
def test_rows_with_all_but_a_few_negatives_excluded(mode: str) -> None:
    """Each row keeps 2 of its 20 columns (different ones per row)."""
    m, n_own, d = 20, 20, 8
    a, keys, _, _, w = _inputs(m, n_own, 0, d=d, r=0, seed=1)
    g = torch.Generator().manual_seed(2)
    order = torch.stack([torch.randperm(n_own, generator=g) for _ in range(m)])
    exclude = order[:, 2:].to(DEVICE)
    got = _value_and_grads(mode, "triton", torch.float32, a, keys, None, exclude, w)
    ref = _value_and_grads(mode, "torch", torch.float64, a, keys, None, exclude, w)
    for x, y in zip([got[0], *got[1]], [ref[0], *ref[1]], strict=True):
        _close(x, y, 2e-6)


def test_queue_only_keys_and_zero_scale() -> None:
    """CACR's MoCo form: no own keys (``keys`` empty), the queue alone; and σ = 0, where
    ``lse`` is the log of the number of negatives."""
    a, _, extra, _, w = _inputs(19, None, 23, d=12, r=0, seed=3)
    keys = a[:0]
    got = _value_and_grads("mean", "triton", torch.float32, a, keys, extra, None, w)
    ref = _value_and_grads("mean", "torch", torch.float64, a, keys, extra, None, w)
    _close(got[0], ref[0], 2e-6)
    _close(got[1][0], ref[1][0], 2e-6)
    assert got[1][1].shape == (0, 12)
    lse = _gram_triton.logsumexp(a.float(), 0.0, keys.float(), extra.float(), tiles=TILES)
    torch.testing.assert_close(lse, torch.full_like(lse, torch.tensor(23.0).log().item()))


def test_deterministic_and_block_size_accepted() -> None:
    """No atomics: two backward passes give bitwise equal gradients; ``block_size`` (the
    torch path's memory knob) is accepted and changes nothing on the fused path."""
    a, _, _, exclude, w = _inputs(37, None, 0, d=12, r=2, seed=4)
    x = a.float().requires_grad_()

    def grad(block: int | None) -> torch.Tensor:
        out = gram_logsumexp(x, SCALE, None, None, exclude, block, "triton")
        return torch.autograd.grad((out * w.float()).sum(), x)[0]

    first = grad(None)
    assert torch.equal(first, grad(None))
    assert torch.equal(first, grad(5))


def test_backend_resolution_and_its_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # CPU tensors reach the dtype and d checks
    cpu = torch.zeros(3, 8)
    assert _backend.resolve("auto", cpu) == "torch"  # auto: Triton only for CUDA tensors
    with pytest.raises(ValueError, match="backend must be one of"):
        _backend.resolve("cuda", cpu)
    with pytest.raises(ValueError, match="float32, bfloat16 or float16"):
        gram_logsumexp(cpu.double(), 1.0, backend="triton")
    with pytest.raises(ValueError, match="d <= 256"):
        gram_logsumexp(torch.zeros(3, 257), 1.0, backend="triton")
    with pytest.raises(ValueError, match="powers of two"):
        _gram_triton.logsumexp(cpu, 1.0, tiles=(16, 24))
    meta = torch.zeros(3, 8, device="meta")  # not run by the interpreter either
    with pytest.raises(ValueError, match=r"needs CUDA tensors, got meta"):
        losses.get("ntxent", backend="triton")(meta, meta)
    # two scales at once (HCL) resolve on the promoted dtype, as one scale does
    two = GramNegatives(cpu + 1.0, extra=torch.ones(2, 8, dtype=torch.float64), backend="triton")
    with pytest.raises(ValueError, match="float32, bfloat16 or float16"):
        two.logsumexps((3.0, 1.0))
    monkeypatch.setattr(torch.version, "hip", "6.2")  # ROCm: no tf32x3 products
    assert _backend.resolve("auto", cpu, rows=1 << 20) == "torch"
    with pytest.raises(ValueError, match="needs an NVIDIA GPU"):
        _backend.resolve("triton", cpu)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match=r"needs CUDA tensors, got cpu.*TRITON_INTERPRET=1"):
        losses.get("ntxent", backend="triton")(cpu, cpu + 1.0)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setitem(sys.modules, "triton", None)  # as if triton were not installed
    with pytest.raises(MissingExtraError, match=r"contrastkit\[gpu\]"):
        gram_logsumexp(cpu, 1.0, backend="triton")


def test_registry_declares_the_backends() -> None:
    fused = {n for n in losses.available() if losses.info(n).fused_backends}
    assert fused == {
        "ntxent", "infonce", "dcl", "dclw", "flatnce", "dual_temperature", "hcl", "macl",
        "supcon", "lascon", "cacr", "cmc",
    }  # fmt: skip
    assert losses.get("ntxent", backend="triton").backend == "triton"
    assert isinstance(losses.get("vicreg", backend="auto"), losses.VICReg)  # dropped: torch only
    with pytest.raises(ValueError, match=r"'vicreg' has no fused backend.*losses with one: cacr"):
        losses.check_args("vicreg", {"backend": "triton"})
    with pytest.raises(ValueError, match="backend must be one of 'auto', 'torch', 'triton'"):
        losses.get("macl", backend="cuda")
    with pytest.raises(ValueError, match="needs variant='out'"):
        losses.get("lascon", variant="in", backend="triton")


def _module_inputs(kind: str, n: int = 13, d: int = 16) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    z1, z2 = (torch.randn(n, d, generator=g).to(DEVICE) for _ in range(2))
    return {
        "pair": [z1, z2],
        "query_key": [z1, z2],
        "labeled": [z1, z2, (torch.arange(n) % 4).to(DEVICE)],
        "views": [torch.stack([z1, z2, z1 + 0.5 * z2])],
    }[kind]


@pytest.mark.parametrize(
    ("name", "kwargs", "queue"),
    [
        ("ntxent", {}, False),
        ("ntxent", {"block_size": 5}, True),
        ("infonce", {}, False),
        ("infonce", {}, True),  # MoCo: the queue alone
        ("dcl", {}, False),
        ("macl", {}, False),
        ("supcon", {}, False),
        ("lascon", {"similarity": "tanh"}, False),
        ("cacr", {}, False),
        ("cacr", {"detach_neg_weights": True}, True),
        ("cmc", {}, False),
        ("cmc", {}, True),  # in-batch negatives, then the queue's rows
    ],
)
def test_losses_match_across_backends(name: str, kwargs: dict, queue: bool) -> None:
    kind = losses.info(name).inputs
    base = _module_inputs(kind)
    extra = [torch.randn(11, 16, generator=torch.Generator().manual_seed(6)).to(DEVICE)]
    results = {}
    for backend in ("torch", "triton"):
        inputs = [t.clone().requires_grad_(t.is_floating_point()) for t in base]
        module = losses.get(name, backend=backend, **kwargs)
        value = module(*inputs, *(extra if queue else []))
        value.backward()
        grads = [t.grad for t in inputs if t.is_floating_point()]
        diagnostics = module.diagnostics() if losses.info(name).diagnostics else {}
        results[backend] = (value.detach(), grads, diagnostics)
    (v0, g0, d0), (v1, g1, d1) = results["torch"], results["triton"]
    torch.testing.assert_close(v1, v0, rtol=2e-6, atol=2e-6)
    for x, y in zip(g1, g0, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=2e-7)
    assert d1.keys() == d0.keys()
    for key in d0:
        assert d1[key] == pytest.approx(d0[key], rel=1e-5, abs=1e-6)


def test_cacr_queue_form_matches_across_backends() -> None:
    g = torch.Generator().manual_seed(7)
    q, k, queue = (
        F.normalize(torch.randn(n, 16, generator=g), dim=1).to(DEVICE) for n in (9, 9, 21)
    )
    grads = []
    for backend in ("torch", "triton"):
        x = q.clone().requires_grad_()
        value = losses.get("cacr", backend=backend).queue_loss(x, k, queue)
        grads.append((value.detach(), torch.autograd.grad(value, x)[0]))
    torch.testing.assert_close(grads[1][0], grads[0][0], rtol=2e-6, atol=2e-6)
    torch.testing.assert_close(grads[1][1], grads[0][1], rtol=1e-5, atol=2e-7)


def test_gram_negatives_carry_the_backend() -> None:
    a, _, _, exclude, _ = _inputs(11, None, 0, d=8, r=1, seed=8)
    neg = GramNegatives(a.float(), exclude=exclude, backend="triton")
    torch.testing.assert_close(neg.logsumexp(2.0), gram_logsumexp(a.float(), 2.0, exclude=exclude))


def _second_derivatives(mode: str, backend: str, a, keys, extra, exclude, w):
    """Through ``create_graph``: the derivatives of ``‖∇‖² + ‖w‖²`` w.r.t. the anchors, keys
    and the weights ``w`` of ``L = Σ w_i·stat_i + Σ a³`` (float32). The cube and ``‖w‖²``
    reach the leaves by other paths, so a statistic whose backward were taken as constant
    would not raise but silently drop its part (``once_differentiable`` does, both when
    its incoming gradient needs none and for ``grad(..., inputs=w)``)."""
    leaves = [t.float().requires_grad_() for t in (a, keys, w)]
    ex = None if extra is None else extra.float()
    out = _statistic(mode, backend, leaves[0], leaves[1], ex, exclude)
    loss = (out * leaves[2]).sum() + (leaves[0] ** 3).sum()
    grads = torch.autograd.grad(loss, leaves[:2], create_graph=True)
    penalty = sum((g**2).sum() for g in grads) + (leaves[2] ** 2).sum()
    return [g.detach() for g in grads], torch.autograd.grad(penalty, leaves, materialize_grads=True)


@pytest.mark.parametrize("mode", MODES)
def test_second_derivatives_match_the_torch_path(mode: str) -> None:
    """The torch path's second derivatives are exact (``tests/losses/test_double_backward.py``,
    float64); the Triton backward falls back to the same differentiable formula."""
    a, keys, extra, exclude, w = _inputs(13, 11, 5, d=8, r=2, seed=9)
    grads, second = _second_derivatives(mode, "triton", a, keys, extra, exclude, w)
    ref_grads, ref_second = _second_derivatives(mode, "torch", a, keys, extra, exclude, w)
    for x, y in zip([*grads, *second], [*ref_grads, *ref_second], strict=True):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-5)


def test_float32_rows_wider_than_128_take_one_pipeline_stage() -> None:
    """Two stages of float32 tiles at d = 256 need 246,272 bytes of shared memory in the
    keys' backward kernel (compiled for sm_90), over an H100 block's 232,448: one stage
    there, two for narrower or half-precision rows."""
    assert _gram_triton._stages(torch.float32, 256) == _gram_triton._stages(torch.float32, 129) == 1
    assert _gram_triton._stages(torch.float32, 128) == _gram_triton.NUM_STAGES == 2
    assert _gram_triton._stages(torch.bfloat16, 256) == 2
