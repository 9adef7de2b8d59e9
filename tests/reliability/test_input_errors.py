"""Issue 37: every failure of a user's input is one line ``contrastkit: error: ...`` naming
the file or argument, exit status 2, no traceback, nothing already written destroyed."""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import pickle
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from contrastkit.checkpoint_file import TRUST_ENV, atomic_torch_save, load_checkpoint
from contrastkit.cli import main
from contrastkit.graphs.tu import _read_numbers
from contrastkit.images.analyses import embed_2d
from contrastkit.rundir import strict_json
from contrastkit.training import CHECKPOINT, FINAL, METRICS

TINY = ["--dataset=digits", "--batch-size=256", "--feature-dim=8", "--width=2", "--proj-dim=8"]
TINY += ["--knn-k=20", "--epochs=1", "--no-progress"]
IMAGES = ["--dataset=imagefolder", "--batch-size=4", "--width=2", "--feature-dim=8"]
IMAGES += ["--proj-dim=8", "--knn-k=2", "--epochs=1", "--no-progress"]


def _fails(capsys: pytest.CaptureFixture, argv: list[str], *fragments: str) -> str:
    """Run the CLI in-process; it must exit 2 with one line holding every fragment."""
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("contrastkit: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert str(fragment) in err, err
    return err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("finished") / "run"
    assert main(["train", *TINY, "--out", str(run)]) == 0
    return run


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTRASTKIT_CACHE", str(tmp_path / "cache"))


def _image_folder(root: Path, side: int, per_class: int = 6) -> Path:
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in ("a", "b"):
        (root / c).mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / c / f"{i}.png")
    return root


def _cifar(root: Path, damage: dict[str, bytes]) -> Path:
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name in [*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"]:
        batch = {"data": np.zeros((10, 3072), dtype=np.uint8), "labels": list(range(10))}
        (folder / name).write_bytes(damage.get(name, pickle.dumps(batch, protocol=2)))
    return root


def _mnist(root: Path, images: bytes) -> Path:
    root.mkdir(parents=True)
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):  # fmt: skip
        data = gzip.compress(bytes([0, 0, 8, 1, 0, 0, 0, 1, 0]))
        (root / f"{stem}.gz").write_bytes(images if stem.startswith("train-images") else data)
    return root


def test_debug_is_accepted_after_the_command(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(ValueError, match="seed must be"):
        main(["train", *TINY, "--seed", "-1", "--debug"])
    _fails(capsys, ["train", *TINY, "--seed", "-1"], "seed must be")  # without: one line


def test_a_malicious_cifar_pickle_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    class Evil:
        def __reduce__(self) -> tuple:
            return (os.system, ("echo pwned",))

    root = _cifar(tmp_path / "c", {"data_batch_1": pickle.dumps(Evil())})
    _fails(
        capsys,
        ["train", "--dataset=cifar10", "--data-root", root, "--epochs=1"],
        "data_batch_1",
        "refused to load global",
    )


def test_a_truncated_cifar_batch(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    batch = {"data": np.zeros((10, 3072), dtype=np.uint8), "labels": list(range(10))}
    whole = pickle.dumps(batch, protocol=2)
    root = _cifar(tmp_path / "c", {"test_batch": whole[: len(whole) // 2]})
    _fails(
        capsys,
        ["train", "--dataset=cifar10", "--data-root", root, "--epochs=1"],
        "test_batch cannot be read as a cifar10 python pickle",
        "truncated",
    )


def test_a_truncated_image_archive(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folder = _image_folder(tmp_path / "imgs", 8)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname="imgs")
    archive = tmp_path / "imgs.tar.gz"
    archive.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    _fails(
        capsys,
        ["train", *IMAGES, "--data-root", archive],
        f"{archive} cannot be read as a .tar/.tar.gz archive of images",
    )


@pytest.mark.parametrize(
    ("images", "reason"),
    [(gzip.compress(b"\0" * 4000)[:30], "ended before"), (b"no", "Not a gzipped file")],
    ids=["truncated", "not-gzip"],
)
def test_a_damaged_mnist_gz_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture, images: bytes, reason: str
) -> None:
    root = _mnist(tmp_path / "m", images)
    _fails(
        capsys,
        ["train", "--dataset=mnist", "--data-root", root, "--epochs=1"],
        "train-images-idx3-ubyte.gz cannot be read as a gzipped idx file",
        reason,
    )


def test_images_too_small_for_the_encoder_are_refused_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    folder = _image_folder(tmp_path / "tiny", 1)
    _fails(
        capsys,
        ["train", *IMAGES, "--data-root", folder],
        f"the images in '{folder}' are 1x1 px",
        "backbone 'conv'",
    )


def test_a_tsne_map_of_two_samples_runs() -> None:
    """A valid folder of 6 images per class leaves 2 test images: the map must still run."""
    coords, method = embed_2d(torch.randn(2, 8), "tsne")
    assert coords.shape == (2, 2) and method == "tsne"


def _study(tmp_path: Path, metric: str, temperature: float) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        f"name: s\nclaim: c\nout: {tmp_path}/study\nruns_dir: {tmp_path}/runs\n"
        "base: {dataset: digits, epochs: 1, batch_size: 256, width: 2, feature_dim: 8}\n"
        f"baseline: a\nseeds: [0]\nmetric: {metric}\narms:\n"
        "  - {label: a, loss: ntxent}\n"
        f"  - {{label: b, loss: ntxent, loss_args: {{temperature: {temperature}}}}}\n"
    )
    return path


@pytest.mark.parametrize(
    ("metric", "temperature", "message"),
    [
        (
            "knn_acuracy",
            0.5,
            "metric 'knn_acuracy' is not a number final.json holds; did you mean knn_accuracy",
        ),
        ("knn_accuracy", -1, "arm 'b': loss 'ntxent': temperature must be"),
    ],
    ids=["misspelt-metric", "bad-loss-arg-of-a-later-arm"],
)
def test_a_study_is_checked_whole_before_its_first_run(
    tmp_path: Path, capsys: pytest.CaptureFixture, metric: str, temperature: float, message: str
) -> None:
    config = _study(tmp_path, metric, temperature)
    _fails(capsys, ["study", config], "s.yaml", message)
    assert not (tmp_path / "runs").exists()  # no arm trained


def test_a_non_utf8_sts_input_line_is_named_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    folder = tmp_path / "STS" / "STS12-en-test"
    folder.mkdir(parents=True)
    for subset in ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"):
        (folder / f"STS.input.{subset}.txt").write_bytes(b"a b\tc d\n\xff x\ty\n")
        (folder / f"STS.gs.{subset}.txt").write_text("1\n2\n")
    _fails(
        capsys,
        ["senteval", "--data", tmp_path, "--tasks", "STS12", "--model", tmp_path / "no-model"],
        "STS.input.MSRpar.txt line 2 is not UTF-8 text",
    )


def test_empty_rt_polarity_files_are_refused_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "MR").mkdir()
    for name in ("rt-polarity.pos", "rt-polarity.neg"):
        (tmp_path / "MR" / name).write_bytes(b"")
    _fails(
        capsys,
        ["senteval", "--data", tmp_path, "--tasks", "MR", "--model", tmp_path / "no-model"],
        "rt-polarity.pos holds no sentence",
    )


def _resave(run: Path, change: dict, drop_digest: bool = False) -> None:
    """Rewrite ``run``'s checkpoint with ``change`` applied (to ``config`` for a dict)."""
    state = load_checkpoint(run / CHECKPOINT)
    for key, value in change.items():
        state[key] = {**state[key], **value} if isinstance(value, dict) else value
    if drop_digest:
        torch.save(state, run / CHECKPOINT)
    else:
        atomic_torch_save(state, run / CHECKPOINT)


def test_resume_names_the_one_config_key_that_differs(
    tmp_path: Path, finished_run: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    _resave(run, {"config": {"extra_key": 1}})
    err = _fails(
        capsys,
        ["train", *TINY, "--epochs=2", "--resume", "--out", run],
        "differs in: extra_key (unknown to this version))",
    )
    assert "batch_size" not in err


def test_a_checkpoint_without_its_digest_needs_trust(
    tmp_path: Path, finished_run: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    weights = load_checkpoint(run / CHECKPOINT)["model"]
    name = next(k for k, v in weights.items() if v.is_floating_point())
    _resave(run, {"model": {name: weights[name] + 1}}, drop_digest=True)
    before = (run / CHECKPOINT).read_bytes()
    _fails(
        capsys,
        ["train", *TINY, "--epochs=2", "--resume", "--out", run],
        f"checkpoint '{run / CHECKPOINT}' has no SHA-256 digest",
        "--trust-checkpoint",
    )
    assert (run / CHECKPOINT).read_bytes() == before
    assert load_checkpoint(run / CHECKPOINT, trust=True)["model"][name].equal(weights[name] + 1)
    argv = ["train", *TINY, "--epochs=2", "--resume", "--out", str(run), "--trust-checkpoint"]
    assert main(argv) == 0  # trusted explicitly: it resumes
    assert TRUST_ENV not in os.environ  # the trust ends with the command


def test_resume_refuses_a_folder_holding_another_final_json(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "theirs"
    run.mkdir()
    (run / FINAL).write_text('{"theirs": 1}')
    _fails(
        capsys,
        ["train", *TINY, "--resume", "--out", run],
        f"'{run}' holds no checkpoint.pt",
        "final.json",
    )
    assert (run / FINAL).read_text() == '{"theirs": 1}'


def test_overwrite_refuses_a_folder_that_is_not_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    folder = _image_folder(tmp_path / "photos", 2, per_class=1)
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    _fails(
        capsys,
        ["train", *TINY, "--overwrite", "--out", folder],
        f"--overwrite refuses to empty '{folder}'",
        "no contrastkit run",
    )
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before


def test_overwrite_refuses_a_folder_with_runs_kept_deeper_inside(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Runs two levels down made any folder a compare folder: --overwrite emptied a
    project folder holding a thesis beside its experiments."""
    folder = tmp_path / "project"
    (folder / "experiments" / "run1").mkdir(parents=True)
    (folder / "experiments" / "run1" / METRICS).write_text("{}\n")
    (folder / "thesis.tex").write_text("precious")
    _fails(
        capsys,
        ["train", *TINY, "--overwrite", "--out", folder],
        f"--overwrite refuses to empty '{folder}'",
        "no contrastkit run",
    )
    assert (folder / "thesis.tex").read_text() == "precious"
    assert (folder / "experiments" / "run1" / METRICS).exists()


def test_overwrite_keeps_the_old_run_when_the_new_one_cannot_start(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The run folder was emptied before the trainer found the batch larger than the data;
    what --overwrite replaces now goes only once the new run has begun."""
    run = tmp_path / "run"
    run.mkdir()
    (run / METRICS).write_text('{"epoch": 1}\n')
    (run / FINAL).write_text('{"old": 1}')
    _fails(
        capsys,
        ["train", *TINY, "--batch-size=100000", "--overwrite", "--out", run],
        "batch_size 100000 exceeds the 1437 training samples",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # nothing set aside is left
    assert (run / FINAL).read_text() == '{"old": 1}' and (run / METRICS).exists()
    assert main(["train", *TINY, "--overwrite", "--out", str(run)]) == 0  # replaced
    assert "old" not in json.loads((run / FINAL).read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def _davis(root: Path, kd: str, pkd: str) -> Path:
    root.mkdir()
    (root / "drugs.tsv").write_text("index\tdrug_id\tsmiles\n0\t1\tCCO\n")
    (root / "proteins.tsv").write_text("index\tprotein_id\tsequence\n0\tP\tMKV\n")
    (root / "affinities.tsv").write_text(
        f"drug_index\tprotein_index\tkd_nM\tpkd\tfold\n0\t0\t{kd}\t{pkd}\t0\n"
    )
    return root


@pytest.mark.parametrize(
    ("kd", "pkd", "message"),
    [
        ("10", "nan", "column pkd: expected a finite number, got 'nan'"),
        ("abc", "5.0", "column kd_nM: expected a number, got 'abc'"),
    ],
    ids=["nan-pkd", "text-in-unused-kd"],
)
def test_davis_refuses_non_finite_and_non_numeric_values(
    tmp_path: Path, capsys: pytest.CaptureFixture, kd: str, pkd: str, message: str
) -> None:
    pytest.importorskip("rdkit")
    root = _davis(tmp_path / "davis", kd, pkd)
    _fails(
        capsys,
        [
            "train",
            "--dataset=davis",
            "--data-root",
            root,
            "--framework=supervised",
            "--loss=supcon",
            "--epochs=1",
        ],
        f"{root / 'affinities.tsv'}, line 2, {message}",
    )


def test_tu_refuses_non_finite_attributes(tmp_path: Path) -> None:
    path = tmp_path / "X_node_attributes.txt"
    path.write_text("0.5, 1\nnan, 2\n")
    with pytest.raises(ValueError, match=r"X_node_attributes.txt, line 2: expected finite"):
        _read_numbers(path, float)


def test_final_json_is_strict_json() -> None:
    final = {"knn_accuracy": 0.5, "curve": [1.0, math.inf], "nested": {"loss": math.nan}}
    text = strict_json(final)
    assert json.loads(text) == {"knn_accuracy": 0.5, "curve": [1.0, None], "nested": {"loss": None}}
    finite = {"a": 0.1 + 0.2, "b": [1, 2.5], "c": "x"}
    assert strict_json(finite) == json.dumps(finite, indent=2) + "\n"  # valid runs unchanged
