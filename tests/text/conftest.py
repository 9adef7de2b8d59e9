"""Tiny fixtures for the sentence tests: a randomly initialised 1-layer BERT with a
WordPiece vocabulary of the fixture sentences' words, saved to a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

SENTENCES = [
    "a man is playing a guitar",
    "a man plays the guitar",
    "the dog runs in the park",
    "a dog is running in a park",
    "a woman cooks food",
    "the woman is cooking",
    "a child rides a horse",
    "the kid is riding a horse",
    "two men play football",
    "a cat sleeps on the sofa",
    "the cat is sleeping",
    "people walk on the beach",
]


def build_tiny_bert(
    root: Path,
    pooling: str | None = None,
    hidden: int = 16,
    seed: int = 0,
    normalize: bool = False,
) -> Path:
    """Save a random BERT (1 layer, ``hidden`` dims) and its tokenizer under ``root``.

    With ``pooling`` given, also write a sentence-transformers configuration declaring it
    (ending in a ``Normalize`` module with ``normalize``, as all-MiniLM-L6-v2 does).
    """
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    words = sorted({w for s in SENTENCES for w in s.split()})
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=64,
    )
    root.mkdir(parents=True, exist_ok=True)
    BertModel(config).save_pretrained(root)
    BertTokenizer(vocab=vocab).save_pretrained(root)
    if pooling is not None:
        modules = [
            {"idx": i, "name": str(i), "path": sub, "type": f"sentence_transformers.models.{kind}"}
            for i, (sub, kind) in enumerate(
                [("", "Transformer"), ("1_Pooling", "Pooling")]
                + [("2_Normalize", "Normalize")] * normalize
            )
        ]
        (root / "modules.json").write_text(json.dumps(modules))
        (root / "1_Pooling").mkdir(exist_ok=True)
        cfg = {
            "word_embedding_dimension": hidden,
            "pooling_mode_cls_token": pooling == "cls",
            "pooling_mode_mean_tokens": pooling == "mean",
            "pooling_mode_max_tokens": pooling == "max",
            "pooling_mode_mean_sqrt_len_tokens": False,
        }
        (root / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
        (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 24}))
    return root


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain ``transformers`` checkpoint (no sentence-transformers config)."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_st_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same kind of model saved with a sentence-transformers mean-pooling config."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_st_bert"), pooling="mean")


@pytest.fixture
def sentences() -> list[str]:
    return list(SENTENCES)


@pytest.fixture(scope="session")
def make_tiny_bert() -> object:
    """The :func:`build_tiny_bert` builder, for tests needing other settings."""
    return build_tiny_bert
