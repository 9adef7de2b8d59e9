"""Sentence-encoding throughput: contrastkit's ``SentenceEncoder.encode`` against
sentence-transformers' ``SentenceTransformer.encode`` on the same model, sentences,
batch size and device, alternating the two over several rounds so that machine load
hits both alike. Prints sentences per second per round and the median ratio.

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python benchmarks/encode_throughput.py \\
        --sentences ../shared/data/stsbenchmark/sts-dev.csv --limit 2000 --batch-size 64

``--sentences`` is an STS Benchmark file (both columns are used) or one sentence per line.
The two outputs are also compared (max absolute difference of the embeddings).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from contrastkit.text.data import read_sentences, read_sts
from contrastkit.text.encoder import SentenceEncoder, default_model_path


def load_sentences(path: str, limit: int) -> list[str]:
    """Distinct sentences of an STS-B file (or a one-per-line file), first ``limit``."""
    if Path(path).suffix == ".csv":
        pairs = read_sts(path)
        items = [*pairs.sentences1, *pairs.sentences2]
    else:
        items = read_sentences(path)
    return list(dict.fromkeys(items))[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model folder (default: the MiniLM wheel)")
    parser.add_argument("--sentences", required=True)
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from sentence_transformers import SentenceTransformer

    path = args.model or default_model_path()
    sentences = load_sentences(args.sentences, args.limit)
    ours = SentenceEncoder.from_pretrained(path).to(args.device)
    theirs = SentenceTransformer(path, device=args.device)
    print(f"{len(sentences)} sentences, batch {args.batch_size}, device {args.device}, {path}")
    ratios = []
    for rnd in range(1, args.rounds + 1):
        start = time.perf_counter()
        a = ours.encode(sentences, batch_size=args.batch_size)
        t_ours = time.perf_counter() - start
        start = time.perf_counter()
        b = theirs.encode(
            sentences,
            batch_size=args.batch_size,
            convert_to_tensor=True,
            normalize_embeddings=False,
        )
        t_theirs = time.perf_counter() - start
        ratios.append(t_theirs / t_ours)
        print(
            f"round {rnd}: contrastkit {len(sentences) / t_ours:.1f} sent/s, "
            f"sentence-transformers {len(sentences) / t_theirs:.1f} sent/s, "
            f"ratio {ratios[-1]:.2f}"
        )
    diff = (torch.nn.functional.normalize(a, dim=1) - b.cpu().float()).abs().max().item()
    print(
        f"median speed ratio contrastkit / sentence-transformers: {statistics.median(ratios):.2f}"
    )
    print(f"max |difference| of the L2-normalised embeddings: {diff:.2e}")


if __name__ == "__main__":
    main()
