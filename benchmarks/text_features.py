"""Frozen text features of the shared loop: length-sorted groups against one padded chunk.

``Trainer.encode`` hands the encoder chunks of 1,024 sentences. ``SentenceFeatures``
encodes a chunk without gradients in length-sorted groups of ``eval_batch`` sentences,
each padded to its own longest sentence; before, the whole chunk went through as one
batch padded to its longest sentence. This measures both on the same chunks, alternating
which goes first, and summarises the per-round time ratio (median and quartiles) so that
another job's load burst on a shared machine does not decide the result
(``encode_throughput.py`` has the same design).

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python benchmarks/text_features.py \\
        --sentences ../shared/data/senteval/SST/fine --rounds 6

``--sentences``: SentEval's ``SST/fine`` folder (train and test sentences), an STS
Benchmark file or one sentence per line. Ratio > 1: the grouped form is faster. The
largest difference between the two outputs is printed too.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
from encode_throughput import load_sentences, quartiles, timed

from contrastkit.data import load_dataset
from contrastkit.text.encoder import SentenceEncoder, default_model_path
from contrastkit.text.trainer import SentenceFeatures


def sentences_from(path: str, limit: int) -> list[str]:
    if Path(path).is_dir():
        split = load_dataset("sst5", data_root=path)
        return [*split.x_test[:], *split.x_train[:]][:limit]
    return load_sentences(path, limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model folder (default: the MiniLM wheel)")
    parser.add_argument("--sentences", required=True)
    parser.add_argument("--chunk", type=int, default=1024, help="Trainer.encode's chunk")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--eval-batch", type=int, default=128)
    parser.add_argument("--max-length", type=int, default=64, help="TrainConfig's default")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    encoder = SentenceEncoder.from_pretrained(args.model or default_model_path()).eval()
    grouped = SentenceFeatures(encoder, args.max_length, args.eval_batch)
    one_batch = SentenceFeatures(encoder, args.max_length, eval_batch=args.chunk)
    pool = sentences_from(args.sentences, args.chunk * args.rounds)
    chunks = [pool[a : a + args.chunk] for a in range(0, len(pool), args.chunk)]
    chunks = [c for c in chunks if len(c) == args.chunk]
    if not chunks:
        raise SystemExit(f"--sentences has {len(pool)} sentences, fewer than one --chunk")
    print(
        f"{len(chunks)} rounds x {args.chunk} sentences, groups of {args.eval_batch}, max "
        f"length {args.max_length}, {args.threads} thread(s)"
    )
    ratios, rates = [], []
    with torch.no_grad():
        for rnd, chunk in enumerate(chunks):
            pair = [("grouped", grouped), ("one batch", one_batch)]
            if rnd % 2:
                pair.reverse()
            wall = {name: timed(lambda f=f, c=chunk: f(c))[0] for name, f in pair}
            ratios.append(wall["one batch"] / wall["grouped"])
            rates.append(len(chunk) / wall["grouped"])
            print(
                f"round {rnd + 1}: grouped {wall['grouped']:.2f} s, one batch "
                f"{wall['one batch']:.2f} s, ratio {ratios[-1]:.2f}"
            )
        diff = (grouped(chunks[0]) - one_batch(chunks[0])).abs().max().item()
    q1, med, q3 = quartiles(ratios)
    print(
        f"speed ratio one batch / grouped (wall): median {med:.2f}, quartiles {q1:.2f}-{q3:.2f}; "
        f"grouped median {statistics.median(rates):.0f} sent/s; max |difference| {diff:.1e}"
    )


if __name__ == "__main__":
    main()
