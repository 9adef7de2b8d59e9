"""Davis: loader by path, RDKit features, pair container, SM masking, CI, trainer."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import torch

from contrastkit.cli import main
from contrastkit.graphs import GraphSet
from contrastkit.graphs.augment import mask_subgraph
from contrastkit.graphs.davis import ATOM_FEATURES, encode_protein, load_davis, smiles_to_graph
from contrastkit.graphs.dta import GraphDTAEncoder, concordance_index, dta_finetune

pytest.importorskip("rdkit")

SMILES = ["CCO", "c1ccccc1", "CC(=O)N", "CCN(CC)CC"]
SEQUENCES = ["MKVLA", "ACDEFGHIK", "MMMMWWWY", "KKAQ"]


def write_davis(root: Path, fold_of: dict[tuple[int, int], str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    drugs = ["index\tdrug_id\tsmiles"] + [f"{i}\t{100 + i}\t{s}" for i, s in enumerate(SMILES)]
    prots = ["index\tprotein_id\tsequence"] + [f"{i}\tP{i}\t{s}" for i, s in enumerate(SEQUENCES)]
    rows = ["drug_index\tprotein_index\tkd_nM\tpkd\tfold"]
    for k, (d, p) in enumerate(itertools.product(range(4), range(4))):
        pkd = 5.0 + (d + 2 * p) / 3
        fold = (fold_of or {}).get((d, p), "test" if k % 4 == 0 else str(k % 5))
        rows.append(f"{d}\t{p}\t{10 ** (9 - pkd):.3f}\t{pkd}\t{fold}")
    (root / "drugs.tsv").write_text("\n".join(drugs) + "\n")
    (root / "proteins.tsv").write_text("\n".join(prots) + "\n")
    (root / "affinities.tsv").write_text("\n".join(rows) + "\n")
    return root


def test_molecule_graph_features() -> None:
    x, edges = smiles_to_graph("CCO")
    assert x.shape == (3, ATOM_FEATURES) == (3, 78)
    torch.testing.assert_close(x.sum(1), torch.ones(3))  # rows normalised (GraphDTA)
    assert sorted(map(tuple, edges.T.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    with pytest.raises(ValueError, match="cannot parse"):
        smiles_to_graph("C1CC(")


def test_protein_codes_pad_and_cut() -> None:
    assert encode_protein("ACZ", 5).tolist() == [1, 3, 25, 0, 0]
    assert encode_protein("A" * 9, 4).tolist() == [1] * 4


def test_loader_splits_folds_and_pairs(tmp_path: Path) -> None:
    split = load_davis(write_davis(tmp_path / "davis"))
    assert len(split.x_train) == 12 and len(split.x_test) == 4
    pairs = split.x_train[torch.tensor([0, 1])]
    assert pairs.drug_graphs().nodes_per_graph().tolist()[0] == 3  # CCO, 3 heavy atoms
    assert pairs.protein_codes().shape == (2, 1000)


def test_loader_errors_name_file_and_line(tmp_path: Path) -> None:
    root = write_davis(tmp_path / "davis", {(1, 2): "7"})
    with pytest.raises(ValueError, match=r"affinities\.tsv, line 8: fold must be 0-4 or test"):
        load_davis(root)
    with pytest.raises(FileNotFoundError, match=r"drugs\.tsv"):
        load_davis(tmp_path / "nowhere")


def test_loader_refuses_empty_tables_one_sided_folds_and_bad_smiles(tmp_path: Path) -> None:
    """One line naming the file for a table with a header only, a fold column without
    test (or training) rows, and a SMILES RDKit cannot parse (with its line and column)."""
    for name in ("drugs.tsv", "proteins.tsv", "affinities.tsv"):
        root = write_davis(tmp_path / name)
        header = (root / name).read_text().splitlines()[0]
        (root / name).write_text(header + "\n")
        with pytest.raises(ValueError, match=rf"{name}: no rows after the header"):
            load_davis(root)
    pairs = itertools.product(range(4), range(4))
    for kind, fold in (("no test", "0"), ("only test", "test")):
        root = write_davis(tmp_path / kind, dict.fromkeys(pairs, fold))
        pairs = itertools.product(range(4), range(4))
        with pytest.raises(ValueError, match=rf"affinities\.tsv: .* got {kind} rows"):
            load_davis(root)
    root = write_davis(tmp_path / "smiles")
    text = (root / "drugs.tsv").read_text().replace("c1ccccc1", "C1CC(")
    (root / "drugs.tsv").write_text(text)
    with pytest.raises(ValueError, match=r"drugs\.tsv, line 3, column smiles: RDKit cannot parse"):
        load_davis(root)


def test_concordance_index_matches_pair_loop() -> None:
    gen = torch.Generator().manual_seed(0)
    y = torch.randint(0, 5, (40,), generator=gen).double()
    p = torch.randint(0, 6, (40,), generator=gen).double()  # ties in both
    num = den = 0.0
    for i in range(40):
        for j in range(40):
            if y[i] > y[j]:
                den += 1
                num += 1.0 if p[i] > p[j] else 0.5 if p[i] == p[j] else 0.0
    assert concordance_index(p, y, block=7) == pytest.approx(num / den, abs=1e-12)
    assert concordance_index(y, y) == 1.0
    diverged = p.clone()
    diverged[3] = float("nan")  # NaN compares false both ways: it would score 0 and 1/2
    assert math.isnan(concordance_index(diverged, y))


def test_mask_subgraph_zeroes_a_connected_fifth() -> None:
    n = 10
    e = torch.tensor([[i, i + 1] for i in range(n - 1)]).T
    g = GraphSet.from_graphs([torch.ones(n, 2)], [torch.cat([e, e.flip(0)], 1)])
    out = mask_subgraph(g, 0.2, torch.Generator().manual_seed(0))
    zero = out.x.eq(0).all(1).nonzero()[:, 0]
    assert len(zero) == 2 and int(zero[1] - zero[0]) == 1  # adjacent on the path


def test_encoder_shares_drug_and_protein_work(tmp_path: Path) -> None:
    split = load_davis(write_davis(tmp_path / "davis"))
    enc = GraphDTAEncoder(ATOM_FEATURES, feature_dim=16, width=8).eval()
    h = enc(split.x_train)
    assert h.shape == (12, 16)
    one = torch.cat([enc(split.x_train[i : i + 1]) for i in range(12)])
    torch.testing.assert_close(h, one)  # per-pair encoding equals the deduplicated batch


def test_cli_trains_davis_and_writes_dta_metrics(tmp_path: Path) -> None:
    root = write_davis(tmp_path / "davis")
    out = tmp_path / "run"
    code = main(
        [
            "train",
            "--dataset",
            "davis",
            "--data-root",
            str(root),
            "--framework",
            "supervised",
            "--loss",
            "supcon",
            "--binarize-threshold",
            "6",
            "--epochs",
            "1",
            "--batch-size",
            "4",
            "--width",
            "8",
            "--feature-dim",
            "16",
            "--proj-dim",
            "8",
            "--finetune-epochs",
            "2",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    final = json.loads((out / "final.json").read_text())
    assert {"dta_mse", "dta_mae", "dta_pearson", "dta_spearman", "dta_ci"} <= set(final)
    assert 0.0 <= final["dta_ci"] <= 1.0
    assert {"finetune_mse", "finetune_ci", "finetune_train_mse"} <= set(final)
    assert final["finetune_mse"] != final["dta_mse"]


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--binarize-threshold", "100"], "binarize_threshold 100.0 puts every training sample"),
        ([], "'supcon' pairs equal labels, and 'davis' has continuous labels"),
    ],
)
def test_supcon_on_davis_needs_a_threshold_that_splits_the_pairs(
    tmp_path: Path, extra: list[str], match: str, capsys: pytest.CaptureFixture
) -> None:
    """As on the other regression sets (one rule, ``label_aware.trained_labels``)."""
    root = write_davis(tmp_path / "davis")
    args = ["train", "--dataset", "davis", "--data-root", str(root), "--framework"]
    args += ["supervised", "--loss", "supcon", "--epochs", "1", "--no-progress", *extra]
    assert main([*args, "--out", str(tmp_path / "run")]) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_finetuning_fits_the_encoder_end_to_end_and_leaves_it_unchanged(tmp_path: Path) -> None:
    split = load_davis(write_davis(tmp_path / "davis"))
    torch.manual_seed(0)
    enc = GraphDTAEncoder(ATOM_FEATURES, feature_dim=16, width=8)
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    args = (enc, split.x_train, split.y_train, split.x_test, split.y_test)
    # 50 epochs (seeded): 40 already end at half the bound below, 100 at 0.3 of it
    long = dta_finetune(*args, epochs=50, batch_size=4, lr=5e-3, seed=0)
    for k, v in enc.state_dict().items():
        assert torch.equal(v, before[k]), k  # the pre-trained encoder is not touched
    # training error far below the labels' variance (pKd is a function of drug and protein)
    assert long["finetune_train_mse"] < 0.3 * float(split.y_train.var())
    short = dta_finetune(*args, epochs=1, batch_size=4, lr=5e-3, seed=0)
    assert short["finetune_train_mse"] > long["finetune_train_mse"]
    assert dta_finetune(*args, epochs=1, batch_size=4, lr=5e-3, seed=0) == short  # seeded
    with pytest.raises(ValueError, match="fine-tuning epochs must be >= 1"):
        dta_finetune(*args, epochs=0)


def test_finetune_epochs_is_refused_off_davis() -> None:
    from contrastkit.training import TrainConfig

    with pytest.raises(ValueError, match="finetune_epochs applies to drug-target data"):
        TrainConfig(dataset="tu:MUTAG", finetune_epochs=5)
    with pytest.raises(ValueError, match="finetune_epochs must be a positive integer"):
        TrainConfig(dataset="davis", finetune_epochs=0)


def test_num_samples_keeps_a_fixed_subset_of_training_pairs(tmp_path: Path) -> None:
    from contrastkit.graphs.trainer import DavisTrainer
    from contrastkit.training import TrainConfig

    root = str(write_davis(tmp_path / "davis"))
    values = dict(dataset="davis", data_root=root, batch_size=4, width=8, feature_dim=16)
    a = DavisTrainer(TrainConfig(**values, num_samples=8), progress=False)
    b = DavisTrainer(TrainConfig(**values, num_samples=8, seed=1), progress=False)
    assert len(a.data.x_train) == 8 and len(a.data.x_test) == 4  # the test fold stays whole
    assert torch.equal(a.data.x_train.drug_idx, b.data.x_train.drug_idx)
    with pytest.raises(ValueError, match="exceeds the 12 pairs"):
        DavisTrainer(TrainConfig(**values, num_samples=13), progress=False)


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"dataset": "tu:MUTAG", "imbalance": "linear"}, "imbalance applies to image"),
        ({"dataset": "davis", "imbalance_ratio": 10.0}, "imbalance applies to image"),
        ({"dataset": "davis", "binarize_threshold": 7.0}, "got framework 'simclr' on 'davis'"),
        (
            {"dataset": "tu:MUTAG", "binarize_threshold": 1.0, "framework": "supervised"},
            "binarize_threshold applies to the supervised framework on a regression",
        ),
    ],
)
def test_settings_the_graph_trainers_would_ignore_are_refused(settings: dict, match: str) -> None:
    """The graph trainers read their sets directly: imbalance was recorded in final.json
    and never applied, and davis binarised its labels for a framework that ignores them."""
    from contrastkit.training import TrainConfig

    with pytest.raises(ValueError, match=match):
        TrainConfig(**settings).validate()
