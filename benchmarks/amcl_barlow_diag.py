"""Where AMCL-BT's cross-correlation diagonal ``C_ll`` and its temperatures end up.

For each finished run under a ``contrastkit compare`` output directory (``LABEL/seedS``),
reload the checkpoint and, on two fresh augmentations of the test set in batches of the
training batch size (eval mode), print the per-head mean diagonal of the cross-correlation
the Barlow Twins loss sees and, for AMCL, the mean channel temperatures ``τ⁺`` (diagonal)
and ``τ⁻`` (off-diagonal). docs/amcl_bases.md reports the output for
``configs/amcl_barlow_digits.yaml``:

    .venv/bin/python benchmarks/amcl_barlow_diag.py runs/amcl_barlow_digits
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from contrastkit.losses.amcl import _standardise
from contrastkit.training import CHECKPOINT, TrainConfig, Trainer


def diagnose(run: Path) -> dict[str, float | str]:
    """``C_ll`` and, for AMCL, ``τ⁺`` / ``τ⁻`` of the run in ``run`` (test-set means)."""
    state = torch.load(run / CHECKPOINT, weights_only=True)
    config = TrainConfig.from_dict(state["config"])
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a compare output directory")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for run in sorted(p.parent for p in args.root.glob(f"*/seed*/{CHECKPOINT}")):
        print(json.dumps(diagnose(run)), flush=True)


if __name__ == "__main__":
    main()
