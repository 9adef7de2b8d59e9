"""A SimCSE run scored on SentEval after training (``senteval`` of the run config): the
numbers ``final.json`` gets, the files beside the model, and the errors raised before
any training."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.text import senteval as senteval_package
from contrastkit.text.senteval import Layout, encoder_embedder, run_senteval
from contrastkit.training import TrainConfig

from .fixtures import write_downstream


def simcse_argv(
    tmp_path: Path, model: Path, sentences: list[str], command: str = "simcse"
) -> list[str]:
    """``contrastkit simcse`` (or ``train --framework simcse``) on the fixture sentences:
    one epoch of 2 batches of 4."""
    train = tmp_path / "train.txt"
    train.write_text("\n".join(sentences) + "\n")
    dev = tmp_path / "dev.tsv"
    pairs = zip(sentences[0::2], sentences[1::2], [5, 1, 4, 0.5, 3, 2], strict=True)
    dev.write_text("\n".join(f"{a}\t{b}\t{y}" for a, b, y in pairs) + "\n")
    common = ["--sts-dev", str(dev), "--sts-format", "tsv", "--batch-size", "4",
              "--max-length", "12", "--epochs", "1", "--device", "cpu", "--no-progress",
              "--threads", "1"]  # fmt: skip
    if command == "train":
        return ["train", "--framework", "simcse", "--loss", "infonce", "--dataset",
                "sentences", "--data-root", str(train), "--text-model", str(model),
                "--epoch-steps", "2", *common]  # fmt: skip
    return ["simcse", "--model", str(model), "--train-file", str(train), "--max-steps", "2",
            "--eval-every", "1", *common]  # fmt: skip


def test_a_simcse_run_scores_its_selected_model_on_senteval(
    tmp_path: Path, tiny_bert: Path, sentences: list[str]
) -> None:
    root = write_downstream(tmp_path / "downstream", n=20)
    tasks = "STS12,STS16,SICKRelatedness,MR,MRPC"
    run = tmp_path / "run"
    argv = simcse_argv(tmp_path, tiny_bert, sentences)
    assert main([*argv, "--out", str(run), "--senteval", str(root), "--senteval-tasks", tasks]) == 0
    final = json.loads((run / "final.json").read_text())
    saved = json.loads((run / "senteval.json").read_text())
    assert set(saved) >= {"STS12", "STS16", "SICKRelatedness", "MR", "MRPC", "encoder"}
    scores = {t: final[f"senteval_{t}"] for t in tasks.split(",")}
    assert scores["STS12"] == saved["STS12"]["spearman"]["all"]
    assert scores["SICKRelatedness"] == saved["SICKRelatedness"]["test"]["spearman"]
    assert scores["MR"] == saved["MR"]["acc"]
    sts = [scores[t] for t in ("STS12", "STS16", "SICKRelatedness")]
    assert final["senteval_sts_avg"] == pytest.approx(math.fsum(sts) / 3)
    assert final["senteval_transfer_avg"] == pytest.approx((scores["MR"] + scores["MRPC"]) / 2)
    assert (final["senteval_sts_avg_tasks"], final["senteval_transfer_avg_tasks"]) == (3, 2)
    # the scored model is the selected one, in the run's precision: rescoring best/ agrees
    embed, _ = encoder_embedder(run / "best", device="cpu")
    again = run_senteval(Layout(root), embed, tasks=("STS16",), log=lambda _: None)
    assert again.score("STS16") == pytest.approx(scores["STS16"], abs=1e-9)
    assert "| Model | MR | CR |" in (run / "senteval.md").read_text()
    # the epoch's record carries the dev score at its end: a study's convergence curve
    history = json.loads((run / "history.json").read_text())
    record = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert record["sts_dev_spearman"] == history["evals"][-1]["spearman"]
    assert history["evals"][-1]["step"] == 2


def test_sts_b_without_a_test_split_is_left_out_of_the_average(
    tmp_path: Path, tiny_bert: Path, sentences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_downstream(tmp_path / "downstream", n=4)
    (root / "STS" / "STSBenchmark" / "sts-test.csv").unlink()  # held out, as here
    run = tmp_path / "run"
    argv = simcse_argv(tmp_path, tiny_bert, sentences)
    tasks = ["--senteval-tasks", "STS13,STSBenchmark", "--senteval-jobs", "3"]
    fittings = []

    def spy(*args: object, **kwargs: object) -> object:
        fittings.append(kwargs["fitting"])
        return run_senteval(*args, **kwargs)

    monkeypatch.setattr(senteval_package, "run_senteval", spy)  # imported at scoring time
    classifier = ["--senteval-classifier", "pytorch"]
    assert main([*argv, "--out", str(run), "--senteval", str(root), *tasks, *classifier]) == 0
    assert [(f.kind, f.jobs, f.device) for f in fittings] == [("pytorch", 3, "cpu")]
    final = json.loads((run / "final.json").read_text())
    assert "senteval_STSBenchmark" not in final and "senteval_transfer_avg" not in final
    assert final["senteval_sts_avg"] == final["senteval_STS13"]


@pytest.mark.parametrize("command", ["simcse", "train"])
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--senteval-tasks", "STS12,STS99"], "senteval_tasks: unknown ['STS99']"),
        (["--senteval-tasks", "STS12,CR"], "senteval: no task folder"),
        (["--senteval-tasks", "STS12", "--senteval", "nowhere"], "'nowhere' is not a folder"),
    ],
)
def test_bad_senteval_options_fail_before_the_run_directory_is_made(
    tmp_path: Path,
    tiny_bert: Path,
    sentences: list[str],
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
    command: str,
) -> None:
    root = write_downstream(tmp_path / "downstream", n=4)
    for folder in (root / "CR").iterdir():
        folder.unlink()
    (root / "CR").rmdir()
    run = tmp_path / "run"
    argv = [*simcse_argv(tmp_path, tiny_bert, sentences, command), "--out", str(run)]
    assert main([*argv, "--senteval", str(root), *extra]) == 2  # a later --senteval wins
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not run.exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"senteval": "d"}, "senteval applies to framework simcse, not 'simclr'"),
        ({"sts_dev": "d.tsv"}, "sts_dev applies to framework simcse, not 'simclr'"),
        ({"framework": "simcse", "senteval_tasks": "MR"}, "senteval_tasks needs senteval"),
        ({"framework": "simcse", "senteval_jobs": 2}, "senteval_jobs needs senteval"),
        ({"framework": "simcse", "senteval_jobs": 0}, "senteval_jobs must be a positive"),
        ({"framework": "simcse", "senteval_classifier": "pytorch"}, "senteval_classifier needs"),
        ({"framework": "simcse", "senteval_classifier": "svm"}, "must be sklearn or pytorch"),
    ],
)
def test_senteval_config_validation(kwargs: dict, message: str) -> None:
    values = {"framework": "simclr", "loss": "infonce", "dataset": "sentences", **kwargs}
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        TrainConfig(**values)
