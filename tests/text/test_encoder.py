"""Sentence encoder: pooling against loop references, the model's own sentence-transformers
configuration, the training-only MLP head, dropout views, and save/load round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from contrastkit.text import (
    SentenceEncoder,
    declares_normalize,
    pool,
    sentence_transformers_settings,
)


def test_pool_matches_loop_reference() -> None:
    torch.manual_seed(0)
    hidden = torch.randn(3, 5, 4, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]])
    mean = pool(hidden, mask, "mean")
    for b in range(3):
        tokens = [hidden[b, t] for t in range(5) if mask[b, t] == 1]
        assert torch.allclose(mean[b], sum(tokens) / len(tokens))
        assert torch.equal(pool(hidden, mask, "cls")[b], hidden[b, 0])
    with pytest.raises(ValueError, match="pooling must be one of"):
        pool(hidden, mask, "max")


def test_plain_checkpoint_defaults_to_cls(tiny_bert: Path) -> None:
    assert sentence_transformers_settings(tiny_bert) == (None, None)
    enc = SentenceEncoder.from_pretrained(tiny_bert)
    assert enc.pooling == "cls"
    # the model's positions (BERT's 512; this tiny model's 64: 512 overran them before)
    assert enc.max_length == 64


def test_sentence_transformers_config_is_honoured_and_overridable(tiny_st_bert: Path) -> None:
    assert sentence_transformers_settings(tiny_st_bert) == ("mean", 24)
    enc = SentenceEncoder.from_pretrained(tiny_st_bert)
    assert (enc.pooling, enc.max_length) == ("mean", 24)
    over = SentenceEncoder.from_pretrained(tiny_st_bert, pooling="cls", max_length=8)
    assert (over.pooling, over.max_length) == ("cls", 8)


def test_unsupported_pooling_config_is_rejected(tmp_path: Path, make_tiny_bert: object) -> None:
    root = make_tiny_bert(tmp_path / "m", pooling="max")  # type: ignore[operator]
    with pytest.raises(ValueError, match="unsupported pooling"):
        SentenceEncoder.from_pretrained(root)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_embeddings_match_sentence_transformers(
    tmp_path: Path, tiny_bert: Path, sentences: list[str], pooling: str
) -> None:
    st = pytest.importorskip("sentence_transformers")
    enc = SentenceEncoder.from_pretrained(tiny_bert, pooling=pooling, max_length=16)
    enc.save_pretrained(tmp_path / "saved")
    model = st.SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    assert model.max_seq_length == 16
    ref = torch.as_tensor(model.encode(sentences, batch_size=5))
    assert torch.allclose(enc.encode(sentences, batch_size=3), ref, atol=1e-5)


def test_encode_keeps_input_order_across_length_sorted_batches(
    tiny_bert: Path, sentences: list[str]
) -> None:
    enc = SentenceEncoder.from_pretrained(tiny_bert, pooling="mean")
    together = enc.encode(sentences, batch_size=4)
    one_by_one = torch.cat([enc.encode([s]) for s in sentences])
    assert torch.allclose(together, one_by_one, atol=1e-5)


def test_mlp_head_only_in_training(tiny_bert: Path, sentences: list[str]) -> None:
    enc = SentenceEncoder.from_pretrained(tiny_bert, mlp_head=True, dropout=0.0)
    plain = SentenceEncoder.from_pretrained(tiny_bert, dropout=0.0)
    batch = sentences[:4]
    enc.train()
    pooled = plain.train().embed(batch)
    expected = torch.tanh(pooled @ enc.head[0].weight.T + enc.head[0].bias)
    assert torch.allclose(enc.embed(batch), expected, atol=1e-6)
    assert torch.allclose(enc.encode(batch), plain.encode(batch), atol=1e-6)
    assert enc.training  # encode restores the mode


def test_dropout_makes_the_two_views(tiny_bert: Path, sentences: list[str]) -> None:
    noisy = SentenceEncoder.from_pretrained(tiny_bert, dropout=0.3).train()
    assert noisy.model.config.hidden_dropout_prob == 0.3
    assert noisy.model.config.attention_probs_dropout_prob == 0.3
    emb = noisy.embed(sentences[:4] + sentences[:4])
    assert not torch.allclose(emb[:4], emb[4:])
    clean = SentenceEncoder.from_pretrained(tiny_bert, dropout=0.0).train()
    emb = clean.embed(sentences[:4] + sentences[:4])
    assert torch.allclose(emb[:4], emb[4:], atol=1e-6)


def test_save_pretrained_round_trip(tmp_path: Path, tiny_bert: Path, sentences: list[str]) -> None:
    from transformers import AutoModel

    enc = SentenceEncoder.from_pretrained(tiny_bert, pooling="mean", mlp_head=True, max_length=20)
    enc.save_pretrained(tmp_path / "out")
    cfg = json.loads((tmp_path / "out" / "1_Pooling" / "config.json").read_text())
    assert cfg["pooling_mode_mean_tokens"] and not cfg["pooling_mode_cls_token"]
    reloaded = SentenceEncoder.from_pretrained(tmp_path / "out")
    assert (reloaded.pooling, reloaded.max_length, reloaded.head) == ("mean", 20, None)
    assert torch.allclose(reloaded.encode(sentences), enc.encode(sentences), atol=1e-6)
    hf = AutoModel.from_pretrained(tmp_path / "out")
    for name, tensor in enc.model.state_dict().items():
        assert torch.equal(hf.state_dict()[name], tensor), name


def test_save_pretrained_keeps_a_normalize_module(
    tmp_path: Path, make_tiny_bert: Any, sentences: list[str]
) -> None:
    source = make_tiny_bert(tmp_path / "st", pooling="mean", normalize=True)
    enc = SentenceEncoder.from_pretrained(source)
    plain = SentenceEncoder.from_pretrained(make_tiny_bert(tmp_path / "plain", pooling="mean"))
    assert (enc.normalize, plain.normalize) == (True, False)
    enc.save_pretrained(tmp_path / "saved")
    plain.save_pretrained(tmp_path / "saved_plain")
    assert declares_normalize(tmp_path / "saved")
    assert not declares_normalize(tmp_path / "saved_plain")
    raw = enc.encode(sentences)
    assert not torch.allclose(raw.norm(dim=-1), torch.ones(len(sentences)))  # encode: raw
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    ref = torch.as_tensor(model.encode(sentences, batch_size=5))
    assert torch.allclose(ref, torch.nn.functional.normalize(raw, dim=-1), atol=1e-5)


def test_bad_arguments(tiny_bert: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        SentenceEncoder.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="dropout must be in"):
        SentenceEncoder.from_pretrained(tiny_bert, dropout=1.5)
    with pytest.raises(ValueError, match="pooling must be one of"):
        SentenceEncoder.from_pretrained(tiny_bert, pooling="max")
    enc = SentenceEncoder.from_pretrained(tiny_bert)
    with pytest.raises(TypeError, match="sequence of str"):
        enc.embed("one string")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one sentence"):
        enc.embed([])


def test_a_broken_model_folder_is_one_error_naming_it(tmp_path: Path, tiny_bert: Path) -> None:
    """No tokenizer file (transformers built a five-token tokenizer and every word became
    [UNK]), damaged weights or config, and a max_length beyond the model's positions: one
    ``ValueError`` or ``FileNotFoundError`` naming the folder, where tracebacks came."""
    import shutil

    def copy(name: str) -> Path:
        return Path(shutil.copytree(tiny_bert, tmp_path / name))

    no_tokenizer = copy("no_tokenizer")
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        (no_tokenizer / name).unlink(missing_ok=True)
    with pytest.raises(FileNotFoundError, match=r"no_tokenizer' has no tokenizer: expected one of"):
        SentenceEncoder.from_pretrained(no_tokenizer)
    damaged = copy("damaged")
    weights = next(p for p in damaged.iterdir() if p.suffix in (".safetensors", ".bin"))
    weights.write_bytes(b"\x00" * 16)
    with pytest.raises(ValueError, match=r"damaged': cannot load its weights: "):
        SentenceEncoder.from_pretrained(damaged)
    positions = json.loads((tiny_bert / "config.json").read_text())["max_position_embeddings"]
    with pytest.raises(ValueError, match=rf"max_length {positions + 1} exceeds the {positions} "):
        SentenceEncoder.from_pretrained(tiny_bert, max_length=positions + 1)
