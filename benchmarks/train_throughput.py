"""Training throughput: contrastkit's engine-based Trainer against a minimal hand-written
loop, and the engine's options (bf16 / fp16 autocast, torch.compile, channels_last) against
fp32 eager.

Every variant is a :class:`Trainer` built from one :class:`TrainConfig` (same framework,
data, augmentations, optimiser and batch order) differing only in ``precision`` /
``compile`` / ``channels_last``; the hand-written loop runs on the fp32 Trainer's own
objects (model, optimiser, augmentations) with nothing but ``x[idx]``, the views (made as
the engine makes them, :func:`~contrastkit.training.make_views`: one pass over all views),
``model(views)``, ``zero_grad``, ``backward`` and ``step``. Epochs of all variants
alternate within one process (A, B, C, C, B, A, A, ...) so load from other processes and
order effects hit all alike; one untimed warm-up epoch each first (allocations, caches,
compilation). Reports the median samples/s of each and ratios against the baseline
measured in the same run.

    OMP_NUM_THREADS=1 nice python benchmarks/train_throughput.py --dataset mnist1d \
        --batch-size 256 --epochs 3 --variants fp32,bf16,compile
    OMP_NUM_THREADS=1 nice python benchmarks/train_throughput.py --dataset imagefolder \
        --data-root cifar10-jpeg.tar.gz --num-samples 1024 --backbone resnet18 --width 16
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time

import torch

from contrastkit.training import TrainConfig, Trainer, epoch_generator, make_views, trainer_class

VARIANTS = {  # channels_last unset: the engine's default (on for CUDA and a conv encoder)
    "fp32": {},
    "bf16": {"precision": "bf16"},
    "fp16": {"precision": "fp16"},
    "compile": {"compile": True},
    "channels_last": {"channels_last": True},
    "nchw": {"channels_last": False},
    "bf16+nchw": {"precision": "bf16", "channels_last": False},
    "bf16+compile": {"precision": "bf16", "compile": True},
    "bf16+graphs": {"precision": "bf16", "compile": True, "compile_mode": "reduce-overhead"},
    "bf16+triton": {"precision": "bf16", "aug_backend": "triton"},  # fused colour kernel
    "bf16+torchaug": {"precision": "bf16", "aug_backend": "torch"},  # colour ops in torch
    "bf16+lars": {"precision": "bf16", "optimizer": "lars"},
}
PHASES = ("batch", "augment", "forward", "backward", "optimiser")
TITLES = {
    False: "step breakdown, median ms of {steps} steps (share of the step), each step from an"
    " idle device",
    True: "steps back to back, median ms of {steps} steps (share of the step), events read"
    " after the last step: the host runs ahead of the device as in training",
}


class Clock:
    """Phase boundaries of a step: CUDA events on a GPU (the device's time between them,
    nothing synchronised while the step runs), ``perf_counter`` on a CPU; and the host's
    ``perf_counter`` on both (on a GPU, when the phase's last call returned: a phase whose
    host time is about its device time kept the device waiting for the host)."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.marks: list = []
        self.host: list[float] = []

    def mark(self) -> None:
        self.host.append(time.perf_counter())
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)

    def spans_ms(self) -> list[float]:
        if not self.cuda:
            return self.host_ms()
        torch.cuda.synchronize()
        return [a.elapsed_time(b) for a, b in zip(self.marks, self.marks[1:], strict=False)]

    def host_ms(self) -> list[float]:
        return [1e3 * (b - a) for a, b in zip(self.host, self.host[1:], strict=False)]


def breakdown(
    trainer: Trainer, steps: int, back_to_back: bool = False
) -> tuple[dict[str, float], dict[str, float]]:
    """Median ms per phase of ``steps`` training steps written out phase by phase on the
    trainer's own objects (gather the batch, the views, forward, backward, optimiser):
    the device's time, and the host's. Each step starts from an idle device (its events are
    read, which waits for it, before the next step), so a phase whose launches take longer
    than its kernels shows its host time; ``back_to_back``: the events are read after the
    last step, so the host runs ahead of the device as in training (nothing in the step
    reads the device) and a phase shows the device's time in it."""
    cfg, model, engine, x = trainer.config, trainer.model, trainer.engine, trainer.train_x
    gen = epoch_generator(cfg.seed, 10**6)
    augs = trainer.view_augments
    device_ms: dict[str, list[float]] = {p: [] for p in PHASES}
    host_ms: dict[str, list[float]] = {p: [] for p in PHASES}
    order = torch.randperm(len(x), generator=gen)[: steps * cfg.batch_size].view(steps, -1)
    order = order.to(x.device)
    model.train()
    clocks = []
    for s in range(steps):
        engine.begin_step()
        clock = Clock(engine.device)
        clocks.append(clock)
        clock.mark()
        batch = engine.to_device(x[order[s]])
        clock.mark()
        views = [engine.format_input(v) for v in make_views(augs, batch, gen, model)]
        clock.mark()
        with engine.autocast():
            loss = model(views)
        clock.mark()
        trainer.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clock.mark()
        trainer.optimizer.step()
        clock.mark()
        if not back_to_back:
            clock.spans_ms()  # waits for the device
    for clock in clocks:
        for phase, ms, host in zip(PHASES, clock.spans_ms(), clock.host_ms(), strict=True):
            device_ms[phase].append(ms)
            host_ms[phase].append(host)

    def median(per_phase: dict[str, list[float]]) -> dict[str, float]:
        return {p: statistics.median(v[1:] or v) for p, v in per_phase.items()}  # 1st: warm-up

    return median(device_ms), median(host_ms)


def hand_loop_epoch(trainer: Trainer, epoch: int) -> float:
    """One epoch of the plainest possible loop over the trainer's own objects; samples/s."""
    cfg, model, x = trainer.config, trainer.model, trainer.train_x  # the engine's, placed
    gen = epoch_generator(cfg.seed, epoch)
    steps = trainer.steps_per_epoch  # the engine's (``--epoch-steps``)
    # the batches' indices on the data's device once, as the engine: a CPU index into
    # device data is a blocking copy a batch
    order = torch.randperm(len(x), generator=gen)[: steps * cfg.batch_size]
    rows = order.view(steps, cfg.batch_size).to(x.device)
    model.train()
    start = time.perf_counter()
    for s in range(steps):
        batch = x[rows[s]]
        views = make_views(trainer.view_augments, batch, gen, model)
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
    parser.add_argument("--num-samples", type=int, help="mnist1d: samples generated in total")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs of each")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--backbone", default="conv", help="conv, resnet18, resnet34, resnet50")
    parser.add_argument("--data-root", help="datasets read by path (cifar10, imagefolder, ...)")
    parser.add_argument("--cache-dir", help="imagefolder decode cache")
    parser.add_argument("--epoch-steps", type=int, help="steps per timed epoch (default: all)")
    parser.add_argument(
        "--breakdown", type=int, default=0, help="then time N steps phase by phase (0: no)"
    )
    parser.add_argument(
        "--variants",
        default="fp32",
        help=f"comma-separated engine variants to time beside the hand loop: {', '.join(VARIANTS)}",
    )
    args = parser.parse_args()
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or "fp32" not in names:
        parser.error(f"--variants must include fp32 and be among {', '.join(VARIANTS)}")
    base = dict(
        framework=args.framework,
        loss=args.loss,
        dataset=args.dataset,
        num_samples=args.num_samples,
        batch_size=args.batch_size,
        width=args.width,
        epochs=10**6,
        threads=args.threads,
        device=args.device,
        backbone=args.backbone,
        data_root=args.data_root,
        cache_dir=args.cache_dir,
        epoch_steps=args.epoch_steps,
    )
    configs = {n: TrainConfig(**base, **VARIANTS[n]) for n in names}
    trainers = {n: trainer_class(c)(c, None, True) for n, c in configs.items()}  # as the CLI
    times: dict[str, list[float]] = {n: [] for n in ["hand loop", *names]}
    with contextlib.redirect_stderr(io.StringIO()):  # progress bar on, as in the CLI
        for trainer in trainers.values():  # warm-up (allocations, caches, compilation)
            trainer.train_epoch()
            trainer.epoch += 1
        fp32 = trainers["fp32"]
        runs = ["hand loop", *trainers]
        for r in range(args.epochs):
            for name in runs if r % 2 == 0 else runs[::-1]:  # alternate the order too
                if name == "hand loop":
                    times[name].append(hand_loop_epoch(fp32, fp32.epoch))
                    fp32.epoch += 1
                else:
                    times[name].append(trainers[name].train_epoch()["samples_per_s"])
                    trainers[name].epoch += 1
    med = {name: statistics.median(v) for name, v in times.items()}
    print(
        f"config: {args.framework}/{args.loss} on {args.dataset} ({args.backbone}), "
        f"batch {args.batch_size}, "
        f"width {args.width}, {args.device}, {args.threads} thread(s), torch {torch.__version__}, "
        f"{args.epochs} alternating epochs each"
    )
    print(
        f"{'variant':<14} {'samples/s':>10}  {'vs hand loop':>12}  {'vs engine fp32':>14}  epochs"
    )
    for name, value in med.items():
        epochs = ", ".join(f"{v:.0f}" for v in times[name])
        print(
            f"{name:<14} {value:10.1f}  {100 * (value / med['hand loop'] - 1):+11.1f}%  "
            f"{value / med['fp32']:13.2f}x  ({epochs})"
        )
    print(f"engine overhead vs hand loop: {100 * (1 - med['fp32'] / med['hand loop']):+.1f} %")
    if args.breakdown:
        print_breakdown(trainers, args.breakdown)


def print_breakdown(trainers: dict[str, Trainer], steps: int) -> None:
    """The phase tables of :func:`breakdown`: each step from an idle device (with the host's
    times), then steps back to back."""
    header = f"{'variant':<14} " + " ".join(f"{p:>17}" for p in PHASES) + f" {'step':>8}"
    hosts = {}
    for back_to_back in (False, True):
        title = TITLES[back_to_back].format(steps=steps)
        print(f"\n{title}\n{header}")
        for name, trainer in trainers.items():
            ms, host = breakdown(trainer, steps, back_to_back)
            hosts.setdefault(name, host)
            total = sum(ms.values())
            cells = " ".join(f"{ms[p]:8.2f} ({100 * ms[p] / total:4.1f}%)" for p in PHASES)
            print(f"{name:<14} {cells} {total:8.2f}")
        if not back_to_back:
            print("host time of the same steps, median ms (until each phase's calls returned)")
            for name, ms in hosts.items():
                cells = " ".join(f"{ms[p]:17.2f}" for p in PHASES)
                print(f"{name:<13} host {cells} {sum(ms.values()):8.2f}")


if __name__ == "__main__":
    main()
