"""Unsupervised SimCSE (Gao et al., 2021) with any two-view loss of the registry.

Each sentence of a batch goes through the encoder twice in one forward pass (the batch
is repeated); the two independent dropout masks make the two views ``h1, h2 [N, d]``.
How a loss is applied to them (:func:`two_view_loss`):

* a loss with ``similarity_loss(pos, neg)`` (the InfoNCE family, MACL) gets SimCSE's
  cross-view layout from :func:`contrastkit.losses.views.cross_view_similarities`: anchor
  ``h1_i``, positive ``h2_i``, negatives ``h2_j, j ≠ i``. This is the InfoNCE of SimCSE
  (and of the gradient-paradigm paper, §2.2); MACL's sentence experiments (§6.2, App. B.4)
  apply MACL on top of that same SimCSE loss. NT-Xent's 2N layout is not used here.
* any other loss is called as ``loss(h1, h2)``: "pair", "query_key" (cross-view InfoNCE
  with in-batch negatives) and "features" losses (built with ``in_dim``).

Supervised text tasks (LASCon's SST-5 task) train on the shared epoch loop instead
(:mod:`contrastkit.text.trainer`, ``contrastkit train --dataset sst5``); this step-based
loop with STS-dev model selection is unsupervised SimCSE's only.

Training follows SimCSE's unsupervised recipe unless told otherwise: AdamW, linear decay
of the learning rate to 0 without warm-up, gradient norm clipped at 1.0 (the defaults of
the Hugging Face Trainer SimCSE uses), STS-B dev evaluated every ``eval_every`` steps and
the best checkpoint kept. It runs on :class:`contrastkit.engine.Engine`, the loop of the
image trainer too: device, precision (the encoder under autocast, the loss in float32),
gradient accumulation, clipping and the non-finite guard, with the optimiser and schedule
from :func:`~contrastkit.engine.build_optimizer` / :func:`~contrastkit.engine.build_schedule`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from .. import losses
from ..engine import Engine, build_optimizer, build_schedule
from ..losses.views import cross_view_similarities
from ..rundir import atomic_write_text
from . import diagnostics
from .data import StsPairs
from .encoder import SentenceEncoder
from .evaluate import sts_spearman

TWO_VIEW_KINDS = ("pair", "query_key", "features")

# Hyper-parameters of the sentence setting of each paper, used unless overridden.
SENTENCE_DEFAULTS: dict[str, dict[str, object]] = {
    # SimCSE (Gao et al., 2021), unsupervised: τ = 0.05.
    "infonce": {"temperature": 0.05},
    # MACL App. B.4: {τ0, α, A0} = {0.05, 2, 0.8} and no reweighting for sentences.
    "macl": {"temperature": 0.05, "alpha": 2.0, "a0": 0.8, "reweight": False},
}


def sentence_losses() -> list[str]:
    """Registered losses usable on two views of a sentence batch."""
    return sorted(n for kind in TWO_VIEW_KINDS for n in losses.available(inputs=kind))


def build_loss(
    name: str, overrides: dict[str, object] | None = None, dim: int | None = None
) -> nn.Module:
    """The registry loss ``name`` with :data:`SENTENCE_DEFAULTS` updated by ``overrides``.

    "features" losses get ``in_dim=dim``. Losses that do not take two views raise
    ``ValueError`` listing the usable ones.
    """
    info = losses.info(name)
    if info.inputs not in TWO_VIEW_KINDS:
        raise ValueError(
            f"loss {name!r} takes {info.inputs!r} inputs, not two views; use one of: "
            + ", ".join(sentence_losses())
        )
    kwargs = {**SENTENCE_DEFAULTS.get(name, {}), **(overrides or {})}
    if info.inputs == "features":
        kwargs.setdefault("in_dim", dim)
    try:
        return info.cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"bad arguments for loss {name!r}: {exc}") from None


def loss_hyperparameters(loss: nn.Module) -> dict[str, object]:
    """The public scalar attributes of a loss module (its hyper-parameters), for logs."""
    return {
        k: v
        for k, v in vars(loss).items()
        if not k.startswith("_") and k != "training" and isinstance(v, (int, float, bool, str))
    }


def two_view_loss(loss: nn.Module, h1: Tensor, h2: Tensor) -> Tensor:
    """Apply ``loss`` to two views ``h1, h2 [N, d]`` of the same sentences (module doc):
    SimCSE's cross-view layout for the losses the registry declares similarity-level,
    ``loss(h1, h2)`` else (every other loss, and modules the registry does not know)."""
    entry = losses.info_of(loss)
    if entry is not None and entry.similarity_level:
        pos, neg = cross_view_similarities(h1, h2)
        return loss.similarity_loss(pos, neg)
    return loss(h1, h2)


@dataclass
class SimCSEConfig:
    """Training settings; defaults are SimCSE's unsupervised BERT-base ones.

    ``batch_size`` 64, ``lr`` 3e-5, ``max_length`` 32, one epoch, evaluation every 125
    steps (Gao et al., 2021, App. A). ``max_steps`` caps the run; ``None`` = the epochs.
    ``device`` (``auto``: cuda → mps → cpu), ``precision`` (fp32, bf16, fp16) and
    ``grad_accum`` (batches per optimiser step) go to the engine; ``max_grad_norm`` is its
    clipping threshold (0 turns clipping off).
    """

    batch_size: int = 64
    lr: float = 3e-5
    max_length: int = 32
    epochs: int = 1
    max_steps: int | None = None
    eval_every: int = 125
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    seed: int = 42
    eval_batch_size: int = 128
    device: str = "auto"
    precision: str = "fp32"
    grad_accum: int = 1

    def __post_init__(self) -> None:
        for name in ("batch_size", "max_length", "epochs", "eval_every", "eval_batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (2 if name == "batch_size" else 1):
                raise ValueError(
                    f"{name} must be a positive integer (batch_size >= 2), got {value!r}"
                )
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not self.max_grad_norm >= 0:
            raise ValueError(f"max_grad_norm must be >= 0, got {self.max_grad_norm}")


@dataclass
class SimCSEHistory:
    """What a run did: dev scores per evaluated step, the training loss per step, MACL's
    adaptive temperature per step (the ``temperature`` of the loss's registered diagnostics,
    if it has one), timing."""

    evals: list[dict[str, float]] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    temperature: list[float] = field(default_factory=list)  # τ per step, losses that adapt it
    # per-step batch geometry (text.diagnostics: gradient-paradigm §3.2), one list per quantity
    diagnostics: dict[str, list[float]] = field(default_factory=dict)
    best_step: int = 0
    best_spearman: float | None = None  # None until a dev evaluation
    seconds: float = 0.0
    steps: int = 0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _batches(n: int, cfg: SimCSEConfig) -> list[Tensor]:
    """Index batches for all epochs (reshuffled each epoch, incomplete last batch dropped)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    out: list[Tensor] = []
    for _ in range(cfg.epochs):
        perm = torch.randperm(n, generator=gen)
        out.extend(
            perm[i : i + cfg.batch_size] for i in range(0, n - cfg.batch_size + 1, cfg.batch_size)
        )
    return out[: cfg.max_steps] if cfg.max_steps is not None else out


def train_simcse(
    encoder: SentenceEncoder,
    loss: nn.Module,
    sentences: list[str],
    dev: StsPairs | None,
    cfg: SimCSEConfig,
    out_dir: str | Path | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> SimCSEHistory:
    """Train ``encoder`` in place with ``loss`` on two views of ``sentences``: two dropout
    passes of each sentence.

    With ``dev`` given, STS Spearman is measured before training, every ``eval_every``
    steps and after the last step; the best model is saved to ``out_dir/best`` (with
    ``save_pretrained``) and ``out_dir/history.json`` records the run. Without ``dev`` the
    final model is saved to ``out_dir/best``.
    """
    if len(sentences) < cfg.batch_size:
        raise ValueError(
            f"need at least batch_size = {cfg.batch_size} sentences, got {len(sentences)}"
        )
    engine = Engine(
        cfg.device,
        cfg.precision,
        grad_accum=cfg.grad_accum,
        clip_grad=cfg.max_grad_norm or None,
    )
    torch.manual_seed(cfg.seed)
    encoder.to(engine.device)
    loss.to(engine.device)
    out = Path(out_dir) if out_dir is not None else None
    batches = _batches(len(sentences), cfg)
    params = [p for p in [*encoder.parameters(), *loss.parameters()] if p.requires_grad]
    optimizer = build_optimizer("adamw", params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    # linear decay to 0 over the optimiser steps (SimCSE, via the Hugging Face Trainer)
    scheduler = build_schedule("linear", optimizer, -(-len(batches) // cfg.grad_accum), 1)
    history = SimCSEHistory()
    entry = losses.info_of(loss)
    reports = entry is not None and entry.diagnostics  # the registry's diagnostics capability
    start = time.perf_counter()

    def evaluate(step: int) -> None:
        if dev is None:
            return
        rho = sts_spearman(encoder, dev, cfg.eval_batch_size)["spearman"]
        history.evals.append(
            {"step": step, "spearman": rho, "seconds": time.perf_counter() - start}
        )
        better = history.best_spearman is None or rho > history.best_spearman
        if better:
            history.best_spearman, history.best_step = rho, step
            if out is not None:
                encoder.save_pretrained(out / "best")
        log(f"step {step}: STS dev Spearman {100 * rho:.2f}" + (" (best)" if better else ""))

    evaluate(0)
    encoder.train()
    bar = tqdm(batches, desc="simcse", disable=not progress, mininterval=5.0)
    for step, idx in enumerate(bar, start=1):
        batch = [sentences[i] for i in idx.tolist()]
        with engine.autocast():  # the encoder; the loss below runs in float32
            emb = encoder.embed(batch + batch, max_length=cfg.max_length).float()
        value = two_view_loss(loss, emb[: len(batch)], emb[len(batch) :])
        diagnostics.record(history.diagnostics, emb[: len(batch)], emb[len(batch) :], loss)
        engine.backward_step(
            value,
            optimizer,
            params,
            describe=lambda step=step: f"SimCSE step {step}",
            force_step=step == len(batches),
            scheduler=scheduler,
        )
        history.train_loss.append(value.item())
        history.steps = step
        tau = loss.diagnostics().get("temperature") if reports else None
        if tau is not None:
            history.temperature.append(tau)
        bar.set_postfix(
            loss=f"{history.train_loss[-1]:.4f}",
            **({"tau": f"{tau:.4f}"} if tau is not None else {}),
        )
        if step % cfg.eval_every == 0 or step == len(batches):
            evaluate(step)
            encoder.train()
    history.seconds = time.perf_counter() - start
    if out is not None:
        if dev is None:
            encoder.save_pretrained(out / "best")
        out.mkdir(parents=True, exist_ok=True)
        record = {"config": asdict(cfg), **history.to_dict()}
        atomic_write_text(out / "history.json", json.dumps(record, indent=2) + "\n")
    return history
