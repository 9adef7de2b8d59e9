"""The trainer's kNN evaluation: one similarity pass for both k against one pass per k.

After every evaluated epoch the trainer reads the weighted kNN accuracy at ``knn_k`` (200)
and ``knn_small_k`` (20). This times ``knn_accuracies`` (one ``[M, N]`` product and one
top-``max k`` selection, shared) against a ``knn_accuracy`` call per k (the trainer before
it), on random features of a study's shapes (MNIST-1D: 16,000 training and 4,000 test
features of width 128, 10 classes), best of ``--repeats`` timings each, in the same run,
and checks that both give the same accuracies.

Usage: ``python benchmarks/knn_eval.py [--train 16000 --test 4000 --dim 128 --ks 200,20]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from contrastkit.evaluation import knn_accuracies, knn_accuracy


def best_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=16000)
    parser.add_argument("--test", type=int, default=4000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--ks", default="200,20", help="comma-separated k values")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    g = torch.Generator().manual_seed(0)
    centres = torch.randn(args.classes, args.dim, generator=g)
    y_train = torch.randint(0, args.classes, (args.train,), generator=g)
    y_test = torch.randint(0, args.classes, (args.test,), generator=g)
    x_train = centres[y_train] + 2.0 * torch.randn(args.train, args.dim, generator=g)
    x_test = centres[y_test] + 2.0 * torch.randn(args.test, args.dim, generator=g)
    x_train, x_test, y_train, y_test = (
        t.to(args.device) for t in (x_train, x_test, y_train, y_test)
    )

    def separate() -> dict[int, float]:
        return {k: knn_accuracy(x_train, y_train, x_test, y_test, k=k) for k in ks}

    def shared() -> dict[int, float]:
        return knn_accuracies(x_train, y_train, x_test, y_test, ks)

    same = separate() == shared()
    t_separate = best_seconds(separate, args.repeats)
    t_shared = best_seconds(shared, args.repeats)
    print(
        f"kNN evaluation, k = {ks}, {args.train} train × {args.test} test features of width "
        f"{args.dim}, {args.device}, {torch.get_num_threads()} threads (best of {args.repeats})"
    )
    print(f"one pass per k:  {t_separate:.3f} s")
    print(f"one shared pass: {t_shared:.3f} s  ({t_separate / t_shared:.2f}× faster)")
    print(f"same accuracies: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
