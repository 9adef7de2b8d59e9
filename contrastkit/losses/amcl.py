"""AMCL: several projection heads with learned pair-wise temperatures (ICLR 2024 submission,
"Adaptive multi-head contrastive learning", anonymous; its Eq. 3–4 and Table 2).

Example:
    >>> import torch
    >>> from contrastkit import losses
    >>> loss_fn = losses.get("amcl", in_dim=64, heads=3, base="ntxent")
    >>> loss = loss_fn(torch.randn(8, 64), torch.randn(8, 64))
    >>> sorted(loss_fn.temperature_stats())[:2]
    ['tau_neg/head0', 'tau_neg/head1']
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor, nn

from .. import distributed
from ..models.multihead import MultiHeadProjector
from . import functional as F
from ._diagnostics import DeviceDiagnostics
from ._indices import pair_mask
from .amcl_temperature import AdaptiveTemperature
from .functional._common import check_tensor, check_views
from .hparams import FLAG, NONNEGATIVE, POSITIVE, Param
from .registry import register
from .views import normalize

_BASES = ("ntxent", "infonce", "simsiam", "barlow_twins")
_ADAPT = ("both", "pos", "neg", "none")
# per-base defaults of β and of the fixed temperature (see the AMCL docstring)
_DEFAULT_BETA = {"ntxent": 10.0, "infonce": 10.0, "simsiam": 10.0, "barlow_twins": 0.0}
_DEFAULT_TEMPERATURE = {"ntxent": 0.1, "infonce": 0.1, "simsiam": 0.1, "barlow_twins": 1.0}
_STD_EPS = 1e-5  # as functional.barlow_twins


def _standardise(z: Tensor) -> Tensor:
    """Each channel of ``z: [C, N, d']`` to mean 0 and (biased) std 1 over the batch."""
    centred = z - z.mean(dim=1, keepdim=True)
    return centred / (z.std(dim=1, unbiased=False, keepdim=True) + _STD_EPS)


_REF = "AMCL (anonymous ICLR 2024 submission), Eq. (3), (4), Table 2"


@register("amcl", "features", _REF, queue_form=True, diagnostics=True)
class AMCL(DeviceDiagnostics, nn.Module):
    """Adaptive multi-head contrastive loss on *encoder* features; it owns its heads.

    Built as ``losses.get("amcl", in_dim=d, heads=3, base="ntxent", ...)`` and called as
    ``loss(h1, h2)`` with ``h1, h2: [N, in_dim]``, the encoder features of two views. Add
    ``loss.parameters()`` (heads, ``φ`` and, for SimSiam, the predictors) to the optimiser.
    After a call, :meth:`temperature_stats` gives mean τ⁺ / τ⁻ per head for logging.
    Sub-modules: ``projector`` (:class:`MultiHeadProjector`), ``adaptive_temperature``
    (:class:`AdaptiveTemperature`, the shared ``φ``) and ``predictor`` (SimSiam only).

    Pipeline (Fig. 2): ``C`` projection heads → ``z^c`` (L2-normalised for the cosine
    bases, standardised per channel for Barlow Twins), temperatures from the shared
    :class:`AdaptiveTemperature` on those same vectors (the ones the loss compares), then
    the Table 2 loss of ``base``:

    * ``"ntxent"`` (Eq. 2.1) and ``"infonce"`` (Eq. 2.4): SimCLR's 2N layout per head, each
      of the 2N views an anchor with its other view as positive and the other 2N - 2 views
      as negatives; :func:`functional.amcl_contrast` with ``include_positive`` False/True;
      sum over heads, mean over the 2N anchors. Under MoCo (queries against momentum
      keys and a queue of past keys) the framework calls :meth:`queue_loss` instead.
    * ``"simsiam"`` (Eq. 2.2): every head ``c`` gets its own predictor ``q^c`` (a
      :class:`MultiHeadProjector` fed head by head, ``d' → d'/4 → d'``: SimSiam's 4×
      bottleneck, without its batch norm) and the loss is
      :func:`functional.amcl_simsiam` on ``cos(q^c(z1^c), sg z2^c)`` and
      ``cos(q^c(z2^c), sg z1^c)``, with ``τ = σ(⟨φ(p), φ(sg z)⟩)`` for each direction. The
      paper writes these targets as ``[h]_sg``; they must be the ``d'``-dim projections
      for ``φ: R^{d'} → R^{d'}`` to apply. There are no negatives, so no τ⁻.

    * ``"barlow_twins"`` (Eq. 2.3): per head, the projections are *not* L2-normalised but
      standardised per channel over the batch (mean 0, biased std 1, as
      :func:`functional.barlow_twins`), ``C^c = Ẑ1ᵀẐ2/N``, and the channel-pair
      temperatures are :meth:`AdaptiveTemperature.channelwise` on the same ``Ẑ``
      (``τ⁺_l`` its diagonal, ``τ⁻_lm`` the rest). The paper's ``φ(z_{l:})`` on batch-long
      channel vectors is only defined when ``N = d'``; we keep ``φ`` the per-sample layer
      of the other rows and take the channel inner product over the batch, which gives
      the ``[d', d']`` index structure of Eq. (2.3) for any ``N``. The loss is
      :func:`functional.amcl_barlow_twins` with λ = ``lambd``; Eq. (3)'s Ω terms are
      added with the channels as anchors (row 2.3 prints none; β = 0 is the row
      verbatim). Read that function's caveat: a learned τ⁺ can absorb the invariance
      term (β = 0) or move its target from ``C_ll = 1`` to ``≈ 2/d'`` (β > 0).

    Args:
        in_dim: encoder feature width ``d``.
        base: ``"ntxent"``, ``"infonce"``, ``"simsiam"`` or ``"barlow_twins"``.
        heads: ``C``; 3 as in the paper (Fig. 4).
        out_dim: ``d'``; 128, SimCLR's projection size (the paper keeps each method's head).
        hidden: hidden width of the heads; ``None`` = ``in_dim`` (SimCLR).
        beta: β of Eq. (3); ``None`` = the base's default: 10 for the cosine bases (see
            :func:`functional.amcl_contrast` for why) and 0 for ``"barlow_twins"``
            (measured, docs/amcl_bases.md).
        lambd: λ of Eq. (2.3), Barlow Twins only; 5e-3 (§5.1, as Zbontar et al.).
        negatives: ``"topk"`` (default, the paper's best on STL-10) or ``"softmax"``
            (Eq. 7); on sklearn digits we measured softmax well ahead (docs/amcl.md). A
            top-κ negative's term falls without bound once its τ⁻ < 2(β - s)/(β·d'); under
            MoCo with queues of 512 or more that ran away (docs/amcl_bases.md), and so did
            SimCLR with κ <= 100 at five digits augmentation types (docs/amcl.md); the
            share of such pairs is :meth:`diagnostics`' ``tau_neg_runaway_mean``.
        kappa: κ of top-κ; 100 (Fig. 4), clamped to the number of negatives (2N - 2).
        lower, upper: temperature bounds, 1e-5 and 2 (§5.1, small datasets).
        adapt: which temperatures are learned: ``"both"`` (AMCL), ``"pos"`` or ``"neg"``
            only (the other fixed at ``temperature``), or ``"none"`` (one global constant).
            These are the ablations of the paper's Fig. 5; with ``"none"`` the
            regularisers cancel, and with ``negatives="softmax"`` the loss is the plain
            multi-head base loss.
            SimSiam has only positive temperatures (``"neg"`` fixes them). Where no
            temperature is learned, φ's parameters are frozen (``requires_grad=False``),
            so every trainable parameter gets a gradient, as DDP requires.
        temperature_source: ``"each"`` head its own τ, or ``"head1"``'s for all (Fig. 5).
        temperature: the constant τ where ``adapt`` fixes it; ``None`` = 0.1 (as
            :class:`NTXent`) for the cosine bases and 1 for ``"barlow_twins"``, where a
            constant ``t`` sets the invariance target ``C_ll = t`` and ``t = 1`` is plain
            Barlow Twins per head.
        gather_distributed: compute the loss of the global batch on every rank: every
            rank's encoder features are gathered with gradient before the heads
            (:mod:`contrastkit.distributed`).
    """

    param_ranges: ClassVar[dict[str, Param]] = {
        **dict.fromkeys(("in_dim", "heads", "out_dim", "kappa"), Param.integer(1)),
        "hidden": Param.integer(1, optional=True), "beta": Param.real(0.0, optional=True),
        "lambd": NONNEGATIVE, "lower": POSITIVE, "upper": POSITIVE, "gather_distributed": FLAG,
        "temperature": Param.real(0.0, low_open=True, optional=True),
        "base": Param.one_of(*_BASES), "adapt": Param.one_of(*_ADAPT),
        "negatives": Param.one_of("topk", "softmax"),
        "temperature_source": Param.one_of("each", "head1"),
    }  # fmt: skip

    def __init__(
        self,
        in_dim: int,
        base: str = "ntxent",
        heads: int = 3,
        out_dim: int = 128,
        hidden: int | None = None,
        beta: float | None = None,
        lambd: float = 5e-3,
        negatives: str = "topk",
        kappa: int = 100,
        lower: float = 1e-5,
        upper: float = 2.0,
        adapt: str = "both",
        temperature: float | None = None,
        temperature_source: str = "each",
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__()  # the ranges of param_ranges are checked by the registry
        beta = _DEFAULT_BETA[base] if beta is None else beta
        if not lower < upper:
            raise ValueError(f"loss 'amcl': lower must be below upper, got {lower} and {upper}")
        # the fixed τ: what a side that adapt does not learn uses (none with "both")
        given = temperature is not None
        temperature = _DEFAULT_TEMPERATURE[base] if temperature is None else temperature
        if (given or adapt != "both") and not lower <= temperature <= upper:
            raise ValueError(
                f"loss 'amcl': temperature must lie in [lower, upper] = [{lower}, {upper}], "
                f"got {temperature}"
            )
        if temperature_source not in ("each", "head1" if base in ("ntxent", "infonce") else ""):
            raise ValueError("temperature_source must be 'each', or 'head1' with ntxent/infonce")
        self.temperature_source = temperature_source
        self.base = base
        self.gather_distributed = gather_distributed
        self.beta = float(beta)
        self.lambd = float(lambd)
        self.negatives = negatives
        self.kappa = kappa
        self.adapt = adapt
        self.fixed_temperature = float(temperature)
        self.projector = MultiHeadProjector(in_dim, out_dim, heads, hidden)
        self.adaptive_temperature = AdaptiveTemperature(out_dim, lower, upper)
        if adapt == "none" or (base == "simsiam" and adapt == "neg"):  # φ unused
            self.adaptive_temperature.requires_grad_(False)
        self.predictor: MultiHeadProjector | None = None
        if base == "simsiam":
            self.predictor = MultiHeadProjector(out_dim, out_dim, heads, max(1, out_dim // 4))
        self._tau_pos: Tensor | None = None
        self._tau_neg: Tensor | None = None
        self._runaway: Tensor | None = None

    @property
    def heads(self) -> int:
        return self.projector.heads

    @property
    def out_dim(self) -> int:
        return self.projector.out_dim

    def forward(self, h1: Tensor, h2: Tensor) -> Tensor:
        """Loss over encoder features ``h1, h2: [N, in_dim]`` of two views (N >= 2)."""
        h1, h2 = check_views(h1, h2, names=("h1", "h2"))
        h1, h2 = distributed.gather_all_with_grad(h1, h2, enabled=self.gather_distributed)
        dtype = self.adaptive_temperature.phi.weight.dtype  # any float input: heads' dtype
        z1, z2 = self.projector(h1.to(dtype)), self.projector(h2.to(dtype))  # [C, N, d']
        if self.predictor is not None:
            return self._simsiam(self.predictor, z1, z2).to(h1.dtype)
        if self.base == "barlow_twins":
            return self._barlow_twins(z1, z2).to(h1.dtype)
        return self._contrast(z1, z2).to(h1.dtype)

    def _contrast(self, z1: Tensor, z2: Tensor) -> Tensor:
        n = z1.shape[1]
        z = normalize(torch.cat([z1, z2], dim=1))  # [C, 2N, d']
        sim = z @ z.transpose(1, 2)
        tau = self.adaptive_temperature.pairwise(z, z)  # [C, 2N, 2N], symmetric
        if self.temperature_source == "head1":  # Fig. 5: head 1's τ for every head
            tau = tau[:1].expand_as(tau)
        partner = ((torch.arange(2 * n, device=z.device) + n) % (2 * n))[None, :, None]
        partner = partner.expand(z.shape[0], -1, 1)
        pos_sim, tau_pos = sim.gather(2, partner)[..., 0], tau.gather(2, partner)[..., 0]
        mask = pair_mask(n, z.device)
        return self._contrast_terms(
            pos_sim, sim.masked_fill(mask, float("-inf")), tau_pos, tau, ~mask
        )

    def _contrast_terms(
        self, pos_sim: Tensor, neg_sim: Tensor, tau_pos: Tensor, tau_neg: Tensor, present: Tensor
    ) -> Tensor:
        """Eq. (2.1)/(2.4) with the module's settings, after fixing the temperatures that
        ``adapt`` does not learn; records the temperatures of the ``present`` negatives."""
        if self.adapt in ("neg", "none"):
            tau_pos = self._fixed(tau_pos)
        if self.adapt in ("pos", "none"):
            tau_neg = self._fixed(tau_neg)
        self._record(tau_pos, tau_neg, present)
        if self.adapt in ("both", "neg"):  # only a learned τ⁻ can run away
            with torch.no_grad():
                falling = F.amcl_runaway(neg_sim, tau_neg, dim=self.out_dim, beta=self.beta)
                self._runaway = falling.sum(dim=(1, 2)) / present.sum()
        return F.amcl_contrast(
            pos_sim,
            neg_sim,
            tau_pos,
            tau_neg,
            dim=self.out_dim,
            beta=self.beta,
            negatives=self.negatives,
            kappa=self.kappa,
            include_positive=self.base == "infonce",
        )

    def queue_loss(self, z_q: Tensor, z_k: Tensor, queue: Tensor) -> Tensor:
        """AMCL in MoCo's layout: each query against its key and a queue of past keys.

        Used by the MoCo framework, which computes the projections itself (queries through
        :attr:`projector`, keys through a momentum copy of it) and keeps the queue.

        Args:
            z_q: ``[C, N, d']`` query projections of every head (with gradient).
            z_k: ``[C, N, d']`` key projections from the momentum heads; detached here.
            queue: ``[C, Q, d']`` past keys of every head; detached here.

        All three are L2-normalised here (a no-op, up to rounding, on unit vectors). Per
        head ``c`` and query ``i``: the positive is ``k_i`` with ``τ⁺ = σ(⟨φ(q_i), φ(k_i)⟩)``,
        the negatives are the ``Q`` queue rows with ``τ⁻_ij = σ(⟨φ(q_i), φ(queue_j)⟩)`` and
        no other query or key of the batch (as in MoCo). The terms are those of
        :func:`functional.amcl_contrast` with the module's β, ``negatives``, κ (which that
        function clamps to ``Q``) and ``adapt``; ``base="infonce"`` puts the positive in the
        candidate set. Summed over heads, averaged over the ``N`` queries. Only the cosine
        bases have negatives to take from a queue: ``"simsiam"`` and ``"barlow_twins"``
        raise ``ValueError``. ``gather_distributed`` plays no part (MoCo shares the queue,
        not the batch). :meth:`temperature_stats` then reports τ⁺ and τ⁻ over the queue.
        """
        if self.base not in ("ntxent", "infonce"):
            raise ValueError(
                f"queue_loss (AMCL under MoCo) needs base 'ntxent' or 'infonce', got "
                f"{self.base!r}: it has no query-versus-negatives form"
            )
        heads, dim = self.heads, self.out_dim
        z_q = self._check_queue_arg(z_q, "z_q", f"[{heads}, N, {dim}]")
        z_k = self._check_queue_arg(z_k, "z_k", f"[{heads}, N, {dim}]")
        queue = self._check_queue_arg(queue, "queue", f"[{heads}, Q, {dim}]")
        if z_k.shape != z_q.shape:
            raise ValueError(
                f"z_k must have z_q's shape {tuple(z_q.shape)} (one key per query), "
                f"got {tuple(z_k.shape)}"
            )
        q, k, bank = normalize(z_q), normalize(z_k.detach()), normalize(queue.detach())
        pos_sim = (q * k).sum(dim=-1)  # [C, N]
        neg_sim = q @ bank.transpose(1, 2)  # [C, N, Q]
        tau_pos = self.adaptive_temperature(q, k)
        tau_neg = self.adaptive_temperature.pairwise(q, bank)
        present = torch.ones_like(neg_sim[0], dtype=torch.bool)
        return self._contrast_terms(pos_sim, neg_sim, tau_pos, tau_neg, present)

    def _check_queue_arg(self, x: object, name: str, shape: str) -> Tensor:
        """``x`` as a floating ``[C, ·, d']`` tensor of this module's C and d', else raise."""
        x = check_tensor(x, name, 3, shape)
        if x.shape[0] != self.heads or x.shape[2] != self.out_dim or x.shape[1] < 1:
            raise ValueError(f"{name} must have shape {shape}, got {tuple(x.shape)}")
        return x.to(self.adaptive_temperature.phi.weight.dtype)

    def _simsiam(self, predictor: MultiHeadProjector, z1: Tensor, z2: Tensor) -> Tensor:
        p1, p2 = normalize(predictor(z1)), normalize(predictor(z2))
        t1, t2 = normalize(z1.detach()), normalize(z2.detach())
        sim_a, sim_b = (p1 * t2).sum(dim=-1), (p2 * t1).sum(dim=-1)  # [C, N] cosines
        tau_a, tau_b = self.adaptive_temperature(p1, t2), self.adaptive_temperature(p2, t1)
        if self.adapt in ("neg", "none"):
            tau_a, tau_b = self._fixed(tau_a), self._fixed(tau_b)
        self._record(torch.cat([tau_a, tau_b], dim=1), None, None)
        return F.amcl_simsiam(sim_a, sim_b, tau_a, tau_b, dim=self.out_dim, beta=self.beta)

    def _barlow_twins(self, z1: Tensor, z2: Tensor) -> Tensor:
        a, b = _standardise(z1), _standardise(z2)  # [C, N, d']
        corr = a.transpose(1, 2) @ b / a.shape[1]  # [C, d', d']
        tau = self.adaptive_temperature.channelwise(a, b)
        diagonal = torch.eye(self.out_dim, dtype=torch.bool, device=tau.device)
        if self.adapt != "both":
            learned = {"pos": diagonal, "neg": ~diagonal, "none": torch.zeros_like(diagonal)}
            tau = torch.where(learned[self.adapt], tau, self._fixed(tau))
        self._record(torch.diagonal(tau, dim1=1, dim2=2), tau, ~diagonal)
        return F.amcl_barlow_twins(corr, tau, dim=self.out_dim, lambd=self.lambd, beta=self.beta)

    def _fixed(self, like: Tensor) -> Tensor:
        return torch.full_like(like, self.fixed_temperature)

    def _record(self, tau_pos: Tensor, tau_neg: Tensor | None, present: Tensor | None) -> None:
        """Keep per-head means (detached tensors; converted to floats only when asked)."""
        with torch.no_grad():
            self._tau_pos = tau_pos.mean(dim=1)
            self._tau_neg = None
            if tau_neg is not None and present is not None:
                w = present.to(tau_neg.dtype)
                self._tau_neg = (tau_neg * w).sum(dim=(1, 2)) / w.sum()

    def temperature_stats(self) -> dict[str, float]:
        """``{"tau_pos/head{c}": mean τ⁺, "tau_neg/head{c}": mean τ⁻}`` of the last call.

        Means over the batch's anchors (τ⁺) and over all present negative pairs (τ⁻, not
        only the top-κ); for Barlow Twins over the diagonal (τ⁺_l) and the off-diagonal
        (τ⁻_lm) channel pairs. SimSiam has no τ⁻ keys. Empty before the first call.
        """
        stats: dict[str, float] = {}
        for key, values in (("tau_pos", self._tau_pos), ("tau_neg", self._tau_neg)):
            if values is not None:
                stats.update({f"{key}/head{c}": float(v) for c, v in enumerate(values.tolist())})
        return stats

    def diagnostic_tensors(self) -> dict[str, Tensor]:
        """The diagnostics as 0-d device tensors, reading nothing (empty before the first
        call; :meth:`diagnostics` gives their floats): :meth:`temperature_stats`' values,
        ``tau_neg_runaway/head{c}`` (the cosine bases with a learned τ⁻: the fraction of
        the last call's present negative pairs, all of them and not only the top-κ ones the
        loss takes, whose τ⁻ lies where such a term would drive it to its lower bound,
        :func:`functional.amcl_runaway`) and the head means ``tau_pos_mean``,
        ``tau_neg_mean``, ``tau_neg_runaway_mean``."""
        kinds = (("tau_pos", self._tau_pos), ("tau_neg", self._tau_neg))
        kinds += (("tau_neg_runaway", self._runaway),)
        stats: dict[str, Tensor] = {}
        for kind, values in kinds:
            if values is not None:
                stats.update({f"{kind}/head{c}": v for c, v in enumerate(values.unbind())})
        for kind, values in kinds:
            if values is not None:
                stats[f"{kind}_mean"] = values.mean()
        return stats
