"""EDA text augmentations that need no thesaurus: random swap and random deletion.

Wei & Zou (2019), "EDA: Easy Data Augmentation Techniques for Boosting Performance on Text
Classification Tasks", §2, define four operations; LASCon (App. D.2, Table 9) uses all four
as the two views of its IMDB task. Two of them, **synonym replacement** and **random
insertion** (which inserts a synonym), need a thesaurus (WordNet in EDA's code) that is not
available offline here, so only these two are implemented:

* **random swap** (RS): ``n = max(1, floor(α·L))`` times, swap the words at two random
  distinct positions of a sentence of ``L`` words (nothing happens when ``L < 2``);
* **random deletion** (RD): delete each word independently with probability ``p``; a
  sentence would never be emptied: if every word is drawn for deletion, one word chosen
  uniformly at random is kept.

Defaults ``α = p = 0.1`` are EDA's (its ``alpha_rs`` and ``p_rd``). Words are the
whitespace-separated tokens of the sentence as given (SST is already tokenised); unlike
EDA's script the text is not lower-cased nor stripped of punctuation, since the encoder's
own tokenizer handles both.

Both operate on a whole batch at once: the sentences' word positions form a padded
``[B, L_max]`` index matrix, the random draws are made for the whole matrix from the given
``torch.Generator`` (so the same seed gives the same views), and the swaps are applied as
gathers on that matrix, one vectorised pass per swap round (``max n`` rounds).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

OPERATIONS = ("swap", "delete")
DEFAULT_ALPHA = 0.1  # EDA's alpha_rs and p_rd (Wei & Zou, 2019, §2 and its code's defaults)


def _words(sentences: Sequence[str]) -> tuple[list[list[str]], Tensor]:
    words = [s.split() for s in sentences]
    return words, torch.tensor([len(w) for w in words], dtype=torch.long)


def _check(alpha: float, name: str) -> float:
    if not isinstance(alpha, int | float) or not 0.0 <= alpha < 1.0:
        raise ValueError(f"{name} must be a number in [0, 1), got {alpha!r}")
    return float(alpha)


def swap_permutations(lengths: Tensor, alpha: float, generator: torch.Generator) -> Tensor:
    """Word orders after random swaps, ``[B, L_max]`` (positions ≥ ``lengths[b]`` unchanged).

    Row ``b`` gets ``max(1, floor(α·L_b))`` swaps of two distinct positions in
    ``[0, L_b)`` (none if ``L_b < 2``).
    """
    alpha = _check(alpha, "alpha")
    b, width = lengths.shape[0], int(lengths.max()) if lengths.numel() else 0
    perm = torch.arange(width).expand(b, width).clone()
    n_swaps = torch.clamp((alpha * lengths.double()).floor().long(), min=1)
    n_swaps = torch.where(lengths >= 2, n_swaps, torch.zeros_like(n_swaps))
    rows = torch.arange(b)
    for k in range(int(n_swaps.max()) if b else 0):
        active = n_swaps > k
        span = lengths.clamp(min=2).double()
        i = (torch.rand(b, generator=generator, dtype=torch.float64) * span).long()
        # j uniform over the other L-1 positions: draw in [0, L-1) and skip i
        j = (torch.rand(b, generator=generator, dtype=torch.float64) * (span - 1)).long()
        j = j + (j >= i).long()
        i, j = i[active], j[active]
        r = rows[active]
        a, c = perm[r, i].clone(), perm[r, j].clone()
        perm[r, i], perm[r, j] = c, a
    return perm


def deletion_mask(lengths: Tensor, p: float, generator: torch.Generator) -> Tensor:
    """Words kept by random deletion, ``[B, L_max]`` bool; every row with ``L_b ≥ 1`` keeps
    at least one word (a uniformly drawn one if all were drawn for deletion)."""
    p = _check(p, "p")
    b, width = lengths.shape[0], int(lengths.max()) if lengths.numel() else 0
    valid = torch.arange(width)[None, :] < lengths[:, None]
    keep = (torch.rand(b, width, generator=generator, dtype=torch.float64) >= p) & valid
    rescue = torch.rand(b, generator=generator, dtype=torch.float64)
    emptied = ~keep.any(dim=1) & (lengths > 0)
    pick = (rescue * lengths.clamp(min=1).double()).long()
    keep[emptied, pick[emptied]] = True
    return keep


def random_swap(
    sentences: Sequence[str], generator: torch.Generator, alpha: float = DEFAULT_ALPHA
) -> list[str]:
    """EDA random swap of every sentence of a batch (module docstring)."""
    words, lengths = _words(sentences)
    perm = swap_permutations(lengths, alpha, generator).tolist()
    return [" ".join(w[k] for k in order[: len(w)]) for w, order in zip(words, perm, strict=True)]


def random_deletion(
    sentences: Sequence[str], generator: torch.Generator, p: float = DEFAULT_ALPHA
) -> list[str]:
    """EDA random deletion of every sentence of a batch (module docstring)."""
    words, lengths = _words(sentences)
    keep = deletion_mask(lengths, p, generator).tolist()
    return [
        " ".join(word for word, kept in zip(w, row, strict=False) if kept)
        for w, row in zip(words, keep, strict=True)
    ]


class EDAAugment:
    """A batch augmentation ``(sentences, generator) -> sentences`` for the training loop.

    Args:
        operation: ``"swap"`` (random swap), ``"delete"`` (random deletion), or a sequence
            of them: each sentence then gets one operation drawn uniformly from the
            sequence (as each of EDA's augmented sentences comes from one operation).
        alpha: α of random swap and p of random deletion (EDA's default 0.1).

    >>> aug = EDAAugment(("swap", "delete"))
    >>> len(aug(["a b c d", "e f"], torch.Generator().manual_seed(0)))
    2
    """

    def __init__(self, operation: str | Sequence[str] = "swap", alpha: float = DEFAULT_ALPHA):
        ops = (operation,) if isinstance(operation, str) else tuple(operation)
        if not ops or any(op not in OPERATIONS for op in ops):
            raise ValueError(f"operation must be among {', '.join(OPERATIONS)}, got {operation!r}")
        self.operations = ops
        self.alpha = _check(alpha, "alpha")

    def __call__(self, sentences: Sequence[str], generator: torch.Generator) -> list[str]:
        if len(self.operations) == 1:
            return self._apply(self.operations[0], sentences, generator)
        pick = torch.randint(len(self.operations), (len(sentences),), generator=generator)
        out = list(sentences)
        for k, op in enumerate(self.operations):  # each operation on its own sentences only
            rows = (pick == k).nonzero().flatten().tolist()
            if rows:
                changed = self._apply(op, [sentences[i] for i in rows], generator)
                for i, sentence in zip(rows, changed, strict=True):
                    out[i] = sentence
        return out

    def _apply(self, op: str, sentences: Sequence[str], generator: torch.Generator) -> list[str]:
        if op == "swap":
            return random_swap(sentences, generator, self.alpha)
        return random_deletion(sentences, generator, self.alpha)

    def __repr__(self) -> str:
        return f"EDAAugment({self.operations!r}, alpha={self.alpha})"
