"""The text modality on the shared loop: the SST-5 dataset, the sentence trainer (EDA views,
a transformer encoder, LASCon's downstream head) and ``contrastkit train --dataset sst5``,
on a tiny BERT and an SST/fine folder written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from contrastkit.cli import main
from contrastkit.data import load_dataset
from contrastkit.study import load_study, run_study
from contrastkit.text.datasets import Sentences
from contrastkit.text.encoder import SentenceEncoder
from contrastkit.text.trainer import SentenceFeatures, SentenceTrainer
from contrastkit.training import TrainConfig, trainer_class

from .conftest import SENTENCES


def write_sst5(root: Path, n_train: int = 24) -> Path:
    """SentEval's SST/fine layout: ``LABEL sentence`` lines, labels 0-4."""
    root.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("dev", 6), ("test", 12)):
        lines = [f"{i % 5} {SENTENCES[i % len(SENTENCES)]}" for i in range(n)]
        (root / f"sentiment-{split}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_sentences_index_like_a_tensor_of_samples() -> None:
    x = Sentences(["a", "b", "c", "d"])
    assert len(x) == 4 and x[2] == "c" and x[1:3] == ["b", "c"]
    assert x[torch.tensor([3, 0, 3])] == ["d", "a", "d"]


def test_sst5_split_labels_and_seeded_subset(tmp_path: Path) -> None:
    root = write_sst5(tmp_path / "fine")
    full = load_dataset("sst5", data_root=str(root))
    assert (full.kind, len(full.x_train), len(full.x_test)) == ("text", 24, 12)
    assert full.y_train.dtype == torch.float32 and full.y_train[:6].tolist() == [0, 1, 2, 3, 4, 0]
    part = load_dataset("sst5", 10, str(root))
    again = load_dataset("sst5", 10, str(root))
    assert list(part.x_train) == list(again.x_train) and len(part.x_train) == 10
    with pytest.raises(ValueError, match=r"num_samples must be in \[2, 24\] for sst5, got 25"):
        load_dataset("sst5", 25, str(root))
    expected = {(s, i % 5) for i, s in enumerate(full.x_train)}  # labels follow sentences
    pairs = {(s, int(y)) for s, y in zip(part.x_train, part.y_train.tolist(), strict=True)}
    assert len(pairs) == 10 and pairs <= expected


def test_sentences_read_a_file_of_one_sentence_per_line(tmp_path: Path) -> None:
    path = tmp_path / "wiki.txt"
    path.write_text("\n".join(SENTENCES) + "\n\n", encoding="utf-8")  # blank lines skipped
    split = load_dataset("sentences", data_root=str(path))
    assert split.x_train[:] == SENTENCES and len(split.x_test) == 0
    assert split.y_train.shape == (len(SENTENCES),)
    subset = load_dataset("sentences", data_root=str(path), num_samples=5).x_train[:]
    assert len(subset) == 5 and set(subset) <= set(SENTENCES)
    with pytest.raises(FileNotFoundError, match=r"missing\.txt"):
        load_dataset("sentences", data_root=str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="set data_root to a file of one sentence per line"):
        load_dataset("sentences")


def test_sst5_names_the_files_it_expects(tmp_path: Path) -> None:
    root = write_sst5(tmp_path / "fine")
    (root / "sentiment-test").unlink()
    with pytest.raises(FileNotFoundError, match=r"sst5 expects .*missing: sentiment-test$"):
        load_dataset("sst5", data_root=str(root))
    with pytest.raises(ValueError, match="set data_root to SentEval's SST/fine folder"):
        load_dataset("sst5")


def test_frozen_features_in_length_groups_keep_the_input_order(tiny_bert: Path) -> None:
    encoder = SentenceEncoder.from_pretrained(tiny_bert, pooling="mean").eval()
    features = SentenceFeatures(encoder, max_length=32, eval_batch=3)
    sentences = [" ".join(SENTENCES[: 1 + i % 5]) for i in range(11)]  # lengths interleaved
    with torch.no_grad():
        grouped = features(sentences)
        one_batch = encoder.embed(sentences, 32)
    torch.testing.assert_close(grouped, one_batch, rtol=1e-5, atol=1e-5)
    assert features(sentences).requires_grad  # training batches: one batch, with gradients


def test_text_datasets_get_the_sentence_trainer(tmp_path: Path, tiny_bert: Path) -> None:
    config = TrainConfig(dataset="sst5", framework="supervised", loss="lascon")
    assert trainer_class(config) is SentenceTrainer
    with pytest.raises(ValueError, match="text_model applies to text datasets"):
        TrainConfig(dataset="digits", text_model=str(tiny_bert))
    root = str(write_sst5(tmp_path / "fine"))
    base = {"dataset": "sst5", "data_root": root, "text_model": str(tiny_bert), "device": "cpu"}
    with pytest.raises(ValueError, match="aug_types must be 1-2 for text"):
        SentenceTrainer(TrainConfig(**base, aug_types=3), progress=False)
    with pytest.raises(ValueError, match="joint_views does not apply to text"):
        SentenceTrainer(TrainConfig(**base, joint_views=True), progress=False)


def test_supcon_sees_binarised_labels_and_eda_views(tmp_path: Path, tiny_bert: Path) -> None:
    root = str(write_sst5(tmp_path / "fine"))
    config = TrainConfig(
        dataset="sst5", data_root=root, text_model=str(tiny_bert), device="cpu",
        framework="supervised", loss="supcon", binarize_threshold=3, aug_types=1,
        epochs=1, batch_size=8, max_length=16,
    )  # fmt: skip
    trainer = SentenceTrainer(config, progress=False)
    assert trainer.config == config and config.joint_views is False  # recorded as given
    assert trainer.train_y.tolist() == [float(i % 5 >= 3) for i in range(24)]
    assert isinstance(trainer.model.encoder, SentenceFeatures)
    seen: list[list[str]] = []
    forward = trainer.model.encoder.forward
    trainer.model.encoder.forward = lambda s: seen.append(list(s)) or forward(s)  # type: ignore
    trainer.train_epoch()
    assert len(seen) == 2 * 3  # two views per batch, 24 // 8 batches
    words = {tuple(sorted(s.split())) for s in SENTENCES}
    assert all(tuple(sorted(v.split())) in words for batch in seen for v in batch)  # swaps
    assert any(v not in SENTENCES for batch in seen for v in batch)  # ... that moved words


def test_train_command_on_sst5_and_resume(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = str(write_sst5(tmp_path / "fine"))
    out = tmp_path / "run"
    argv = ["train", "--dataset", "sst5", "--data-root", root, "--text-model", str(tiny_bert),
            "--framework", "supervised", "--loss", "lascon", "--batch-size", "8", "--max-length",
            "16", "--device", "cpu", "--no-progress", "--out", str(out)]  # fmt: skip
    assert main([*argv, "--epochs", "2"]) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["task"] == "regression" and final["epochs"] == 2
    for key in ("head_mae", "head_pearson", "label_alignment", "alignment", "uniformity"):
        assert torch.isfinite(torch.tensor(final[key])), key
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records] == [1, 2] and "knn_accuracy" not in records[0]
    assert main([*argv, "--epochs", "3", "--resume"]) == 0  # continues from the checkpoint
    assert json.loads((out / "final.json").read_text())["epochs"] == 3
    assert main(["export", str(out), "--out", str(tmp_path / "model")]) == 0
    exported = SentenceEncoder.from_pretrained(tmp_path / "model").model.state_dict()
    trained = torch.load(out / "checkpoint.pt", weights_only=True)["model"]
    prefix = "encoder.encoder.model."
    assert {prefix + k for k in exported} == {k for k in trained if k.startswith(prefix)}
    assert all(torch.equal(v, trained[prefix + k]) for k, v in exported.items())
    capsys.readouterr()
    bad = [*argv[:4], str(tmp_path), *argv[5:-1], str(tmp_path / "x"), "--epochs", "1"]
    assert main(bad) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sst5 expects" in err[0] and "sentiment-train" in err[0]


def test_a_text_study_skips_its_finished_runs(tmp_path: Path, tiny_bert: Path) -> None:
    base = {"dataset": "sst5", "data_root": str(write_sst5(tmp_path / "fine")), "epochs": 1,
            "text_model": str(tiny_bert), "batch_size": 8, "max_length": 16}  # fmt: skip
    spec = {"name": "t", "paper": "P", "table": "T", "claim": "c", "out": str(tmp_path / "o"),
            "runs_dir": str(tmp_path / "runs"), "base": base, "baseline": "lascon",
            "seeds": [0], "min_seeds": 1, "metric": "head_mae", "better": "lower",
            "arms": [{"label": "lascon", "framework": "supervised", "loss": "lascon"},
                     {"label": "simclr", "loss": "ntxent"}]}  # fmt: skip
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    study = load_study(tmp_path / "s.yaml")
    assert sorted(run_study(study, log=False).finished) == ["lascon seed 0", "simclr seed 0"]
    # the configs recorded by the runs are the study's own: a second pass finds them done
    assert sorted(run_study(study, log=False).skipped) == ["lascon seed 0", "simclr seed 0"]
