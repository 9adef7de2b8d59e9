"""Training throughput of contrastkit's Trainer against a minimal hand-written loop.

Both use the same framework (encoder, projector, loss), data, augmentations, optimiser and
batch order, built from one :class:`TrainConfig`; epochs alternate between the two (A, B,
A, B, ...) within one process so load from other processes hits both alike. Reports the
median samples/s of each and the Trainer's overhead in %.

    .venv/bin/python benchmarks/train_throughput.py --dataset mnist1d --loss ntxent \
        --batch-size 256 --epochs 3
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time

import torch

from contrastkit.training import TrainConfig, Trainer, epoch_generator


def hand_loop_epoch(trainer: Trainer, epoch: int) -> float:
    """One epoch of the plainest possible loop over the trainer's own objects; samples/s."""
    cfg, model, x = trainer.config, trainer.model, trainer.data.x_train
    gen = epoch_generator(cfg.seed, epoch)
    order = torch.randperm(x.shape[0], generator=gen)
    steps = x.shape[0] // cfg.batch_size
    model.train()
    start = time.perf_counter()
    for s in range(steps):
        batch = x[order[s * cfg.batch_size : (s + 1) * cfg.batch_size]]
        views = [trainer.augment(batch, gen) for _ in range(model.num_views)]
        loss = model(views)
        trainer.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        trainer.optimizer.step()
    return steps * cfg.batch_size / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="mnist1d")
    parser.add_argument("--framework", default="simclr")
    parser.add_argument("--loss", default="ntxent")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs of each")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    config = TrainConfig(
        framework=args.framework,
        loss=args.loss,
        dataset=args.dataset,
        batch_size=args.batch_size,
        epochs=10**6,
        threads=args.threads,
    )
    trainer = Trainer(config, out=None, progress=True)  # progress bar on, as in the CLI
    ours, hand = [], []
    with contextlib.redirect_stderr(io.StringIO()):
        trainer.train_epoch()  # warm-up (allocations, caches), not timed
        trainer.epoch += 1
        for _ in range(args.epochs):
            ours.append(trainer.train_epoch()["samples_per_s"])
            trainer.epoch += 1
            hand.append(hand_loop_epoch(trainer, trainer.epoch))
            trainer.epoch += 1
    med_ours, med_hand = statistics.median(ours), statistics.median(hand)
    fmt = lambda values: ", ".join(f"{v:.0f}" for v in values)  # noqa: E731
    print(
        f"config: {args.framework}/{args.loss} on {args.dataset}, batch {args.batch_size}, "
        f"{args.threads} thread(s), {args.epochs} alternating epochs each"
    )
    print(f"hand-written loop : {med_hand:8.1f} samples/s  (epochs: {fmt(hand)})")
    print(f"contrastkit train : {med_ours:8.1f} samples/s  (epochs: {fmt(ours)})")
    print(f"overhead          : {100 * (med_hand - med_ours) / med_hand:+.1f} %")


if __name__ == "__main__":
    main()
