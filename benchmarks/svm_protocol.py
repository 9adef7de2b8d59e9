"""Time of GraphCL's SVM protocol: ``GridSearchCV(SVC())`` per fold (the reference code's
form) against the precomputed-kernel path of :func:`svm_cross_validation`, on the same
embeddings, in the same process; checks that the fold accuracies and chosen ``C`` agree.

Embeddings: a trained run's encoder (``--run DIR``, its ``checkpoint.pt``) or, without
``--run``, a GIN (3 × 32) at its seed-0 initialisation. Single-threaded.

Usage: ``python benchmarks/svm_protocol.py --data-root ../shared/data/tu --dataset NCI1
[--run RUN_DIR]``
"""

from __future__ import annotations

import argparse
import time

import torch

from contrastkit.graphs.evaluate import svm_cross_validation, svm_cross_validation_reference
from contrastkit.graphs.gin import GINEncoder
from contrastkit.graphs.trainer import GraphTrainer
from contrastkit.graphs.tu import load_tu
from contrastkit.training import CHECKPOINT, TrainConfig


def embeddings(dataset: str, data_root: str, run: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    if run is None:
        split = load_tu(dataset, data_root)
        torch.manual_seed(0)
        encoder = GINEncoder(split.x_train.num_features, 32, 3).eval()
        with torch.no_grad():
            return encoder(split.x_train), split.y_train
    state = torch.load(f"{run}/{CHECKPOINT}", weights_only=True)
    config = TrainConfig.from_dict({**state["config"], "data_root": data_root})
    trainer = GraphTrainer(config, progress=False)
    trainer.model.load_state_dict(state["model"])
    trainer.model.eval()
    return trainer.features()[0], trainer.data.y_train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", required=True)
    parser.add_argument("--dataset", default="MUTAG")
    parser.add_argument("--run", help="a finished graph run directory (default: untrained GIN)")
    parser.add_argument("--seed", type=int, default=0, help="the fold split's seed")
    args = parser.parse_args()
    torch.set_num_threads(1)
    x, y = embeddings(args.dataset, args.data_root, args.run)
    times, results = {}, {}
    for name, fn in (
        ("gridsearch", svm_cross_validation_reference),
        ("precomputed", svm_cross_validation),
    ):
        start = time.perf_counter()
        results[name] = fn(x, y, seed=args.seed)
        times[name] = time.perf_counter() - start
    old, new = results["gridsearch"], results["precomputed"]
    same = old["svm_fold_accuracies"] == new["svm_fold_accuracies"]
    same_c = old["svm_c_chosen"] == new["svm_c_chosen"]
    print(f"{args.dataset} ({'run ' + args.run if args.run else 'untrained GIN'}), {len(y)} graphs")
    for name in times:
        r = results[name]
        print(
            f"  {name:12s} {times[name]:8.1f} s  accuracy {r['svm_accuracy']:.6f}  "
            f"C {r['svm_c_chosen']}"
        )
    print(
        f"  speed-up {times['gridsearch'] / times['precomputed']:.2f}x; identical fold "
        f"accuracies: {same}; identical C: {same_c}"
    )
    if not same:
        print(f"  gridsearch folds  {old['svm_fold_accuracies']}")
        print(f"  precomputed folds {new['svm_fold_accuracies']}")


if __name__ == "__main__":
    main()
