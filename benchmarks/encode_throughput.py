"""Sentence-encoding throughput: contrastkit's ``SentenceEncoder.encode`` against
sentence-transformers' ``SentenceTransformer.encode``, same model, sentences, batch size,
maximum length and device, measured alternately in one process.

Made for a shared machine, where another job's burst can halve one timing:

* many short rounds (``--rounds``, each encoding ``--chunk`` sentences with both), the
  order of the two alternating every round (AB, BA, AB, ...) so that neither always runs
  first or second in a load swing;
* the speed ratio is taken **per round** (the two timings of a round are seconds apart)
  and summarised by its median and quartiles over rounds, not by a ratio of totals;
* both wall-clock time and the process's CPU time (``time.process_time``) are recorded;
  with one thread, CPU time counts only this process's work, so it is far less affected
  by other jobs taking the cores (they still share caches and memory bandwidth).

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python benchmarks/encode_throughput.py \\
        --sentences ../shared/data/stsbenchmark/sts-dev.csv --chunk 256 --rounds 16

``--sentences`` is an STS Benchmark file (both columns are used) or one sentence per line.
The two outputs are also compared (max absolute difference of the L2-normalised
embeddings). Ratio > 1: contrastkit is faster.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
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


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model folder (default: the MiniLM wheel)")
    parser.add_argument("--sentences", required=True)
    parser.add_argument("--chunk", type=int, default=256, help="sentences per round")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=128, help="tokens, for both")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from sentence_transformers import SentenceTransformer

    path = args.model or default_model_path()
    pool = load_sentences(args.sentences, args.chunk * args.rounds)
    if len(pool) < args.chunk:
        raise SystemExit(f"--sentences has {len(pool)} distinct sentences, need --chunk")
    ours = SentenceEncoder.from_pretrained(path, max_length=args.max_length).to(args.device)
    theirs = SentenceTransformer(path, device=args.device)
    theirs.max_seq_length = args.max_length

    def run_ours(chunk: list[str]) -> torch.Tensor:
        return ours.encode(chunk, batch_size=args.batch_size)

    def run_theirs(chunk: list[str]) -> torch.Tensor:
        return theirs.encode(
            chunk, batch_size=args.batch_size, convert_to_tensor=True, normalize_embeddings=False
        )

    warm = pool[: args.batch_size]
    run_ours(warm), run_theirs(warm)  # first-call costs (allocations, lazy init) excluded
    print(
        f"{args.rounds} rounds x {args.chunk} sentences, batch {args.batch_size}, max length "
        f"{args.max_length}, device {args.device}, {args.threads} thread(s), {path}"
    )
    wall_ratio, cpu_ratio, ours_rate, theirs_rate = [], [], [], []
    for rnd in range(args.rounds):
        start = (rnd * args.chunk) % max(1, len(pool) - args.chunk + 1)
        chunk = pool[start : start + args.chunk]
        pair = [("ours", run_ours), ("theirs", run_theirs)]
        if rnd % 2:
            pair.reverse()
        times = {name: timed(lambda fn=fn, c=chunk: fn(c)) for name, fn in pair}
        (w_o, c_o), (w_t, c_t) = times["ours"], times["theirs"]
        wall_ratio.append(w_t / w_o)
        cpu_ratio.append(c_t / c_o)
        ours_rate.append(len(chunk) / w_o)
        theirs_rate.append(len(chunk) / w_t)
        print(
            f"round {rnd + 1:2d} ({pair[0][0]} first): contrastkit {ours_rate[-1]:6.1f} sent/s, "
            f"sentence-transformers {theirs_rate[-1]:6.1f} sent/s; ratio wall "
            f"{wall_ratio[-1]:.3f}, cpu {cpu_ratio[-1]:.3f}"
        )
    a = torch.nn.functional.normalize(run_ours(pool[: args.chunk]), dim=1)
    b = torch.nn.functional.normalize(run_theirs(pool[: args.chunk]).cpu().float(), dim=1)
    for name, values in (("wall", wall_ratio), ("cpu", cpu_ratio)):
        q1, med, q3 = quartiles(values)
        print(
            f"speed ratio contrastkit / sentence-transformers ({name} time): median {med:.3f}, "
            f"quartiles {q1:.3f}-{q3:.3f}, range {min(values):.3f}-{max(values):.3f}"
        )
    print(
        f"median sent/s (wall): contrastkit {statistics.median(ours_rate):.1f}, "
        f"sentence-transformers {statistics.median(theirs_rate):.1f}"
    )
    print(f"max |difference| of the L2-normalised embeddings: {(a - b).abs().max().item():.2e}")


if __name__ == "__main__":
    main()
