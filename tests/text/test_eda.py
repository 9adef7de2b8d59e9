"""EDA random swap and random deletion (Wei & Zou, 2019), batched and seeded."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from contrastkit.text.eda import (
    EDAAugment,
    deletion_mask,
    random_deletion,
    random_swap,
    swap_permutations,
)

BATCH = [
    "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 w20 w21",
    "a b",
    "single",
    "",
    "the movie is great , and the acting is perfect .",
    "one two three",
]


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_swap_keeps_the_multiset_of_words() -> None:
    for seed in range(20):
        out = random_swap(BATCH, gen(seed), alpha=0.3)
        assert len(out) == len(BATCH)
        for before, after in zip(BATCH, out, strict=True):
            assert Counter(after.split()) == Counter(before.split())


def test_swap_changes_every_sentence_of_distinct_words_with_one_swap() -> None:
    # 2 <= L < 10 with alpha 0.1: exactly one swap of two distinct positions
    sentences = ["a b", "one two three", "p q r s t u v w x"]
    for seed in range(20):
        out = random_swap(sentences, gen(seed))
        for before, after in zip(sentences, out, strict=True):
            moved = sum(x != y for x, y in zip(before.split(), after.split(), strict=True))
            assert moved == 2


def test_swap_count_follows_alpha() -> None:
    lengths = torch.tensor([22, 2, 1, 0, 10])
    perm = swap_permutations(lengths, 0.1, gen(3))
    for row, n in zip(perm, lengths.tolist(), strict=True):
        assert sorted(row[:n].tolist()) == list(range(n))  # a permutation of the words
        assert row[n:].tolist() == list(range(n, perm.shape[1]))  # padding untouched
    # 22 words -> floor(2.2) = 2 swaps -> at most 4 words displaced, at least 2
    displaced = int((perm[0, :22] != torch.arange(22)).sum())
    assert 2 <= displaced <= 4 or displaced == 0  # two swaps may undo each other
    assert perm[2, :1].tolist() == [0]


def test_one_word_and_empty_sentences_are_left_alone() -> None:
    assert random_swap(["single", ""], gen()) == ["single", ""]
    assert random_deletion(["single", ""], gen(), p=0.9) == ["single", ""]


def test_deletion_never_empties_a_sentence() -> None:
    for seed in range(50):
        out = random_deletion(BATCH, gen(seed), p=0.95)
        for before, after in zip(BATCH, out, strict=True):
            if before:
                assert after, f"{before!r} was emptied"
            # what is left is a subsequence of the words, in order
            it = iter(before.split())
            assert all(word in it for word in after.split())


def test_deletion_rate_is_p() -> None:
    lengths = torch.full((400,), 50)
    keep = deletion_mask(lengths, 0.3, gen(1))
    kept = keep.double().mean().item()
    assert abs(kept - 0.7) < 0.01  # 20,000 words: std of the rate 0.003
    assert random_deletion(BATCH, gen(), p=0.0) == [" ".join(s.split()) for s in BATCH]


def test_rescued_word_is_uniform_over_the_sentence() -> None:
    # p close to 1: nearly every row is rescued with one word drawn uniformly from 4
    keep = deletion_mask(torch.full((4000,), 4), 0.999, gen(2))
    assert bool((keep.sum(dim=1) >= 1).all())
    counts = keep.sum(dim=0).double() / keep.sum()
    assert torch.allclose(counts, torch.full((4,), 0.25, dtype=torch.float64), atol=0.03)


@pytest.mark.parametrize("operation", ["swap", "delete"])
def test_same_seed_same_views_other_seed_other_views(operation: str) -> None:
    aug = EDAAugment(operation, 0.3)
    batch = BATCH * 4
    assert aug(batch, gen(7)) == aug(batch, gen(7))
    assert aug(batch, gen(7)) != aug(batch, gen(8))
    g = gen(7)
    first, second = aug(batch, g), aug(batch, g)
    assert first != second  # the generator advances: two views differ


def test_mixed_operations_give_each_sentence_one_of_them() -> None:
    batch = ["w0 w1 w2 w3 w4 w5 w6 w7 w8 w9"] * 400
    views = EDAAugment(("swap", "delete"), 0.3)(batch, gen(3))
    words = batch[0].split()
    swapped = [v for v in views if sorted(v.split()) == sorted(words) and v != batch[0]]
    deleted = [v for v in views if len(v.split()) < len(words)]
    kept_order = all([w for w in words if w in v.split()] == v.split() for v in deleted)
    # 3 swaps of 10 words never leave the sentence unchanged... unless they undo each
    # other; a deletion of p = 0.3 keeps all 10 words with probability 0.7^10 = 2.8 %
    assert len(swapped) + len(deleted) >= 0.97 * len(batch) and kept_order
    assert 150 < len(swapped) < 250 and 150 < len(deleted) < 250  # drawn 1:1 per sentence
    assert EDAAugment(("swap",), 0.3)(batch, gen(3)) == EDAAugment("swap", 0.3)(batch, gen(3))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="operation must be among swap, delete"):
        EDAAugment("synonym")
    with pytest.raises(ValueError, match="operation must be among"):
        EDAAugment(())
    with pytest.raises(ValueError, match=r"alpha must be a number in \[0, 1\)"):
        EDAAugment("swap", 1.5)
    with pytest.raises(ValueError, match="p must be"):
        random_deletion(BATCH, gen(), p=-0.1)
