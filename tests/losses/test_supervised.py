"""SupCon and LASCon (an anonymous ICLR 2023 submission) §3.4, Eq. (5)-(6), against float64
loops."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit.losses import LASCon, NTXent, SupCon
from contrastkit.losses import functional as F


def two_views(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=torch.float64), torch.randn(
        n, d, generator=g, dtype=torch.float64
    )


def log_u(z1: torch.Tensor, z2: torch.Tensor, tau: float) -> list[list[float]]:
    """log u(x_i, x_j) over the 2N views, LASCon §3.4.1 (diagonal left as nan)."""
    z = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    m = z.shape[0]
    out = []
    for i in range(m):
        den = sum(math.exp(float(z[i] @ z[a]) / tau) for a in range(m) if a != i)
        out.append(
            [math.nan if j == i else float(z[i] @ z[j]) / tau - math.log(den) for j in range(m)]
        )
    return out


def ref_scalar_similarity(y: list[float], kind: str, c: float) -> list[list[float]]:
    top = max(abs(v) for v in y)
    yt = [v / top for v in y]
    act = math.tanh if kind == "tanh" else (lambda x: x)
    return [[min(1.0, max(0.0, 1 - act(c * abs(a - b) / 2))) for b in yt] for a in yt]


def ref_vector_similarity(y: list[list[float]], kind: str, c: float) -> list[list[float]]:
    n = len(y)
    dist = [
        [sum(abs(p - q) for p, q in zip(y[i], y[j], strict=True)) for j in range(n)]
        for i in range(n)
    ]
    every = [dist[i][j] for i in range(n) for j in range(n)]  # Eq. 6: i, j ∈ I, i = j too
    lo, hi = min(every), max(every)
    act = math.tanh if kind == "tanh" else (lambda x: x)
    return [
        [min(1.0, max(0.0, 1 - act(c * (dist[i][j] - lo) / (hi - lo)))) for j in range(n)]
        for i in range(n)
    ]


def ref_lascon(lu: list[list[float]], s_n: list[list[float]], variant: str) -> float:
    n2 = len(lu)
    n = n2 // 2
    total = 0.0
    for i in range(n2):
        others = [j for j in range(n2) if j != i]
        s = {j: s_n[i % n][j % n] for j in others}
        mass = sum(s.values())
        if variant == "out":
            total += -sum(s[j] / mass * lu[i][j] for j in others)
        else:
            total += -math.log(sum(s[j] / mass * math.exp(lu[i][j]) for j in others))
    return total / n2


def ref_supcon(lu: list[list[float]], labels: list[int]) -> float:
    n2 = len(lu)
    lab = labels + labels
    total = 0.0
    for i in range(n2):
        positives = [p for p in range(n2) if p != i and lab[p] == lab[i]]
        total += -sum(lu[i][p] for p in positives) / len(positives)
    return total / n2


@pytest.mark.parametrize("n,d,classes", [(2, 3, 1), (6, 5, 3), (10, 8, 10)])
@pytest.mark.parametrize("tau", [0.1, 0.5])
def test_supcon_matches_loop(n: int, d: int, classes: int, tau: float) -> None:
    z1, z2 = two_views(n, d, seed=n * d)
    labels = torch.randint(0, classes, (n,), generator=torch.Generator().manual_seed(n))
    expected = ref_supcon(log_u(z1, z2, tau), labels.tolist())
    assert SupCon(tau)(z1, z2, labels).item() == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("kind", ["linear", "tanh"])
@pytest.mark.parametrize("c", [0.5, 1.0, 2.0, 3.0])
@pytest.mark.parametrize("variant", ["out", "in"])
def test_lascon_scalar_labels_match_loop(kind: str, c: float, variant: str) -> None:
    z1, z2 = two_views(7, 6, seed=3)
    y = torch.rand(7, generator=torch.Generator().manual_seed(4), dtype=torch.float64) * 8 - 3
    expected = ref_lascon(log_u(z1, z2, 0.2), ref_scalar_similarity(y.tolist(), kind, c), variant)
    got = LASCon(0.2, kind, c, variant)(z1, z2, y)
    assert got.item() == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("kind", ["linear", "tanh"])
@pytest.mark.parametrize("variant", ["out", "in"])
def test_lascon_vector_labels_match_eq_6(kind: str, variant: str) -> None:
    z1, z2 = two_views(6, 4, seed=5)
    y = torch.randn(6, 3, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    expected = ref_lascon(log_u(z1, z2, 0.1), ref_vector_similarity(y.tolist(), kind, 1.5), variant)
    assert LASCon(0.1, kind, 1.5, variant)(z1, z2, y).item() == pytest.approx(expected, rel=1e-10)


def test_label_similarity_values_of_eq_5() -> None:
    y = torch.tensor([0.0, 2.0, -4.0], dtype=torch.float64)  # ỹ = [0, 0.5, -1]
    s = F.label_similarity(y, "linear", 1.0)
    assert s[0, 1].item() == pytest.approx(1 - 0.25)
    assert s[1, 2].item() == pytest.approx(1 - 0.75)
    s = F.label_similarity(y, "tanh", 2.0)
    assert s[1, 2].item() == pytest.approx(1 - math.tanh(1.5))
    assert F.label_similarity(y, "linear", 3.0)[1, 2].item() == 0.0  # clipped at 0


def test_label_similarity_values_of_eq_6() -> None:
    """Vector labels: L1 distances 1, 4, 3 between the three samples, M = 4 and m = 0
    (Eq. 6's minimum over the batch's pairs, i = j among them)."""
    y = torch.tensor([[0.0, 0.0], [1.0, 0.0], [3.0, 1.0]], dtype=torch.float64)
    s = F.label_similarity(y, "linear", 1.0)
    expected = [[1.0, 0.75, 0.0], [0.75, 1.0, 0.25], [0.0, 0.25, 1.0]]
    torch.testing.assert_close(s, torch.tensor(expected, dtype=torch.float64))
    assert F.label_similarity(y, "tanh", 2.0)[1, 2].item() == pytest.approx(1 - math.tanh(1.5))


def test_lascon_with_indicator_is_supcon() -> None:
    z1, z2 = two_views(9, 5, seed=7)
    labels = torch.tensor([0, 1, 1, 2, 0, 2, 2, 1, 3])
    torch.testing.assert_close(
        LASCon(0.1, "indicator")(z1, z2, labels), SupCon(0.1)(z1, z2, labels)
    )
    eq = lambda a, b: (a == b).double()  # noqa: E731 - a callable label similarity
    torch.testing.assert_close(LASCon(0.1, eq)(z1, z2, labels), SupCon(0.1)(z1, z2, labels))


def test_supcon_with_distinct_labels_is_ntxent() -> None:
    z1, z2 = two_views(8, 6, seed=8)
    torch.testing.assert_close(SupCon(0.3)(z1, z2, torch.arange(8)), NTXent(0.3)(z1, z2))


@pytest.mark.parametrize("variant", ["out", "in"])
def test_degenerate_batches_give_finite_loss(variant: str) -> None:
    z1, z2 = two_views(5, 4, seed=9)
    z1.requires_grad_(True)
    for labels in (torch.zeros(5), torch.full((5,), 3.0), torch.ones(5, 3)):
        loss = LASCon(0.1, "tanh", 2.0, variant)(z1, z2, labels)
        (grad,) = torch.autograd.grad(loss, z1)
        assert torch.isfinite(loss) and torch.isfinite(grad).all()


def test_label_count_and_variant_errors_name_the_argument() -> None:
    z1, z2 = two_views(4, 3, seed=1)
    with pytest.raises(ValueError, match="labels"):
        LASCon()(z1, z2, torch.rand(5))
    with pytest.raises(ValueError, match="labels"):
        SupCon()(z1, z2, torch.zeros(4, 2, 2))
    with pytest.raises(ValueError, match="variant"):
        LASCon(variant="middle")
    with pytest.raises(ValueError, match=r"^block_size needs variant='out'$"):
        LASCon(variant="in", block_size=8)
    with pytest.raises(ValueError, match=r"gather_distributed \(on in contrastkit train under"):
        LASCon(variant="in", gather_distributed=True)
    with pytest.raises(ValueError, match="similarity"):
        LASCon(similarity="cosine")(z1, z2, torch.rand(4))


@pytest.mark.parametrize("variant", ["in", "out"])
def test_an_anchor_without_target_adds_nothing_to_value_or_gradient(variant: str) -> None:
    """An anchor whose label similarity is 0 to every other sample contributes 0 (the
    docstring), and no NaN to the gradient: LASCon-in's log-sum-exp over only -inf had
    a NaN softmax there while its value was replaced by 0."""
    g = torch.Generator().manual_seed(0)
    sim = (torch.rand(5, 5, generator=g, dtype=torch.float64) * 2 - 1).requires_grad_()
    s = torch.rand(5, 5, generator=g, dtype=torch.float64)
    s[0] = 0.0
    per_anchor = F.lascon(sim, s, 0.1, variant, reduction="none")
    per_anchor.sum().backward()
    assert per_anchor[0] == 0 and torch.isfinite(sim.grad).all()
    assert torch.equal(sim.grad[0], torch.zeros(5, dtype=torch.float64))
    kept = sim.detach()[1:, :].clone().requires_grad_()  # the other anchors' rows alone
    rows = torch.cat([sim.detach()[:1], kept])
    F.lascon(rows, s, 0.1, variant, reduction="none")[1:].sum().backward()
    torch.testing.assert_close(sim.grad[1:], kept.grad)
