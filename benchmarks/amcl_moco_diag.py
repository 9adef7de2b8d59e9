"""Why AMCL's top-κ form runs away under MoCo: the temperatures it ends with, by pair kind.

For each finished MoCo + AMCL run under a ``contrastkit compare`` output directory
(``LABEL/seedS``), reload the checkpoint (encoder, heads, momentum copy, queue) and, on two
augmentations of the first training batch, print per pair kind the median temperature and
mean cosine: query with its own key (τ⁺), with the other samples' fresh keys, with every
queue row and with the κ queue rows top-κ selects; plus the fraction of selected rows whose
τ⁻ sits below the watershed ``τ* = 2(β - s)/(β·d')`` of the per-negative term (see
docs/amcl_bases.md). docs/amcl_bases.md reports the output for ``configs/amcl_moco.yaml``:

    .venv/bin/python benchmarks/amcl_moco_diag.py runs/amcl_moco
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from contrastkit.losses.views import normalize
from contrastkit.training import CHECKPOINT, TrainConfig, Trainer


def diagnose(run: Path) -> dict[str, float | str] | None:
    """The temperature statistics of one run; ``None`` for a run that is not MoCo + AMCL."""
    state = torch.load(run / CHECKPOINT, weights_only=True)
    config = TrainConfig.from_dict(state["config"])
    if config.framework != "moco" or config.loss != "amcl":
        return None
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
