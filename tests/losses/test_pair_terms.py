"""The fused paths from the views (:mod:`contrastkit.losses.functional._pair_terms`):
NT-Xent, DCL, FlatNCE and MACL (InfoNCE's terms), InfoNCE over queries and keys with or
without MoCo's queue (the cross terms); SupCon's and LASCon-out's (the supervised terms)
are in ``test_supervised_pair_terms.py``.

The modules take them where :func:`~contrastkit.losses.views.fused_pair_terms` allows; they
must give the general path's values and gradients (the functional losses on
:func:`~contrastkit.losses.views.ntxent_negatives` or
:func:`~contrastkit.losses.views.cross_view_negatives`) to rounding, and exact first and
second derivatives of their own.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from pair_views import random_views, value_and_grads
from torch import Tensor

from contrastkit import losses
from contrastkit.losses import functional as F
from contrastkit.losses import infonce
from contrastkit.losses import macl as macl_module
from contrastkit.losses._indices import pair_exclude
from contrastkit.losses.functional._pair_terms import (
    cross_terms,
    dual_pair_terms,
    pair_terms,
)
from contrastkit.losses.views import cross_view_negatives, fused_pair_terms, ntxent_negatives

GENERAL = {"ntxent": F.info_nce, "dcl": F.dcl, "flatnce": F.flatnce}


@pytest.fixture
def taken(count_calls: Callable[[object, str], list[int]]) -> list[int]:
    """Counts the calls that take the fused path."""
    return count_calls(infonce, "ntxent_terms")


@pytest.mark.parametrize("name", sorted(GENERAL))
@pytest.mark.parametrize(
    ("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 2e-6), (torch.bfloat16, 2e-6)]
)
@pytest.mark.parametrize("n", [2, 7, 33])
def test_the_fused_path_gives_the_general_paths_loss_and_gradients(
    name: str, dtype: torch.dtype, tol: float, n: int, taken: list[int]
) -> None:
    z1, z2 = random_views(n, 5, dtype, seed=n)
    with torch.no_grad():
        z1[n // 2] = 0.0  # a zero row: zero in the loss, zero gradient
    module = losses.get(name, temperature=0.2, backend="torch")
    fused, fused_grads = value_and_grads(module, z1, z2)
    assert taken == [1]

    def general(a: Tensor, b: Tensor) -> Tensor:
        return GENERAL[name](*ntxent_negatives(a, b), temperature=0.2)

    want, want_grads = value_and_grads(general, z1, z2)
    assert fused.dtype == want.dtype
    assert abs((fused - want).item()) <= tol * max(1.0, abs(want.item()))
    for got, ref in zip(fused_grads, want_grads, strict=True):
        assert got.dtype == dtype
        assert float((got.double() - ref.double()).abs().max()) <= tol * float(ref.abs().max())
    assert float(fused_grads[0][n // 2].abs().max()) == 0.0


def test_calls_the_fused_path_cannot_take_go_the_general_way(
    taken: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    z1, z2 = random_views(6, 4, torch.float32)
    queue = torch.randn(5, 4)
    cases = [
        (losses.get("ntxent", block_size=4), (z1, z2)),
        (losses.get("ntxent", temperature=0.01), (z1, z2)),  # a row sum could underflow
        (losses.get("ntxent"), (z1, z2, queue)),
        (losses.get("hcl"), (z1, z2)),  # not a SingleTemperature loss
    ]
    for module, args in cases:
        assert torch.isfinite(module(*args))
    assert taken == []
    assert fused_pair_terms(z1, 0.1, None, False, "auto")
    assert not fused_pair_terms(z1, 0.02, None, False, "auto")
    assert not fused_pair_terms(z1, 0.1, 8, False, "auto")
    assert not fused_pair_terms(z1[0], 0.1, None, False, "auto")  # a 1-D input: the checks
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # where Triton kernels run on the CPU
    with pytest.raises(ValueError, match="backend='triton' needs CUDA"):
        fused_pair_terms(z1, 0.1, None, False, "triton")


@pytest.mark.parametrize("outputs", [(0, 1), (0,), (1,)])
@pytest.mark.parametrize("grads_of", [(True, True), (True, False)])
def test_first_and_second_derivatives_are_exact(
    outputs: tuple[int, ...], grads_of: tuple[bool, bool]
) -> None:
    z1, z2 = random_views(5, 4, torch.float64, seed=3)
    z2.requires_grad_(grads_of[1])
    exclude = pair_exclude(5, 5, 0, z1.device)

    def terms(*views: Tensor) -> tuple[Tensor, ...]:
        both = pair_terms(*views, temperature=0.4, exclude=exclude)
        return tuple(both[i] for i in outputs)

    assert torch.autograd.gradcheck(terms, (z1, z2))
    assert torch.autograd.gradgradcheck(terms, (z1, z2))


def test_the_terms_are_infonces_terms() -> None:
    z1, z2 = random_views(9, 6, torch.float64, seed=5)
    nll, log_w, tau, alignment = pair_terms(z1, z2, 0.3, pair_exclude(9, 9, 0, z1.device))
    assert tau is None and alignment is None
    want_nll, want_log_w = F.info_nce_terms(*ntxent_negatives(z1, z2), temperature=0.3)
    torch.testing.assert_close(nll, want_nll, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(log_w, want_log_w, rtol=1e-12, atol=1e-12)
    z = torch.nn.functional.normalize(torch.cat([z1, z2]).detach(), dim=1)
    for i in range(18):  # a float64 loop over one anchor at a time
        positive = (i + 9) % 18
        logits = [float(z[i] @ z[j]) / 0.3 for j in range(18) if j != i]
        lse = torch.tensor(logits, dtype=torch.float64).logsumexp(0)
        assert nll[i].item() == pytest.approx(float(lse) - float(z[i] @ z[positive]) / 0.3)


@pytest.mark.parametrize("inter", [0.07, 1.0])
def test_the_second_temperatures_weights_come_from_the_same_product(inter: float) -> None:
    """``dual_pair_terms``: the terms at τ are ``pair_terms``'s, bit for bit, and its third
    output is ``log W`` at τ' (below and above τ = 0.3), without gradient."""
    z1, z2 = random_views(9, 6, torch.float64, seed=8)
    exclude = pair_exclude(9, 9, 0, z1.device)
    nll, log_w, log_w_inter = dual_pair_terms(z1, z2, 0.3, inter, exclude)
    want = pair_terms(z1, z2, 0.3, exclude)
    assert torch.equal(nll, want[0]) and torch.equal(log_w, want[1])
    want_inter = F.info_nce_terms(*ntxent_negatives(z1, z2), temperature=inter)[1]
    torch.testing.assert_close(log_w_inter, want_inter, rtol=1e-12, atol=1e-12)
    assert not log_w_inter.requires_grad and nll.requires_grad


@pytest.mark.parametrize(
    "setting",
    [{}, {"temperature": 0.2, "inter_temperature": 0.5}, {"inter_temperature": 0.02}],
)
@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 2e-6)])
def test_dual_temperature_takes_the_fused_terms_at_both_temperatures(
    setting: dict,
    dtype: torch.dtype,
    tol: float,
    count_calls: Callable[[object, str], list[int]],
) -> None:
    z1, z2 = random_views(9, 5, dtype, seed=21)
    module = losses.get("dual_temperature", **setting)
    taken = count_calls(infonce, "dual_ntxent_terms")
    got, got_grads = value_and_grads(module, z1, z2)
    # τ with gradient and τ_inter without, from one call; general where a row sum could
    # underflow at the lower temperature (τ_inter = 0.02 in float32)
    underflow = setting.get("inter_temperature") == 0.02 and dtype == torch.float32
    assert taken == ([] if underflow else [1])
    want, want_grads = value_and_grads(
        lambda a, b: module.similarity_loss(*ntxent_negatives(a, b)), z1, z2
    )
    assert abs((got - want).item()) <= tol * abs(want.item())
    for g, ref in zip(got_grads, want_grads, strict=True):
        assert float((g - ref).abs().max()) <= tol * float(ref.abs().max())


MACL_SETTINGS = [
    {},
    {"adaptive": False},
    {"reweight": False},
    {"temperature": 0.2, "alpha": 0.3, "a0": 0.2},
    {"temperature": 0.1, "alpha": 2.0, "a0": 0.8},  # the sentence setting: τ_a may reach 0.01
]


@pytest.fixture
def macl_taken(count_calls: Callable[[object, str], list[int]]) -> list[int]:
    return count_calls(macl_module, "ntxent_terms")


@pytest.mark.parametrize("setting", MACL_SETTINGS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_macl_takes_the_fused_path_with_its_adaptive_temperature(
    setting: dict, dtype: torch.dtype, macl_taken: list[int]
) -> None:
    g = torch.Generator().manual_seed(7)
    z1 = torch.randn(10, 6, generator=g, dtype=dtype)
    z2 = (z1 + 0.5 * torch.randn(10, 6, generator=g, dtype=dtype)).requires_grad_()
    z1.requires_grad_()
    module, general = losses.get("macl", **setting), losses.get("macl", **setting)
    fused, fused_grads = value_and_grads(module, z1, z2)
    want, want_grads = value_and_grads(
        lambda a, b: general.similarity_loss(*ntxent_negatives(a, b)), z1, z2
    )
    # fused unless a row sum could underflow at the lowest τ_a (0.01 in float32)
    assert macl_taken == ([] if setting.get("alpha") == 2.0 and dtype == torch.float32 else [1])
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    assert abs((fused - want).item()) <= tol * abs(want.item())
    for got, ref in zip(fused_grads, want_grads, strict=True):
        assert float((got - ref).abs().max()) <= tol * float(ref.abs().max())
    for key, value in general.diagnostics().items():
        assert module.diagnostics()[key] == pytest.approx(value, rel=tol, abs=tol)


def test_a_callable_temperature_acts_as_the_detached_tau_it_returns() -> None:
    """τ = f(A) carries no gradient (MACL's sg), so the first and second derivatives are
    those of the number τ: compared with the number path (exact itself, above)."""
    z1, z2 = random_views(5, 4, torch.float64, seed=9)
    exclude = pair_exclude(5, 5, 0, z1.device)

    def tau_of(alignment: Tensor) -> Tensor:
        return 0.3 * (1.0 + 0.5 * alignment)

    nll, _, tau, alignment = pair_terms(z1, z2, tau_of, exclude)
    u1, u2 = (torch.nn.functional.normalize(z.detach(), dim=1) for z in (z1, z2))
    assert alignment.item() == pytest.approx(float((u1 * u2).sum(1).mean()), rel=1e-12)
    assert tau.item() == pytest.approx(0.3 * (1.0 + 0.5 * alignment.item()), rel=1e-12)
    assert not tau.requires_grad and not alignment.requires_grad
    probe = torch.randn(2, 5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    results = []
    for temperature in (tau_of, tau.item()):
        nll, log_w, _, _ = pair_terms(z1, z2, temperature, exclude)
        value = (nll * torch.linspace(0.5, 1.5, 10, dtype=torch.float64)).sum() + log_w.sum()
        grads = torch.autograd.grad(value, (z1, z2), create_graph=True)
        hvp = torch.autograd.grad(
            (grads[0] * probe[0]).sum() + (grads[1] * probe[1]).sum(), (z1, z2)
        )
        results.append((value.detach(), *(g.detach() for g in grads), *hvp))
    for got, want in zip(*results, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_a_subclass_that_redefines_the_loss_keeps_its_own_definition() -> None:
    z1, z2 = random_views(6, 4, torch.float32)

    class Halved(losses.NTXent):
        def similarity_loss(self, pos: Tensor, neg) -> Tensor:
            return 0.5 * super().similarity_loss(pos, neg)

    class HalvedMACL(losses.MACL):
        def similarity_loss(self, pos: Tensor, neg) -> Tensor:
            return 0.5 * super().similarity_loss(pos, neg)

    assert Halved.from_terms is None and losses.NTXent.from_terms is not None
    for child, parent in ((Halved(), losses.NTXent()), (HalvedMACL(), losses.MACL())):
        assert child(z1, z2).item() == pytest.approx(0.5 * parent(z1, z2).item(), rel=1e-6)


@pytest.fixture
def cross_taken(count_calls: Callable[[object, str], list[int]]) -> list[int]:
    return count_calls(infonce, "cross_view_terms")


@pytest.mark.parametrize(
    ("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 2e-6), (torch.bfloat16, 2e-6)]
)
@pytest.mark.parametrize("key_grad", [True, False])
@pytest.mark.parametrize("queue_rows", [11, 0])
def test_infonce_with_and_without_a_queue_takes_the_fused_path(
    dtype: torch.dtype, tol: float, key_grad: bool, queue_rows: int, cross_taken: list[int]
) -> None:
    """MoCo's layout (a queue of 11 keys) and SimCSE's (no queue: the other keys are the
    negatives and take gradients)."""
    query, key = random_views(7, 5, dtype, seed=17)
    key.requires_grad_(key_grad)
    queue = None
    if queue_rows:
        queue = torch.randn(queue_rows, 5, dtype=dtype, generator=torch.Generator().manual_seed(3))
        queue.requires_grad_()  # a constant all the same: no gradient reaches it
    with torch.no_grad():
        query[2] = 0.0
    leaves = (query, key) if key_grad else (query,)
    module = losses.get("infonce", temperature=0.2)
    fused = module(query, key, queue)
    fused_grads = torch.autograd.grad(fused, leaves)
    assert cross_taken == [1] and (queue is None or queue.grad is None)
    want = F.info_nce(*cross_view_negatives(query, key, queue), temperature=0.2)
    want_grads = torch.autograd.grad(want, leaves)
    assert abs((fused - want).item()) <= tol * max(1.0, abs(want.item()))
    for got, ref in zip(fused_grads, want_grads, strict=True):
        assert got.dtype == dtype
        assert float((got.double() - ref.double()).abs().max()) <= tol * float(ref.abs().max())


@pytest.mark.parametrize("outputs", [(0, 1), (0,), (1,)])
@pytest.mark.parametrize("queue_rows", [6, 0])
def test_the_cross_terms_have_exact_first_and_second_derivatives(
    outputs: tuple[int, ...], queue_rows: int
) -> None:
    query, key = random_views(4, 3, torch.float64, seed=19)
    g = torch.Generator().manual_seed(5)
    queue = torch.randn(queue_rows, 3, dtype=torch.float64, generator=g) if queue_rows else None

    def terms(*inputs: Tensor) -> tuple[Tensor, ...]:
        both = cross_terms(*inputs, queue, 0.4)
        return tuple(both[i] for i in outputs)

    assert torch.autograd.gradcheck(terms, (query, key))
    assert torch.autograd.gradgradcheck(terms, (query, key))


def test_infonce_calls_the_fused_path_cannot_take_go_the_general_way(
    cross_taken: list[int],
) -> None:
    query, key = random_views(6, 4, torch.float32)
    queue = torch.randn(9, 4)

    class Halved(losses.InfoNCE):
        def similarity_loss(self, pos: Tensor, neg) -> Tensor:
            return 0.5 * super().similarity_loss(pos, neg)

    for module in (losses.get("infonce", block_size=4), losses.get("infonce", temperature=0.01)):
        assert torch.isfinite(module(query, key, queue)) and torch.isfinite(module(query, key))
    halved = Halved()(query, key, queue).item()
    assert cross_taken == []
    assert halved == pytest.approx(0.5 * losses.get("infonce")(query, key, queue).item())
