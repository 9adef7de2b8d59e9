"""Make the CIFAR-10 JPEG archive that ``gpu_bench.sh``'s ``train`` and ``run`` sections read
(``CIFAR=...``), from CIFAR-10's python release.

The archive is an image folder (:mod:`contrastkit.images.imagefolder`) in one ``.tar.gz``:
``cifar10/train/<class>/NNNN.jpg`` (5,000 per class) and ``cifar10/test/<class>/NNNN.jpg``
(1,000 per class), 32×32 RGB, numbered per class in the release's order. The GPU sessions
timed such a copy: JPEG quality 75 (the default here), so its pixels are a lossy re-encoding
of the release's and its accuracies differ slightly from runs on ``--dataset cifar10``.
Decoding JPEGs is the point: the training table times a pipeline that decodes images.

Usage::

    python benchmarks/cifar_jpeg.py --data-root cifar-10-python.tar.gz --out cifar10-jpeg.tar.gz
    CIFAR=cifar10-jpeg.tar.gz SECTIONS=train bash benchmarks/gpu_bench.sh

``--data-root`` takes what ``contrastkit train --dataset cifar10`` takes: the release's
``.tar.gz``, its ``cifar-10-batches-py/`` folder or that folder's parent (read with a
restricted unpickler, nothing downloaded). An existing ``--out`` is left as it is unless
``--overwrite``; the archive is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

# CIFAR-10's class names in label order (the release's batches.meta, Krizhevsky 2009)
CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)


def write_archive(out: Path, splits: dict[str, tuple[np.ndarray, np.ndarray]], quality: int) -> int:
    """Write ``splits`` (split name -> uint8 images ``[N, 3, H, W]`` and labels ``[N]``) as
    JPEGs of ``quality`` into the ``.tar.gz`` at ``out``; returns the number of images."""
    from PIL import Image

    count = 0
    with tarfile.open(out, "w:gz") as tar:
        for split, (images, labels) in splits.items():
            seen = [0] * len(CLASSES)
            for image, label in zip(images, labels, strict=True):
                buffer = io.BytesIO()
                Image.fromarray(image.transpose(1, 2, 0)).save(buffer, "JPEG", quality=quality)
                member = tarfile.TarInfo(f"cifar10/{split}/{CLASSES[label]}/{seen[label]:04d}.jpg")
                member.size = buffer.tell()
                buffer.seek(0)
                tar.addfile(member, buffer)
                seen[label] += 1
                count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", required=True, help="CIFAR-10's python release")
    parser.add_argument("--out", required=True, type=Path, help="the .tar.gz to write")
    parser.add_argument("--quality", type=int, default=75, help="JPEG quality, 1-95 (75)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args(argv)
    if not 1 <= args.quality <= 95:
        parser.error(f"--quality must be in [1, 95], got {args.quality}")
    if args.out.exists() and not args.overwrite:
        parser.error(f"--out {args.out} exists; pass --overwrite to replace it")
    if not args.out.parent.is_dir():
        parser.error(f"--out {args.out}: its folder {args.out.parent} does not exist")
    from contrastkit._optional import require
    from contrastkit.data import load_dataset

    try:
        require("PIL", purpose="cifar_jpeg.py")  # before the release is read
        data = load_dataset("cifar10", data_root=args.data_root)
    except (ImportError, OSError, ValueError) as error:
        print(f"cifar_jpeg.py: {error}", file=sys.stderr)
        return 2
    splits = {
        "train": (data.x_train.numpy(), data.y_train.numpy()),
        "test": (data.x_test.numpy(), data.y_test.numpy()),
    }
    handle, partial = tempfile.mkstemp(dir=args.out.parent, prefix=f".{args.out.name}.")
    os.close(handle)
    try:
        count = write_archive(Path(partial), splits, args.quality)
        os.replace(partial, args.out)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    print(f"{args.out}: {count} JPEGs (quality {args.quality})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
