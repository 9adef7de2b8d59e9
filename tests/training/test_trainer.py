"""Trainer: run files, exact resume, validation of configs and run directories."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from contrastkit.training import CHECKPOINT, FINAL, METRICS, TIMING_KEYS, TrainConfig, Trainer
from contrastkit.training import trainer as trainer_module


def tiny(**kw: object) -> TrainConfig:
    values = dict(
        dataset="digits",
        epochs=4,
        batch_size=128,
        feature_dim=16,
        width=4,
        proj_dim=16,
        threads=1,
        knn_k=50,
        knn_small_k=5,
    )
    values.update(kw)
    return TrainConfig(**values)


def records(path: Path) -> list[dict]:
    return [
        {k: v for k, v in json.loads(x).items() if k not in TIMING_KEYS}
        for x in (path / METRICS).read_text().splitlines()
    ]


@pytest.mark.parametrize(
    ("framework", "loss", "accum"),
    # grad_accum 2 over epochs of 11 batches: each epoch ends on a window of one pass
    [("simclr", "macl", 1), ("moco", "infonce", 1), ("simclr", "ntxent", 2)],
)
def test_two_epochs_plus_resume_equals_four_straight(
    tmp_path: Path, framework: str, loss: str, accum: int
) -> None:
    settings = {"framework": framework, "loss": loss, "queue_size": 256, "grad_accum": accum}
    straight = Trainer(tiny(**settings), tmp_path / "a", False)
    final_a = straight.fit()
    # with accumulation, stopped after epoch 1, whose last window the trainer closed early:
    # the straight run must not carry that window's gradient into epoch 2 either
    Trainer(tiny(**settings, epochs=1 if accum > 1 else 2), tmp_path / "b", False).fit()
    resumed = Trainer(tiny(**settings), tmp_path / "b", False)
    final_b = resumed.fit(resume=True)

    state_a = straight.model.state_dict()
    state_b = resumed.model.state_dict()
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        assert torch.equal(state_a[key], state_b[key]), key
    assert records(tmp_path / "a") == records(tmp_path / "b")
    assert len(records(tmp_path / "b")) == 4
    strip = lambda f: {k: v for k, v in f.items() if k not in TIMING_KEYS}  # noqa: E731
    assert strip(final_a) == strip(final_b)
    assert strip(json.loads((tmp_path / "b" / FINAL).read_text())) == strip(final_a)


def test_run_files_and_checkpoint_contents(tmp_path: Path) -> None:
    final = Trainer(tiny(loss="macl", epochs=2, eval_every=2), tmp_path, False).fit()
    for key in ("knn_accuracy", "knn_accuracy_k5", "linear_accuracy", "alignment", "uniformity"):
        assert key in final and isinstance(final[key], float)
    assert final["seed"] == 0 and final["config"]["loss"] == "macl"
    assert 0.5 < final["knn_accuracy"] <= 1.0  # digits are easy even for a tiny encoder
    recs = records(tmp_path)
    assert [r["epoch"] for r in recs] == [1, 2]
    assert "knn_accuracy" not in recs[0] and "knn_accuracy" in recs[1]  # eval_every = 2
    steps = 1437 // 128
    assert len(recs[0]["temperature_steps"]) == steps  # MACL's τ_a per step
    assert recs[0]["temperature"] == pytest.approx(sum(recs[0]["temperature_steps"]) / steps)
    state = torch.load(tmp_path / CHECKPOINT, weights_only=True)  # plain tensors and dicts only
    assert state["epoch"] == 2 and set(state) >= {"model", "optimizer", "torch_rng", "config"}


def test_evaluation_is_timed_apart_from_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``eval_time_s`` covers an epoch's evaluation (about 0 s when it does not evaluate),
    ``final_eval_time_s`` the final one, ``train_time_s`` neither: on a fake clock that
    moves 1 ms a reading, 1 s a training batch and 10 s a feature extraction."""
    clock = [0.0]

    def perf_counter() -> float:
        clock[0] += 0.001
        return clock[0]

    def slow_features(self: Trainer) -> tuple[torch.Tensor, torch.Tensor]:
        clock[0] += 10.0
        return features(self)

    def slow_batch(self: Trainer, *args: object) -> None:
        clock[0] += 1.0

    features = Trainer.features
    monkeypatch.setattr(trainer_module, "time", SimpleNamespace(perf_counter=perf_counter))
    monkeypatch.setattr(Trainer, "features", slow_features)
    monkeypatch.setattr(Trainer, "after_batch", slow_batch)
    final = Trainer(tiny(epochs=2, eval_every=2), tmp_path, False).fit()
    first, second = (json.loads(x) for x in (tmp_path / METRICS).read_text().splitlines())
    assert first["eval_time_s"] < 0.01 and 10 < second["eval_time_s"] < 10.01
    assert 10 < final["final_eval_time_s"] < 10.1
    assert 22 < final["train_time_s"] < 22.1  # 2 epochs of 1437 // 128 = 11 batches


def test_run_directory_guards(tmp_path: Path) -> None:
    Trainer(tiny(epochs=1), tmp_path, False).fit()
    with pytest.raises(ValueError, match="already holds a run"):
        Trainer(tiny(epochs=2), tmp_path, False).fit()
    with pytest.raises(ValueError, match="differs in: lr"):
        Trainer(tiny(epochs=2, lr=0.5), tmp_path, False).fit(resume=True)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        Trainer(tiny(epochs=2), tmp_path / "empty", False).fit(resume=True)


def test_a_run_resumes_on_another_machine_with_its_own_execution_settings(
    tmp_path: Path,
) -> None:
    Trainer(tiny(epochs=1), tmp_path, False).fit()
    moved = tiny(epochs=2, channels_last=True, workers=0, device="cpu")
    final = Trainer(moved, tmp_path, False).fit(resume=True)
    assert final["epochs"] == 2 and [r["epoch"] for r in records(tmp_path)] == [1, 2]
    assert final["config"]["channels_last"] is True


def test_batch_larger_than_dataset_is_refused() -> None:
    with pytest.raises(ValueError, match="exceeds the 1437 training samples"):
        Trainer(tiny(batch_size=5000), None, False)


def test_epoch_steps_trains_the_first_batches_of_each_epoch() -> None:
    steps: list[int] = []

    class Counting(Trainer):
        def after_batch(self, step: int, loss: torch.Tensor, step_logs: dict) -> None:
            steps.append(step)

    trainer = Counting(tiny(epochs=2, epoch_steps=3, schedule="linear"), None, False)
    trainer.fit()
    assert steps == [1, 2, 3, 4, 5, 6]  # counted over the run; 11 full batches per epoch
    assert trainer.scheduler.get_last_lr() == [0.0]  # the linear decay ends at step 6
    with pytest.raises(ValueError, match="epoch_steps 12 exceeds the 11 full batches"):
        Trainer(tiny(epoch_steps=12), None, False)


def test_encoding_marks_a_graph_step_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frozen features come in chunks; each is a step for CUDA graphs (the engine's
    ``begin_step``), so a replay may reuse the copied chunk's memory instead of recording
    one graph per chunk; the features are those of one pass."""
    trainer = Trainer(tiny(epochs=1), None, False)
    marks: list[int] = []
    monkeypatch.setattr(trainer.engine, "begin_step", lambda: marks.append(1))
    x = trainer.data.x_test[:10]
    chunked = trainer.encode(x, batch_size=4)
    assert len(marks) == 3  # 4 + 4 + 2 rows
    torch.testing.assert_close(chunked, trainer.encode(x, batch_size=10))
