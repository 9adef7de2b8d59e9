"""LASCon's text task on SST-5: reader, labels the loss sees, the labelled / augmented
sentence loop, the end-to-end run and the command line, on fixtures written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

from contrastkit import losses
from contrastkit.cli import main
from contrastkit.text import SimCSEConfig, train_simcse, two_view_loss
from contrastkit.text.eda import EDAAugment
from contrastkit.text.encoder import SentenceEncoder
from contrastkit.text.senteval.readers import read_sst_fine
from contrastkit.text.sst5 import SST5Config, load_sst5, loss_labels, run_sst5, seeded_subset

from .conftest import SENTENCES


def write_sst5(root: Path, n_train: int = 24) -> Path:
    """SentEval's SST/fine layout: ``LABEL sentence`` lines, labels 0-4."""
    root.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("dev", 6), ("test", 12)):
        lines = [f"{i % 5} {SENTENCES[i % len(SENTENCES)]}" for i in range(n)]
        (root / f"sentiment-{split}").write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return root


def test_reader_parses_label_first_lines(tmp_path: Path) -> None:
    root = write_sst5(tmp_path / "fine")
    (root / "sentiment-dev").write_text("3  a   man plays\r\n0 the dog\n", encoding="utf-8")
    data = read_sst_fine(root)
    assert len(data["train"]) == 24 and len(data["test"]) == 12  # blank last line skipped
    assert data["dev"].x == ["a man plays", "the dog"] and data["dev"].y == [3, 0]
    assert data["train"].y[:6] == [0, 1, 2, 3, 4, 0]
    (root / "sentiment-dev").write_text("a man plays\t3\n", encoding="utf-8")  # SST-2 layout
    with pytest.raises(ValueError, match="sentiment-dev line 1: expected 'LABEL sentence'"):
        read_sst_fine(root)
    (root / "sentiment-dev").write_text("7 a man plays\n", encoding="utf-8")
    with pytest.raises(ValueError, match="LABEL in 0-4"):
        read_sst_fine(root)


def test_missing_files_name_what_is_expected(tmp_path: Path) -> None:
    root = write_sst5(tmp_path / "fine")
    (root / "sentiment-test").unlink()
    with pytest.raises(FileNotFoundError, match=r"missing: sentiment-test$"):
        load_sst5(root)


def test_labels_the_loss_sees() -> None:
    y = torch.tensor([0, 1, 2, 3, 4])
    assert loss_labels("ntxent", y, None) is None
    assert loss_labels("lascon", y, None).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert loss_labels("supcon", y, 3).tolist() == [0, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="needs a labelled loss"):
        loss_labels("ntxent", y, 3)
    with pytest.raises(ValueError, match="every sentence in one class"):
        loss_labels("supcon", y, 9)


def test_seeded_subset() -> None:
    a = seeded_subset(100, 10, 1)
    assert a == seeded_subset(100, 10, 1) and a != seeded_subset(100, 10, 2)
    assert len(set(a)) == 10 and a == sorted(a)
    assert seeded_subset(5, None, 0) == seeded_subset(5, 9, 0) == [0, 1, 2, 3, 4]


def test_simclr_layout_is_ntxent_over_2n_views() -> None:
    g = torch.Generator().manual_seed(0)
    h1, h2 = torch.randn(6, 8, generator=g), torch.randn(6, 8, generator=g)
    ntxent = losses.get("ntxent", temperature=0.2)
    z = nn.functional.normalize(torch.cat([h1, h2]), dim=1)
    sim = (z @ z.T / 0.2).fill_diagonal_(float("-inf"))
    target = torch.cat([torch.arange(6, 12), torch.arange(6)])
    expected = nn.functional.cross_entropy(sim, target)  # SimCLR's 2N NT-Xent, LASCon Eq. 1
    assert torch.allclose(two_view_loss(ntxent, h1, h2, layout="simclr"), expected, atol=1e-6)
    assert not torch.allclose(two_view_loss(ntxent, h1, h2), expected, atol=1e-3)  # SimCSE's
    lascon = losses.get("lascon")
    y = torch.tensor([0.0, 1, 2, 3, 4, 0])
    assert torch.allclose(two_view_loss(lascon, h1, h2, y, "simclr"), lascon(h1, h2, y))
    with pytest.raises(ValueError, match="layout must be one of simcse, simclr"):
        two_view_loss(ntxent, h1, h2, layout="moco")


class RecordingLoss(nn.Module):
    """A labelled loss that records what the loop gives it (and is differentiable)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Tensor] = []

    def forward(self, h1: Tensor, h2: Tensor, labels: Tensor) -> Tensor:
        self.seen.append(labels.clone())
        return (h1 - h2).pow(2).mean() + 0.0 * labels.sum()


def test_loop_gives_the_batch_labels_and_augmented_views(tiny_bert: Path) -> None:
    sentences = [s for s in SENTENCES] * 2
    labels = torch.arange(len(sentences), dtype=torch.float64)
    calls: list[list[str]] = []
    swap = EDAAugment("swap", 0.3)

    def augment(batch: list[str], generator: torch.Generator) -> list[str]:
        calls.append(list(batch))
        return swap(batch, generator)

    def run() -> RecordingLoss:
        encoder = SentenceEncoder.from_pretrained(tiny_bert)
        loss = RecordingLoss()
        cfg = SimCSEConfig(batch_size=4, max_steps=3, device="cpu", seed=5)
        train_simcse(
            encoder, loss, sentences, None, cfg, progress=False, log=lambda _: None,
            labels=labels, augment=augment, layout="simclr",
        )  # fmt: skip
        return loss

    first = run()
    assert len(first.seen) == 3 and len(calls) == 3
    for batch, seen in zip(calls, first.seen, strict=True):
        assert len(batch) == 8 and batch[:4] == batch[4:]  # the batch twice: two views
        assert [sentences.index(s) % 12 for s in batch[:4]] == [int(v) % 12 for v in seen]
    views_first = list(calls)
    calls.clear()
    run()
    assert calls == views_first  # same seed: the same batches (the views are seeded too)
    with pytest.raises(ValueError, match="one entry per sentence"):
        train_simcse(
            SentenceEncoder.from_pretrained(tiny_bert), RecordingLoss(), sentences, None,
            SimCSEConfig(batch_size=4, max_steps=1, device="cpu"), progress=False,
            labels=labels[:5],
        )  # fmt: skip


def weights(encoder: SentenceEncoder) -> Tensor:
    return torch.cat([p.detach().flatten() for p in encoder.parameters()])


@pytest.mark.parametrize("zero_shot", [False, True])
def test_run_trains_and_scores_heads(tmp_path: Path, tiny_bert: Path, zero_shot: bool) -> None:
    root = write_sst5(tmp_path / "fine")
    encoder = SentenceEncoder.from_pretrained(tiny_bert)
    before = weights(encoder)
    loss = None if zero_shot else losses.get("lascon", similarity="tanh", c=2.0, variant="in")
    cfg = SimCSEConfig(batch_size=4, max_steps=2, lr=1e-3, device="cpu", seed=1)
    task = SST5Config(str(root), train_size=16, head_train_size=20, zero_shot=zero_shot)
    result = run_sst5(encoder, loss, "lascon", cfg, task, tmp_path / "run", progress=False)
    written = json.loads((tmp_path / "run" / "sst5.json").read_text())
    assert written["test"] == result["test"]
    assert set(result["test"]) == {"accuracy", "mae", "pearson", "spearman"}
    assert all(torch.isfinite(torch.tensor(v)) for v in result["test"].values())
    assert 0.0 <= result["test"]["accuracy"] <= 1.0 and result["test_sentences"] == 12
    assert result["head_train_sentences"] == 20
    changed = not torch.equal(before, weights(encoder))
    assert changed != zero_shot
    assert result["steps"] == (0 if zero_shot else 2)
    if not zero_shot:
        assert result["loss_args"]["variant"] == "in" and result["train_sentences"] == 16


def test_command_runs_supcon_and_reports_bad_data(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_sst5(tmp_path / "fine")
    argv = ["simcse", "--task", "sst5", "--model", str(tiny_bert), "--device", "cpu",
            "--batch-size", "4", "--max-steps", "1", "--head-train-size", "20",
            "--threads", "1", "--no-progress"]  # fmt: skip
    out = tmp_path / "supcon"
    code = main([*argv, "--data", str(root), "--loss", "supcon", "--binarize-threshold", "3",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "SST-5 test (12 sentences): accuracy" in printed
    assert json.loads((out / "sst5.json").read_text())["sst5"]["binarize_threshold"] == 3
    assert main([*argv, "--data", str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("contrastkit: error: --data")
    assert "missing: sentiment-train, sentiment-dev, sentiment-test" in err[0]
    assert not (tmp_path / "x").exists()  # failed before creating the run folder
    code = main([*argv, "--data", str(root), "--loss", "mhe", "--binarize-threshold", "3",
                 "--out", str(tmp_path / "y")])  # fmt: skip
    assert code == 2 and "needs a labelled loss" in capsys.readouterr().err
    assert main([*argv, "--out", str(tmp_path / "z")]) == 2
    assert "--task sst5 needs --data" in capsys.readouterr().err
