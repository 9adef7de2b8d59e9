"""Where AMCL's learned temperatures end up, from finished runs' checkpoints.

For each run under a ``contrastkit compare`` output directory (``LABEL/seedS``):

* Barlow Twins runs (plain, or AMCL with ``base=barlow_twins``): on two fresh augmentations
  of the test set in batches of the training batch size (eval mode), the per-head mean
  diagonal ``C_ll`` of the cross-correlation the loss sees and, for AMCL, the mean channel
  temperatures ``τ⁺`` (diagonal) and ``τ⁻`` (off-diagonal);
* MoCo + AMCL runs: on two augmentations of the first training batch, per pair kind the
  median temperature and mean head-space cosine (query with its own key, with the other
  samples' fresh keys, with every queue row, with the κ rows top-κ selects), and the share
  of selected rows whose τ⁻ is below the watershed ``τ* = 2(β - s)/(β·d')`` of the
  per-negative term.

Other runs are skipped. docs/amcl_bases.md reports the output for the AMCL configs:

    .venv/bin/python benchmarks/amcl_diag.py runs/amcl_barlow_digits
    .venv/bin/python benchmarks/amcl_diag.py runs/amcl_moco
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from contrastkit.losses.amcl import _standardise
from contrastkit.losses.views import normalize
from contrastkit.training import CHECKPOINT, TrainConfig, Trainer


def barlow(run: Path, state: dict, config: TrainConfig) -> dict[str, float | str]:
    """``C_ll`` and, for AMCL, ``τ⁺`` / ``τ⁻`` (test-set means)."""
    trainer = Trainer(config, out=None, progress=False)
    model = trainer.model
    model.load_state_dict(state["model"])
    model.eval()
    amcl = model.projector is None  # AMCL owns its heads
    gen = torch.Generator().manual_seed(123)
    x, n = trainer.data.x_test, config.batch_size
    diag, tau_pos, tau_neg = [], [], []
    with torch.no_grad():
        for start in range(0, x.shape[0] - n + 1, n):
            batch = x[start : start + n]
            h1, h2 = (model.encoder(trainer.augment(batch, gen)) for _ in range(2))
            head = model.loss.projector if amcl else (lambda h: model.projector(h)[None])
            a, b = _standardise(head(h1)), _standardise(head(h2))
            diag.append(float((a.transpose(1, 2) @ b / n).diagonal(dim1=1, dim2=2).mean()))
            if amcl:
                tau = model.loss.adaptive_temperature.channelwise(a, b)
                off = ~torch.eye(tau.shape[-1], dtype=torch.bool)
                tau_pos.append(float(tau.diagonal(dim1=1, dim2=2).mean()))
                tau_neg.append(float(tau[:, off].mean()))
    out: dict[str, float | str] = {"run": str(run), "C_ll": round(sum(diag) / len(diag), 4)}
    if amcl:
        out["tau_pos"] = round(sum(tau_pos) / len(tau_pos), 4)
        out["tau_neg"] = round(sum(tau_neg) / len(tau_neg), 4)
    return out


def moco(run: Path, state: dict, config: TrainConfig) -> dict[str, float | str]:
    """τ medians and head-space cosines by pair kind, and the share below the watershed."""
    trainer = Trainer(config, out=None, progress=False)
    model, loss = trainer.model, trainer.model.loss
    model.load_state_dict(state["model"])
    gen = torch.Generator().manual_seed(7)
    x = trainer.data.x_train[: config.batch_size]
    with torch.no_grad():
        q = normalize(model.query_head(model.encoder(trainer.augment(x, gen))))
        k = normalize(model.key_encoder(trainer.augment(x, gen)))
        bank = normalize(model.queue)
        tau = loss.adaptive_temperature
        other = ~torch.eye(q.shape[1], dtype=torch.bool)
        sim_queue = q @ bank.transpose(1, 2)
        kappa = min(loss.kappa, bank.shape[1])
        top = sim_queue.topk(kappa, dim=-1).indices
        tau_top = torch.gather(tau.pairwise(q, bank), 2, top)
        sim_top = torch.gather(sim_queue, 2, top)
        watershed = 2 * (loss.beta - sim_top) / (loss.beta * loss.out_dim)
        pairs = {
            "own_key": (tau(q, k), (q * k).sum(-1)),
            "other_keys": (tau.pairwise(q, k)[:, other], (q @ k.transpose(1, 2))[:, other]),
            "queue": (tau.pairwise(q, bank), sim_queue),
            "top_kappa": (tau_top, sim_top),
        }
        out: dict[str, float | str] = {"run": str(run), "kappa": kappa}
        for name, (t, s) in pairs.items():
            out[f"tau_{name}_median"] = round(float(t.median()), 6)
            out[f"cos_{name}"] = round(float(s.mean()), 3)
        out["top_kappa_below_watershed"] = round(float((tau_top < watershed).float().mean()), 3)
    return out


def diagnose(run: Path) -> dict[str, float | str] | None:
    """The statistics of the run in ``run``; ``None`` for a run of neither kind."""
    state = torch.load(run / CHECKPOINT, weights_only=True)
    config = TrainConfig.from_dict(state["config"])
    if config.framework == "moco" and config.loss == "amcl":
        return moco(run, state, config)
    if config.loss == "barlow_twins" or config.loss_args.get("base") == "barlow_twins":
        return barlow(run, state, config)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a compare output directory")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for run in sorted(p.parent for p in args.root.glob(f"*/seed*/{CHECKPOINT}")):
        stats = diagnose(run)
        if stats is not None:
            print(json.dumps(stats), flush=True)


if __name__ == "__main__":
    main()
