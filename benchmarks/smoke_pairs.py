"""The default ``PAIRS`` of ``benchmarks/gpu_smoke.sh``, from the framework registry.

Every registered framework (:data:`contrastkit.frameworks.FRAMEWORKS`) with one loss it
accepts: its ``default_loss``, else InfoNCE or NT-Xent, else its first compatible loss;
then :data:`EXTRA`, the pairs whose losses take other code paths under mixed precision
(MACL's adaptive temperature, AMCL's heads, MoCo's queue, NNCLR's support set).

    python benchmarks/smoke_pairs.py    # simclr:ntxent moco:infonce ... nnclr:macl
"""

from __future__ import annotations

from contrastkit.frameworks import FRAMEWORKS

EXTRA = ("simclr:macl", "simclr:amcl", "moco:macl", "nnclr:macl")


def default_pairs() -> list[str]:
    """``framework:loss`` for every registered framework, then :data:`EXTRA`."""
    pairs = []
    for name, cls in FRAMEWORKS.items():
        accepted = cls.compatible_losses()
        usual = [loss for loss in ("infonce", "ntxent") if loss in accepted]
        pairs.append(f"{name}:{getattr(cls, 'default_loss', None) or (usual + accepted)[0]}")
    return pairs + [pair for pair in EXTRA if pair not in pairs]


if __name__ == "__main__":
    print(" ".join(default_pairs()))
