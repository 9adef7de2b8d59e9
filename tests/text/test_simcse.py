"""SimCSE: the cross-view loss layout against float64 loop references and the gradient of
the gradient-paradigm paper's Eq. (1), loss construction, and SimCSETrainer on the shared
loop (dev selection, resume, errors, a study of SimCSE arms) on a tiny BERT."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from torch import Tensor, nn

from contrastkit import losses
from contrastkit.frameworks import SimCLR, SimCSE
from contrastkit.losses import InfoNCE
from contrastkit.study import load_study, run_study, write_report
from contrastkit.text import (
    SimCSETrainer,
    sentence_losses,
    sts_spearman,
    two_view_loss,
)
from contrastkit.text.encoder import SentenceEncoder
from contrastkit.training import TrainConfig, trainer_class


def unit_views(n: int = 6, d: int = 5, seed: int = 0) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    h1 = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    h2 = torch.nn.functional.normalize(
        h1 + 0.5 * torch.randn(n, d, generator=g, dtype=torch.float64), dim=1
    )
    return h1, h2


def simcse_infonce_loop(h1: Tensor, h2: Tensor, tau: float) -> float:
    """SimCSE's loss: mean_i -log(e^{s_ii/τ} / Σ_j e^{s_ij/τ}), s = cos(h1_i, h2_j)."""
    n = h1.shape[0]
    total = 0.0
    for i in range(n):
        sims = [float(h1[i] @ h2[j]) / float(h1[i].norm() * h2[j].norm()) for j in range(n)]
        total += -sims[i] / tau + math.log(sum(math.exp(s / tau) for s in sims))
    return total / n


def paper_eq1_gradient(h1: Tensor, h2: Tensor, i: int, tau: float) -> Tensor:
    """Gradient-paradigm paper Eq. (1): ∂L_i/∂h_i for unit vectors (loop form)."""
    num = torch.zeros_like(h1[i])
    den = 0.0
    for k in range(h1.shape[0]):
        den += math.exp(float(h1[i] @ h2[k]) / tau)
    for j in range(h1.shape[0]):
        if j != i:
            num += math.exp(float(h1[i] @ h2[j]) / tau) * (h2[j] - h2[i])
    return num / (tau * den)


def test_infonce_is_simcse_cross_view_loss() -> None:
    h1, h2 = unit_views()
    loss = SimCSE.make_loss("infonce")
    assert loss.temperature == 0.05  # SimCSE's τ
    value = two_view_loss(loss, 3.0 * h1, 0.5 * h2)  # scale must not matter (cosine)
    assert float(value) == pytest.approx(simcse_infonce_loop(h1, h2, 0.05), rel=1e-10)


@pytest.mark.parametrize("name", ["infonce", "macl"])
def test_gradient_matches_paper_eq1(name: str) -> None:
    h1, h2 = unit_views(seed=1)
    x = h1.clone().requires_grad_(True)
    loss = SimCSE.make_loss(name)  # MACL: no reweighting, so its gradient is InfoNCE's at τ_a
    (two_view_loss(loss, x, h2) * h1.shape[0]).backward()  # sum over anchors
    tau = loss.last_temperature if name == "macl" else 0.05
    assert x.grad is not None
    for i in range(h1.shape[0]):
        raw = paper_eq1_gradient(h1, h2, i, tau)
        # normalisation inside the loss projects the gradient onto the tangent space at h_i
        tangent = raw - (raw @ h1[i]) * h1[i]
        assert torch.allclose(x.grad[i], tangent, atol=1e-8), i


def test_macl_uses_the_cross_view_layout_with_its_sentence_setting() -> None:
    h1, h2 = unit_views(seed=2)
    loss = SimCSE.make_loss("macl")
    assert (loss.temperature, loss.alpha, loss.a0, loss.reweight) == (0.05, 2.0, 0.8, False)
    value = two_view_loss(loss, h1, h2)
    align = sum(float(h1[i] @ h2[i]) for i in range(h1.shape[0])) / h1.shape[0]
    tau_a = max(0.05 * (1 + 2.0 * (align - 0.8)), 0.005)  # MACL Eq. (6)-(7), floored
    assert loss.last_temperature == pytest.approx(tau_a, rel=1e-10)
    assert float(value) == pytest.approx(simcse_infonce_loop(h1, h2, tau_a), rel=1e-10)
    # not the 2N NT-Xent layout of MACL's own forward
    assert float(loss(h1, h2)) != pytest.approx(float(value), rel=1e-3)


def test_losses_without_similarity_level_get_both_views() -> None:
    calls: list[tuple[Tensor, Tensor]] = []

    class Recorder(nn.Module):
        def forward(self, a: Tensor, b: Tensor) -> Tensor:
            calls.append((a, b))
            return (a - 2 * b).sum()

    h1, h2 = unit_views()
    assert float(two_view_loss(Recorder(), h1, h2)) == pytest.approx(float((h1 - 2 * h2).sum()))
    assert calls[0][0] is h1 and calls[0][1] is h2


def test_the_layout_is_the_registrys_similarity_level() -> None:
    class Sharper(InfoNCE):  # a user's subclass keeps its registered base's layout
        pass

    assert losses.info_of(Sharper()) is losses.info("infonce")
    assert losses.info_of(InfoNCE()).similarity_level and not losses.info("mmhe").similarity_level
    assert losses.info_of(nn.Linear(2, 2)) is None
    h1, h2 = unit_views()
    value = two_view_loss(Sharper(temperature=0.05), h1, h2)
    assert float(value) == pytest.approx(simcse_infonce_loop(h1, h2, 0.05), rel=1e-10)


def test_make_loss_defaults_overrides_and_errors() -> None:
    macl = SimCSE.make_loss("macl", {"alpha": 1.0})
    assert (macl.alpha, macl.temperature, macl.a0, macl.reweight) == (1.0, 0.05, 0.8, False)
    # the sentence settings are the simcse framework's, whichever command builds it
    enc = nn.Linear(3, 3)
    enc.feature_dim = 3  # type: ignore[assignment]
    assert SimCSE(enc, "infonce").loss.temperature == 0.05
    assert SimCLR(enc, "macl").loss.temperature == losses.get("macl").temperature != 0.05
    assert SimCSE.make_loss("ntxent").temperature == losses.get("ntxent").temperature
    assert "infonce" in sentence_losses() and "macl" in sentence_losses()
    assert "supcon" not in sentence_losses()
    with pytest.raises(ValueError, match="framework 'simcse' cannot train with loss 'supcon'"):
        SimCSE.make_loss("supcon")
    with pytest.raises(ValueError, match="unknown loss"):
        SimCSE.make_loss("nope")
    with pytest.raises(ValueError, match="loss 'macl' has no argument 'gamma'"):
        SimCSE.make_loss("macl", {"gamma": 1})


def simcse_config(
    tmp_path: Path, tiny_bert: Path, sentences: list[str], **kw: object
) -> TrainConfig:
    """A SimCSE run of the shared loop on the fixture sentences, STS pairs made of them."""
    train = tmp_path / "train.txt"
    train.write_text("\n".join(sentences) + "\n")
    dev = tmp_path / "dev.tsv"
    scores = [5.0, 1.0, 4.0, 0.5, 3.0, 2.0]
    rows = [
        f"{a}\t{b}\t{y}" for a, b, y in zip(sentences[0::2], sentences[1::2], scores, strict=True)
    ]
    dev.write_text("\n".join(rows) + "\n")
    values: dict[str, object] = dict(
        framework="simcse", loss="macl", dataset="sentences", data_root=str(train),
        text_model=str(tiny_bert), pooling="cls", mlp_head=True, dropout=0.1, max_length=12,
        sts_dev=str(dev), sts_format="tsv", eval_steps=2, batch_size=4, epochs=2,
        epoch_steps=2, lr=1e-3, optimizer="adamw", schedule="linear", clip_grad=1.0,
        device="cpu",
    )  # fmt: skip
    return TrainConfig(**{**values, **kw})


def test_simcse_trains_on_the_shared_loop(
    tmp_path: Path, tiny_bert: Path, sentences: list[str]
) -> None:
    config = simcse_config(tmp_path, tiny_bert, sentences)
    assert trainer_class(config) is SimCSETrainer
    trainer = SimCSETrainer(config, tmp_path / "run", progress=False)
    before = {k: v.clone() for k, v in trainer.model.encoder.state_dict().items()}
    final = trainer.fit()
    history = trainer.log
    # epoch_steps caps each epoch: 2 epochs of 2 batches; dev before, every 2 steps, last
    assert [e["step"] for e in history.evals] == [0, 2, 4]
    assert history.steps == 4 and len(history.train_loss) == len(history.temperature) == 4
    assert all(math.isfinite(v) for v in history.train_loss)
    after = trainer.model.encoder.state_dict()
    assert any(not torch.equal(before[k], v) for k, v in after.items())
    # SimCSE's selection: among the evaluations after training steps, never the start
    assert history.best_spearman == max(e["spearman"] for e in history.evals[1:])
    assert history.best_step in (2, 4)
    assert final["sts_dev_spearman_best"] == history.best_spearman and final["steps"] == 4
    # the saved best model reproduces its recorded score, without the training-only head
    best = SentenceEncoder.from_pretrained(tmp_path / "run" / "best")
    assert best.pooling == "cls" and best.head is None
    dev = trainer.dev
    assert sts_spearman(best, dev)["spearman"] == pytest.approx(history.best_spearman, abs=1e-6)
    saved = json.loads((tmp_path / "run" / "history.json").read_text())
    assert saved["best_step"] == history.best_step and saved["config"]["batch_size"] == 4
    assert len(saved["diagnostics"]["hardest_share"]) == 4


def test_a_step_between_evaluations_reads_nothing_on_the_host(
    tmp_path: Path, tiny_bert: Path, sentences: list[str]
) -> None:
    """The step's loss, MACL's τ and the §3.2 geometry stay device tensors until the
    epoch's end reads them (``SimCSEHistory.flush``); they read ``.item()`` at every step."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Reads(TorchDispatchMode):
        count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
            Reads.count += str(func) == "aten._local_scalar_dense.default"
            return func(*args, **(kwargs or {}))

    config = simcse_config(tmp_path, tiny_bert, sentences, epochs=1)  # dev at steps 0, 2
    trainer = SimCSETrainer(config, None, progress=False)
    original, reads = trainer.after_batch, []

    def after_batch(step: int, loss: Tensor, values: dict) -> None:
        before = Reads.count
        with Reads():
            original(step, loss, values)
        reads.append(Reads.count - before)

    trainer.after_batch = after_batch
    trainer.fit()
    assert reads[0] == 0 and reads[1] > 0  # step 1; step 2 evaluates on the dev set
    history = trainer.log
    assert all(type(v) is float for v in [*history.train_loss, *history.temperature])
    assert all(type(v) is float for v in history.diagnostics["pos_cos"])


def test_every_epoch_record_has_its_final_dev_score_and_mean_geometry(
    tmp_path: Path, tiny_bert: Path, sentences: list[str]
) -> None:
    config = simcse_config(tmp_path, tiny_bert, sentences, eval_steps=None, epochs=3)
    trainer = SimCSETrainer(config, tmp_path / "run", progress=False)
    trainer.fit()
    assert [e["step"] for e in trainer.log.evals] == [0, 2, 4, 6]  # each epoch's end
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert [r["sts_dev_spearman"] for r in records] == [
        e["spearman"] for e in trainer.log.evals[1:]
    ]
    # and the mean §3.2 geometry of its own two steps
    for k, record in enumerate(records):
        for key in ("pos_cos", "neg_angle_mean", "hardest_share"):
            steps = trainer.log.diagnostics[key][2 * k : 2 * k + 2]
            assert record[key] == pytest.approx(sum(steps) / 2, rel=1e-12)


# one worker compiles at a time: the inductor cache on disk is shared by the xdist workers
@pytest.mark.xdist_group("inductor")
@pytest.mark.skipif(
    not any(shutil.which(c) for c in ("g++", "c++", "clang++")),
    reason="torch.compile's CPU backend (inductor) needs a C++ compiler; none on PATH",
)
def test_a_compiled_encoder_trains_like_the_eager_one(
    tmp_path: Path, tiny_bert: Path, sentences: list[str]
) -> None:
    # no dropout: compiled graphs draw their own masks, so only then are the views equal
    kw = {"dropout": 0.0, "epochs": 1, "sts_dev": None, "eval_steps": None, "mlp_head": False}
    eager = SimCSETrainer(simcse_config(tmp_path, tiny_bert, sentences, **kw), None, False)
    compiled = SimCSETrainer(
        simcse_config(tmp_path, tiny_bert, sentences, compile=True, **kw), None, False
    )
    assert compiled.model.encoder._compiled_call_impl is not None
    eager.fit()
    compiled.fit()
    assert compiled.log.train_loss == pytest.approx(eager.log.train_loss, rel=1e-5)


def test_a_resumed_simcse_run_replays_the_uninterrupted_one(
    tmp_path: Path, tiny_bert: Path, sentences: list[str]
) -> None:
    # a constant rate: a linear decay is set by the run's length, so it cannot be extended
    two = simcse_config(tmp_path, tiny_bert, sentences, schedule="constant")
    whole = SimCSETrainer(two, tmp_path / "a", progress=False)
    whole.fit()
    one = simcse_config(tmp_path, tiny_bert, sentences, schedule="constant", epochs=1)
    SimCSETrainer(one, tmp_path / "b", progress=False).fit()
    # killed after the history of epoch 2 was written but before its checkpoint: the
    # resumed run cuts the history back to the checkpoint's epoch and replays epoch 2
    (tmp_path / "b" / "history.json").write_text((tmp_path / "a" / "history.json").read_text())
    resumed = SimCSETrainer(two, tmp_path / "b", progress=False)
    resumed.fit(resume=True)
    assert resumed.log.train_loss == pytest.approx(whole.log.train_loss, rel=1e-5)
    assert [e["step"] for e in resumed.log.evals] == [0, 2, 4]
    assert len(resumed.log.diagnostics["pos_cos"]) == len(resumed.log.temperature) == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epoch_steps": 4}, "epoch_steps 4 exceeds the 3 full batches"),
        ({"aug_types": 1}, "aug_types does not apply to simcse"),
        (
            {"framework": "simclr", "loss": "ntxent", "sts_dev": None, "eval_steps": None},
            "sentences has no labelled test split",
        ),
    ],
)
def test_simcse_run_errors(
    tmp_path: Path, tiny_bert: Path, sentences: list[str], kwargs: dict, message: str
) -> None:
    config = simcse_config(tmp_path, tiny_bert, sentences, **kwargs)
    with pytest.raises(ValueError, match=message):
        trainer_class(config)(config, None, progress=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dataset": "digits", "data_root": None, "text_model": None}, "pooling applies to text"),
        ({"pooling": "max"}, "pooling must be cls, mean"),
        ({"dropout": 1.0}, "dropout must be a number in"),
        ({"sts_dev": None}, "eval_steps needs sts_dev"),
        ({"sts_format": "csv"}, "sts_format must be stsb or tsv"),
        ({"epoch_steps": 0}, "epoch_steps must be a positive integer"),
    ],
)
def test_text_config_validation(
    tmp_path: Path, tiny_bert: Path, sentences: list[str], kwargs: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        simcse_config(tmp_path, tiny_bert, sentences, **kwargs)


def test_simcse_arms_are_a_study(tmp_path: Path, tiny_bert: Path, sentences: list[str]) -> None:
    config = simcse_config(tmp_path, tiny_bert, sentences, mlp_head=False)
    base = {k: config.to_dict()[k] for k in ("framework", "dataset", "data_root", "text_model",
            "sts_dev", "sts_format", "eval_steps", "batch_size", "epochs", "epoch_steps",
            "max_length", "optimizer", "device")}  # fmt: skip
    spec = {"name": "t", "paper": "P", "table": "T", "claim": "c", "out": str(tmp_path / "o"),
            "runs_dir": str(tmp_path / "runs"), "base": base, "baseline": "infonce",
            "seeds": [0, 1], "min_seeds": 2, "metric": "sts_dev_spearman_best",
            "better": "higher", "convergence": {"metric": "loss", "relative": True},
            "arms": [{"label": "infonce", "loss": "infonce"},
                     {"label": "macl", "loss": "macl", "vs": ["infonce"]}]}  # fmt: skip
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    study = load_study(tmp_path / "s.yaml")
    assert len(run_study(study, log=False).finished) == 4
    results = write_report(study, "test")
    assert results["arms"]["macl"]["seeds"] == [0, 1]  # metric: final.json's best dev score
    # two epochs leave the convergence window without a slope: the rule says so
    assert results["comparisons"]["macl vs infonce"]["verdict"] == "not converged"
    assert (tmp_path / "runs" / "macl" / "seed1" / "best" / "config.json").is_file()
