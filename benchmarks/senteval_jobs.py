"""SentEval's transfer classifiers fitted one at a time and ``--jobs N`` at once.

The nested cross-validation of MR/CR/SUBJ/MPQA fits 10 x (10 x 6 + 1) = 610 logistic
regressions per task; with the encoder on a GPU these fits are most of a SentEval run.
This script times :func:`contrastkit.text.senteval.transfer.inner_kfold` serially and with
``--jobs`` worker processes, alternating the two over ``--rounds`` rounds (each round's
ratio taken from timings seconds apart, as on a shared machine a later burst of other work
would otherwise favour one side), and checks that both give the same numbers.

    OMP_NUM_THREADS=1 python benchmarks/senteval_jobs.py --jobs 2 --rounds 2 [--classifier pytorch]

Data: ``--embeddings X.npy --labels Y.npy`` (e.g. a model's CR embeddings), else a
CR-sized synthetic set (3,775 x 384, unit rows around a shared direction, as mean-pooled
sentence embeddings are). Ratio > 1: the parallel fits are faster.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from contrastkit.text.senteval.transfer import Fitting, inner_kfold


def synthetic(n: int = 3775, d: int = 384, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors around one shared direction; balanced labels from a noisy linear rule."""
    rng = np.random.default_rng(seed)
    x = 0.3 * rng.standard_normal((n, d)) + rng.standard_normal(d)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    score = x @ rng.standard_normal(d) + 0.05 * rng.standard_normal(n)
    return x.astype(np.float32), (score > np.median(score)).astype(int)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--classifier", choices=("sklearn", "pytorch"), default="sklearn")
    parser.add_argument("--embeddings", help="[N, d] .npy of sentence embeddings")
    parser.add_argument("--labels", help="[N] .npy of class labels")
    args = parser.parse_args()
    if (args.embeddings is None) != (args.labels is None):
        parser.error("--embeddings and --labels go together")
    if args.embeddings:
        x, y = np.load(args.embeddings), np.load(args.labels)
    else:
        x, y = synthetic()
    fittings = {n: Fitting(args.classifier, jobs=n) for n in (1, args.jobs)}
    inner_kfold(x[::10], y[::10], k=2, fitting=fittings[args.jobs])  # start the workers
    ratios, results = [], {}
    for r in range(args.rounds):
        seconds = {}
        for jobs in (1, args.jobs) if r % 2 == 0 else (args.jobs, 1):
            start = time.perf_counter()
            results[jobs] = inner_kfold(x, y, fitting=fittings[jobs])
            seconds[jobs] = time.perf_counter() - start
        ratios.append(seconds[1] / seconds[args.jobs])
        print(
            f"round {r}: serial {seconds[1]:.1f} s, jobs={args.jobs} "
            f"{seconds[args.jobs]:.1f} s, ratio {ratios[-1]:.2f}",
            flush=True,
        )
    same = results[1] == results[args.jobs]
    print(
        f"{len(y)} x {x.shape[1]}: median ratio {statistics.median(ratios):.2f} over "
        f"{args.rounds} rounds; same scores: {same} (acc {results[1]['acc']})"
    )
    if not same:
        raise SystemExit("the parallel fits gave other numbers")


if __name__ == "__main__":
    main()
