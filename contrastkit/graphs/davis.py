"""Davis drug–target affinity (LASCon §4.1, App. D.4) read by path, as drug graphs + proteins.

Layout (``ROOT/`` = ``…/regression/davis``; tab-separated with a header, 0-based indices):
``drugs.tsv`` (index, drug_id, smiles), ``proteins.tsv`` (index, protein_id, sequence),
``affinities.tsv`` (drug_index, protein_index, kd_nM, pkd, fold) with ``fold`` one of
``0``–``4`` (DeepDTA's setting-1 training folds) or ``test``. Bad rows raise ``ValueError``
naming the file and line (and the column: a non-integer index, a non-number or a NaN / Inf
in ``kd_nM`` or ``pkd``, used or not, is refused); a file that is not UTF-8 likewise.

Drugs become RDKit molecular graphs with GraphDTA's 78 atom features (Nguyen et al., 2021,
``utils``/``create_data.py``): one-hot element among 43 symbols plus "unknown" (44),
one-hot degree 0–10 (11), one-hot total hydrogen count 0–10 (11), one-hot implicit valence
0–10 (11), aromaticity (1); each row divided by its sum as GraphDTA does. Every bond is an
edge in both directions. Proteins become GraphDTA's integer codes over
``ABCDEFGHIKLMNOPQRSTUVWXYZ`` (1-based, 0 = padding), cut or padded to 1,000 residues.

The :class:`DTAPairs` container implements the modality contract over (drug, protein)
pairs; labels are pKd (``-log10(Kd / 1e9)``), train = folds 0–4, test = the test fold.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from .._optional import require
from ..data import Split
from ..data.reading import reading
from .data import GraphSet

DAVIS = "davis"  # the dataset name

SYMBOLS = [
    "C",
    "N",
    "O",
    "S",
    "F",
    "Si",
    "P",
    "Cl",
    "Br",
    "Mg",
    "Na",
    "Ca",
    "Fe",
    "As",
    "Al",
    "I",
    "B",
    "V",
    "K",
    "Tl",
    "Yb",
    "Sb",
    "Sn",
    "Ag",
    "Pd",
    "Co",
    "Se",
    "Ti",
    "Zn",
    "H",
    "Li",
    "Ge",
    "Cu",
    "Au",
    "Ni",
    "Cd",
    "In",
    "Mn",
    "Zr",
    "Cr",
    "Pt",
    "Hg",
    "Pb",
    "Unknown",
]  # GraphDTA's atom symbol list
PROTEIN_ALPHABET = "ABCDEFGHIKLMNOPQRSTUVWXYZ"  # GraphDTA seq_voc
MAX_PROTEIN_LENGTH = 1000  # GraphDTA max_seq_len
ATOM_FEATURES = len(SYMBOLS) + 11 + 11 + 11 + 1  # 78


def _rows(path: Path, header: list[str]) -> list[tuple[int, list[str]]]:
    if not path.is_file():
        raise FileNotFoundError(f"Davis: missing {path} (expected columns {', '.join(header)})")
    with reading(path, "UTF-8 tab-separated text"), path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t")
        first = next(reader, None)
        rows = [(n, r) for n, r in enumerate(reader, start=2) if r]
    if first != header:
        raise ValueError(f"{path}, line 1: expected header {header}, got {first}")
    if not rows:
        raise ValueError(f"{path}: no rows after the header")
    for n, r in rows:
        if len(r) != len(header):
            raise ValueError(f"{path}, line {n}: expected {len(header)} fields, got {len(r)}")
    return rows


def _integer(path: Path, line: int, column: str, text: str) -> int:
    """The integer ``text`` of ``column``; ``ValueError`` naming file, line and column."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            f"{path}, line {line}, column {column}: expected an integer, got {text!r}"
        ) from None


def _finite(path: Path, line: int, column: str, text: str) -> float:
    """The finite number ``text`` of ``column``; ``ValueError`` naming file, line and
    column for a non-number or NaN / Inf."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(
            f"{path}, line {line}, column {column}: expected a number, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise ValueError(
            f"{path}, line {line}, column {column}: expected a finite number, got {text!r}"
        )
    return value


def _one_hot(value: int | str, choices: list | range) -> list[float]:
    choices = list(choices)
    position = choices.index(value) if value in choices else len(choices) - 1
    return [float(i == position) for i in range(len(choices))]


def smiles_to_graph(smiles: str) -> tuple[Tensor, Tensor]:
    """Atom features ``[atoms, 78]`` and ``edge_index [2, 2·bonds]`` of one molecule."""
    require("rdkit", "graph", "the Davis task")
    from rdkit import Chem, rdBase

    with rdBase.BlockLogs():  # the error below says what RDKit would print
        mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"RDKit cannot parse SMILES {smiles!r}")
    rows = []
    for atom in mol.GetAtoms():
        f = (
            _one_hot(atom.GetSymbol(), SYMBOLS)
            + _one_hot(atom.GetDegree(), range(11))
            + _one_hot(atom.GetTotalNumHs(), range(11))
            + _one_hot(atom.GetValence(Chem.ValenceType.IMPLICIT), range(11))
            + [float(atom.GetIsAromatic())]
        )
        rows.append([v / sum(f) for v in f])
    pairs = [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in mol.GetBonds()]
    edges = torch.tensor(pairs + [(j, i) for i, j in pairs], dtype=torch.long).reshape(-1, 2).T
    return torch.tensor(rows, dtype=torch.float32), edges


def encode_protein(sequence: str, length: int = MAX_PROTEIN_LENGTH) -> Tensor:
    """GraphDTA's integer codes of ``sequence`` (unknown letters → 0), cut/padded to ``length``."""
    codes = [PROTEIN_ALPHABET.find(c) + 1 for c in sequence[:length]]
    return torch.tensor(codes + [0] * (length - len(codes)), dtype=torch.long)


@dataclass(frozen=True)
class DTAPairs:
    """(drug, protein) pairs: graph ``drug_idx[i]`` of ``drugs`` with sequence
    ``proteins[prot_idx[i]]``. Indexing keeps the shared tables and selects pairs."""

    drugs: GraphSet
    proteins: Tensor  # [P, L] int64 codes
    drug_idx: Tensor  # [N]
    prot_idx: Tensor  # [N]

    def __len__(self) -> int:
        return len(self.drug_idx)

    def __getitem__(self, idx: Tensor | slice) -> DTAPairs:
        return DTAPairs(self.drugs, self.proteins, self.drug_idx[idx], self.prot_idx[idx])

    def split(self, size: int) -> list[DTAPairs]:
        return [self[i : i + size] for i in range(0, len(self), size)]

    def to(self, device: torch.device | str) -> DTAPairs:
        return DTAPairs(
            self.drugs.to(device),
            self.proteins.to(device),
            self.drug_idx.to(device),
            self.prot_idx.to(device),
        )

    def drug_graphs(self) -> GraphSet:
        """One graph per pair (the union the encoder consumes)."""
        return self.drugs[self.drug_idx.cpu()]

    def protein_codes(self) -> Tensor:
        return self.proteins[self.prot_idx]


class DTAAugment:
    """Augment the drug graph of every pair (LASCon App. D.4: NM, ND, SM at 20 %); the
    protein sequence is unchanged. ``augment`` is a :class:`~.augment.GraphAugment`."""

    def __init__(self, augment: object) -> None:
        self.augment = augment

    def __call__(self, pairs: DTAPairs, generator: torch.Generator) -> DTAPairs:
        graphs = self.augment(pairs.drug_graphs(), generator)  # type: ignore[operator]
        own = torch.arange(len(pairs), device=pairs.drug_idx.device)
        return DTAPairs(graphs, pairs.proteins, own, pairs.prot_idx)


def load_davis(data_root: str | Path | None = None) -> Split:
    """Davis as a :class:`Split` of kind ``"dta"``: pKd labels, folds 0–4 train, test fold."""
    if data_root is None:
        raise ValueError("dataset davis needs --data-root (the folder holding drugs.tsv)")
    root = Path(data_root)
    drugs = _rows(root / "drugs.tsv", ["index", "drug_id", "smiles"])
    proteins = _rows(root / "proteins.tsv", ["index", "protein_id", "sequence"])
    pairs = _rows(root / "affinities.tsv", ["drug_index", "protein_index", "kd_nM", "pkd", "fold"])
    for name, rows in (("drugs.tsv", drugs), ("proteins.tsv", proteins)):
        for k, (line, r) in enumerate(rows):
            if r[0] != str(k):
                raise ValueError(f"{root / name}, line {line}: expected index {k}, got {r[0]!r}")
    graphs = []
    for line, r in drugs:
        try:
            graphs.append(smiles_to_graph(r[2]))
        except ValueError as exc:
            raise ValueError(f"{root / 'drugs.tsv'}, line {line}, column smiles: {exc}") from None
    table = GraphSet.from_graphs([g[0] for g in graphs], [g[1] for g in graphs])
    codes = torch.stack([encode_protein(r[2]) for _, r in proteins])
    d_idx, p_idx, pkd, test = [], [], [], []
    path = root / "affinities.tsv"
    for line, (d, p, kd, y, fold) in pairs:
        d_i, p_i = _integer(path, line, "drug_index", d), _integer(path, line, "protein_index", p)
        _finite(path, line, "kd_nM", kd)
        value = _finite(path, line, "pkd", y)
        if not (0 <= d_i < len(drugs) and 0 <= p_i < len(proteins)):
            raise ValueError(f"{path}, line {line}: drug or protein index out of range")
        if fold not in ("0", "1", "2", "3", "4", "test"):
            raise ValueError(f"{path}, line {line}: fold must be 0-4 or test, got {fold!r}")
        d_idx.append(d_i), p_idx.append(p_i), pkd.append(value), test.append(fold == "test")
    if all(test) or not any(test):
        raise ValueError(
            f"{path}: the fold column needs training rows (0-4) and test rows (test), got "
            f"{'only test' if any(test) else 'no test'} rows"
        )
    is_test = torch.tensor(test)
    y = torch.tensor(pkd, dtype=torch.float32)
    all_pairs = DTAPairs(table, codes, torch.tensor(d_idx), torch.tensor(p_idx))
    train, held = torch.nonzero(~is_test)[:, 0], torch.nonzero(is_test)[:, 0]
    return Split("davis", "dta", all_pairs[train], y[train], all_pairs[held], y[held])  # type: ignore[arg-type]
