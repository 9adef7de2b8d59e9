"""Images/s of the batched SimCLR augmentation against a per-image Pillow pipeline.

* batched: :class:`contrastkit.images.ImageAugment` on uint8 batches, ``--threads`` torch
  threads, in the main process (what the trainer does);
* Pillow: the same recipe written per image with Pillow (random resized crop via
  ``Image.resize(box=...)``, flip, brightness/contrast/saturation/hue jitter in random
  order, grayscale, optional blur), run by a ``DataLoader`` with ``--workers`` worker
  processes and batch collation, as lightly and solo-learn do.

Both produce float tensors in [0, 1] of the same shape; the runs alternate (A, B, A, B)
so load from other processes hits both alike, and the median of ``--repeats`` is printed
with the ratio. Data: random uint8 images of ``--size`` px, or ``--data`` / ``--data-root``
to use a registered dataset's training images.

    nice -n 10 python benchmarks/augment_throughput.py --size 32 --images 2048
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time

import numpy as np
import torch
from PIL import Image, ImageEnhance, ImageFilter
from torch.utils.data import DataLoader, Dataset

from contrastkit.data import load_dataset
from contrastkit.images import ImageAugment


class PillowViews(Dataset):
    """One SimCLR view per image, computed with Pillow (the per-image baseline)."""

    def __init__(self, images: np.ndarray, scale: float, blur: bool) -> None:
        self.images, self.scale, self.blur = images, scale, blur

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> torch.Tensor:
        rng = random.Random(i)
        img = Image.fromarray(self.images[i].transpose(1, 2, 0))
        w, h = img.size
        area = rng.uniform(self.scale, 1.0)
        ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw, ch = min(1.0, math.sqrt(area * ratio)) * w, min(1.0, math.sqrt(area / ratio)) * h
        left, top = rng.uniform(0, w - cw), rng.uniform(0, h - ch)
        img = img.resize((w, h), Image.BILINEAR, box=(left, top, left + cw, top + ch))
        if rng.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        if rng.random() < 0.8:
            ops = [0, 1, 2, 3]
            rng.shuffle(ops)
            for op in ops:
                if op == 0:
                    img = ImageEnhance.Brightness(img).enhance(rng.uniform(0.6, 1.4))
                elif op == 1:
                    img = ImageEnhance.Contrast(img).enhance(rng.uniform(0.6, 1.4))
                elif op == 2:
                    img = ImageEnhance.Color(img).enhance(rng.uniform(0.6, 1.4))
                else:
                    hsv = np.array(img.convert("HSV"))
                    hsv[..., 0] = (
                        hsv[..., 0].astype(np.int16) + int(rng.uniform(-0.1, 0.1) * 255)
                    ) % 256
                    img = Image.fromarray(hsv, "HSV").convert("RGB")
        if rng.random() < 0.2:
            img = img.convert("L").convert("RGB")
        if self.blur and rng.random() < 0.5:
            img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.1, 2.0)))
        return torch.from_numpy(np.asarray(img).transpose(2, 0, 1).copy()).float().div_(255)


def batched_rate(images: torch.Tensor, aug: ImageAugment, batch: int) -> float:
    start = time.perf_counter()
    g = torch.Generator().manual_seed(0)
    for i in range(0, len(images) - batch + 1, batch):
        aug(images[i : i + batch], g)
    return (len(images) // batch * batch) / (time.perf_counter() - start)


def pillow_rate(loader: DataLoader) -> float:
    start, n = time.perf_counter(), 0
    for views in loader:
        n += views.shape[0]
    return n / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=32, help="image side for random data")
    p.add_argument("--images", type=int, default=2048)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--threads", type=int, default=2, help="torch threads of the batched run")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers of the Pillow run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--data", help="a registered dataset name instead of random images")
    p.add_argument("--data-root")
    p.add_argument("--cache-dir")
    args = p.parse_args()
    if args.data:
        opts = {"cache_dir": args.cache_dir} if args.cache_dir else {}
        split = load_dataset(args.data, data_root=args.data_root, **opts)
        images = split.x_train[: args.images].contiguous()
    else:
        gen = torch.Generator().manual_seed(0)
        images = torch.randint(0, 256, (args.images, 3, args.size, args.size), generator=gen,
                               dtype=torch.uint8)  # fmt: skip
    side = min(images.shape[2:])
    aug = ImageAugment(side)
    loader = DataLoader(
        PillowViews(images.numpy(), aug.crop_scale, "blur" in aug.types),
        batch_size=args.batch,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
    )
    torch.set_num_threads(args.threads)
    fast, slow = [], []
    pillow_rate(loader)  # start the workers
    for _ in range(args.repeats):
        fast.append(batched_rate(images, aug, args.batch))
        slow.append(pillow_rate(loader))
    f, s = statistics.median(fast), statistics.median(slow)
    print(f"images {tuple(images.shape)} uint8, recipe {aug.types}, batch {args.batch}")
    print(f"batched ImageAugment ({args.threads} torch threads): {f:,.0f} images/s")
    print(f"Pillow per image ({args.workers} DataLoader workers): {s:,.0f} images/s")
    print(f"ratio batched / Pillow: {f / s:.2f}")


if __name__ == "__main__":
    main()
