"""The sentence-transformers loss adapter: its value on a batch, and a few steps of
SentenceTransformerTrainer with it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from contrastkit.frameworks import SimCSE
from contrastkit.text import ContrastkitLoss, two_view_loss

st = pytest.importorskip("sentence_transformers")
pytest.importorskip("datasets")


def tiny_model(path: Path) -> object:
    """The tiny BERT as a SentenceTransformer (mean pooling, from its saved ST config)."""
    return st.SentenceTransformer(str(path), device="cpu")


def test_value_is_the_two_view_loss_of_the_embeddings(
    tiny_st_bert: Path, sentences: list[str]
) -> None:
    model = tiny_model(tiny_st_bert)
    model.eval()  # no dropout, so both computations see the same embeddings
    adapter = ContrastkitLoss(model, "macl", alpha=1.0)
    assert adapter.loss.alpha == 1.0 and adapter.loss.temperature == 0.05
    anchors, positives = sentences[:4], sentences[4:8]
    features = [model.tokenize(anchors), model.tokenize(positives)]
    got = adapter(features, None)
    h1 = torch.as_tensor(model.encode(anchors, convert_to_tensor=True))
    h2 = torch.as_tensor(model.encode(positives, convert_to_tensor=True))
    assert got.item() == pytest.approx(
        float(two_view_loss(SimCSE.make_loss("macl", {"alpha": 1.0}), h1, h2)), rel=1e-5
    )
    assert adapter.get_config_dict()["alpha"] == 1.0


def test_rejects_wrong_columns_and_kwargs(tiny_st_bert: Path, sentences: list[str]) -> None:
    model = tiny_model(tiny_st_bert)
    adapter = ContrastkitLoss(model, "infonce")
    with pytest.raises(ValueError, match="anchor, positive"):
        adapter([model.tokenize(sentences[:2])] * 3, None)
    with pytest.raises(ValueError, match="only accepted with a loss name"):
        ContrastkitLoss(model, SimCSE.make_loss("infonce"), temperature=0.1)
    with pytest.raises(TypeError, match=r"registry name or an nn\.Module"):
        ContrastkitLoss(model, 3)  # type: ignore[arg-type]


def test_trains_with_sentence_transformer_trainer(
    tmp_path: Path, tiny_st_bert: Path, sentences: list[str]
) -> None:
    from datasets import Dataset

    model = tiny_model(tiny_st_bert)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    data = Dataset.from_dict({"anchor": sentences, "positive": sentences})  # SimCSE-style
    args = st.SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        max_steps=3,
        learning_rate=1e-3,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        logging_steps=1,
        disable_tqdm=True,
    )
    loss = ContrastkitLoss(model, "macl")
    trainer = st.SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss)
    result = trainer.train()
    assert result.global_step == 3
    assert torch.isfinite(torch.tensor(result.training_loss))
    changed = [k for k, v in model.state_dict().items() if not torch.equal(before[k], v)]
    assert changed, "no parameter moved"


def test_a_loss_with_its_own_parameters_is_trained_too(
    tmp_path: Path, tiny_st_bert: Path, sentences: list[str]
) -> None:
    from datasets import Dataset

    model = tiny_model(tiny_st_bert)
    loss = ContrastkitLoss(model, "amcl", heads=2, out_dim=8)
    before = {k: v.clone() for k, v in loss.loss.state_dict().items()}
    args = st.SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        max_steps=2,
        learning_rate=1e-2,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    data = Dataset.from_dict({"anchor": sentences, "positive": sentences})
    st.SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss).train()
    moved = {k for k, v in loss.loss.state_dict().items() if not torch.equal(before[k], v)}
    assert any(k.startswith("projector.") for k in moved), moved
    assert any(k.startswith("adaptive_temperature.") for k in moved), moved
