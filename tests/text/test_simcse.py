"""SimCSE training: the cross-view loss layout against float64 loop references and the
gradient of the gradient-paradigm paper's Eq. (1), loss construction, batching, and a
short end-to-end run on a tiny BERT."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

from contrastkit import losses
from contrastkit.losses import InfoNCE
from contrastkit.text import (
    SimCSEConfig,
    StsPairs,
    build_loss,
    sentence_losses,
    sts_spearman,
    train_simcse,
    two_view_loss,
)
from contrastkit.text.encoder import SentenceEncoder
from contrastkit.text.simcse import _batches


def unit_views(n: int = 6, d: int = 5, seed: int = 0) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    h1 = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    h2 = torch.nn.functional.normalize(
        h1 + 0.5 * torch.randn(n, d, generator=g, dtype=torch.float64), dim=1
    )
    return h1, h2


def simcse_infonce_loop(h1: Tensor, h2: Tensor, tau: float) -> float:
    """SimCSE's loss: mean_i -log(e^{s_ii/τ} / Σ_j e^{s_ij/τ}), s = cos(h1_i, h2_j)."""
    n = h1.shape[0]
    total = 0.0
    for i in range(n):
        sims = [float(h1[i] @ h2[j]) / float(h1[i].norm() * h2[j].norm()) for j in range(n)]
        total += -sims[i] / tau + math.log(sum(math.exp(s / tau) for s in sims))
    return total / n


def paper_eq1_gradient(h1: Tensor, h2: Tensor, i: int, tau: float) -> Tensor:
    """Gradient-paradigm paper Eq. (1): ∂L_i/∂h_i for unit vectors (loop form)."""
    num = torch.zeros_like(h1[i])
    den = 0.0
    for k in range(h1.shape[0]):
        den += math.exp(float(h1[i] @ h2[k]) / tau)
    for j in range(h1.shape[0]):
        if j != i:
            num += math.exp(float(h1[i] @ h2[j]) / tau) * (h2[j] - h2[i])
    return num / (tau * den)


def test_infonce_is_simcse_cross_view_loss() -> None:
    h1, h2 = unit_views()
    loss = build_loss("infonce")
    assert loss.temperature == 0.05  # SimCSE's τ
    value = two_view_loss(loss, 3.0 * h1, 0.5 * h2)  # scale must not matter (cosine)
    assert float(value) == pytest.approx(simcse_infonce_loop(h1, h2, 0.05), rel=1e-10)


@pytest.mark.parametrize("name", ["infonce", "macl"])
def test_gradient_matches_paper_eq1(name: str) -> None:
    h1, h2 = unit_views(seed=1)
    x = h1.clone().requires_grad_(True)
    loss = build_loss(name)  # MACL: no reweighting, so its gradient is InfoNCE's at τ_a
    (two_view_loss(loss, x, h2) * h1.shape[0]).backward()  # sum over anchors
    tau = loss.last_temperature if name == "macl" else 0.05
    assert x.grad is not None
    for i in range(h1.shape[0]):
        raw = paper_eq1_gradient(h1, h2, i, tau)
        # normalisation inside the loss projects the gradient onto the tangent space at h_i
        tangent = raw - (raw @ h1[i]) * h1[i]
        assert torch.allclose(x.grad[i], tangent, atol=1e-8), i


def test_macl_uses_the_cross_view_layout_with_its_sentence_setting() -> None:
    h1, h2 = unit_views(seed=2)
    loss = build_loss("macl")
    assert (loss.temperature, loss.alpha, loss.a0, loss.reweight) == (0.05, 2.0, 0.8, False)
    value = two_view_loss(loss, h1, h2)
    align = sum(float(h1[i] @ h2[i]) for i in range(h1.shape[0])) / h1.shape[0]
    tau_a = max(0.05 * (1 + 2.0 * (align - 0.8)), 0.005)  # MACL Eq. (6)-(7), floored
    assert loss.last_temperature == pytest.approx(tau_a, rel=1e-10)
    assert float(value) == pytest.approx(simcse_infonce_loop(h1, h2, tau_a), rel=1e-10)
    # not the 2N NT-Xent layout of MACL's own forward
    assert float(loss(h1, h2)) != pytest.approx(float(value), rel=1e-3)


def test_losses_without_similarity_level_get_both_views() -> None:
    calls: list[tuple[Tensor, Tensor]] = []

    class Recorder(nn.Module):
        def forward(self, a: Tensor, b: Tensor) -> Tensor:
            calls.append((a, b))
            return (a - 2 * b).sum()

    h1, h2 = unit_views()
    assert float(two_view_loss(Recorder(), h1, h2)) == pytest.approx(float((h1 - 2 * h2).sum()))
    assert calls[0][0] is h1 and calls[0][1] is h2


def test_the_layout_is_the_registrys_similarity_level() -> None:
    class Sharper(InfoNCE):  # a user's subclass keeps its registered base's layout
        pass

    assert losses.info_of(Sharper()) is losses.info("infonce")
    assert losses.info_of(InfoNCE()).similarity_level and not losses.info("mmhe").similarity_level
    assert losses.info_of(nn.Linear(2, 2)) is None
    h1, h2 = unit_views()
    value = two_view_loss(Sharper(temperature=0.05), h1, h2)
    assert float(value) == pytest.approx(simcse_infonce_loop(h1, h2, 0.05), rel=1e-10)


def test_build_loss_defaults_overrides_and_errors() -> None:
    assert build_loss("macl", {"alpha": 1.0}).alpha == 1.0
    assert build_loss("ntxent").temperature == losses.get("ntxent").temperature
    assert "infonce" in sentence_losses() and "macl" in sentence_losses()
    assert "supcon" not in sentence_losses()
    with pytest.raises(ValueError, match="not two views"):
        build_loss("supcon")
    with pytest.raises(ValueError, match="unknown loss"):
        build_loss("nope")
    with pytest.raises(ValueError, match="bad arguments for loss 'macl'"):
        build_loss("macl", {"gamma": 1})


def test_batches_are_full_disjoint_and_capped() -> None:
    batches = _batches(10, SimCSEConfig(batch_size=3, epochs=2, seed=1))
    assert len(batches) == 6 and all(len(b) == 3 for b in batches)
    first_epoch = torch.cat(batches[:3])
    assert len(set(first_epoch.tolist())) == 9
    assert len(_batches(10, SimCSEConfig(batch_size=3, epochs=2, max_steps=4))) == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"batch_size": 1}, "batch_size"), ({"max_steps": 0}, "max_steps"), ({"lr": 0.0}, "lr")],
)
def test_config_validation(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SimCSEConfig(**kwargs)  # type: ignore[arg-type]


def test_train_simcse_end_to_end(tmp_path: Path, tiny_bert: Path, sentences: list[str]) -> None:
    enc = SentenceEncoder.from_pretrained(tiny_bert, pooling="cls", mlp_head=True, dropout=0.1)
    dev = StsPairs(sentences[0::2], sentences[1::2], [5.0, 1.0, 4.0, 0.5, 3.0, 2.0])
    before = {k: v.clone() for k, v in enc.model.state_dict().items()}
    cfg = SimCSEConfig(batch_size=4, lr=1e-3, max_length=12, epochs=2, max_steps=4, eval_every=2)
    history = train_simcse(
        enc, build_loss("macl"), sentences, dev, cfg, tmp_path / "run", progress=False
    )
    assert [e["step"] for e in history.evals] == [0, 2, 4]
    assert history.steps == 4 and len(history.train_loss) == len(history.temperature) == 4
    assert all(math.isfinite(v) for v in history.train_loss)
    assert any(not torch.equal(before[k], v) for k, v in enc.model.state_dict().items())
    assert history.best_spearman == max(e["spearman"] for e in history.evals)
    # the saved best checkpoint reproduces its recorded score
    best = SentenceEncoder.from_pretrained(tmp_path / "run" / "best")
    assert best.pooling == "cls" and best.head is None
    assert sts_spearman(best, dev)["spearman"] == pytest.approx(history.best_spearman, abs=1e-6)
    saved = json.loads((tmp_path / "run" / "history.json").read_text())
    assert saved["best_step"] == history.best_step and saved["config"]["batch_size"] == 4


def test_train_simcse_needs_a_full_batch(tiny_bert: Path, sentences: list[str]) -> None:
    enc = SentenceEncoder.from_pretrained(tiny_bert)
    with pytest.raises(ValueError, match="at least batch_size"):
        train_simcse(enc, build_loss("infonce"), sentences[:3], None, SimCSEConfig(batch_size=4))
