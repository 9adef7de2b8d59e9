"""The graph modality: what it brings to the shared loop.

Two data kinds: ``"graph"`` (TU sets, ``tu:NAME``, trained by
:class:`~.trainer.GraphTrainer` with GraphCL's SVM evaluation) and ``"dta"`` (Davis
drug–target pairs, :class:`~.trainer.DavisTrainer` with LASCon's regression heads). Each
trainer builds its encoder (:class:`~.gin.GINEncoder`, :class:`~.dta.GraphDTAEncoder`) and
its views itself; both encoders are export architectures (``gin``, ``graph_dta``). The
loaders are registered by name so that config validation and ``available_datasets()``
know them; the trainers read their data themselves.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from ..data import Split, dataset_info
from ..models.export import Architecture
from ..training import Metric, Modality, TrainConfig, Trainer
from ..training.label_aware import check_binarize_threshold
from .davis import DAVIS, load_davis
from .dta import REGRESSION, GraphDTAEncoder
from .gin import GINEncoder
from .trainer import DavisTrainer, GraphTrainer
from .tu import PREFIX, load_tu


def is_graph_dataset(name: str) -> bool:
    """Whether dataset ``name`` is a graph set (``tu:NAME`` or ``davis``)."""
    return name == DAVIS or (name.partition(":")[0] == PREFIX and bool(name.partition(":")[2]))


def graph_trainer(config: TrainConfig, label_aware: bool = False) -> type[Trainer]:
    """:class:`DavisTrainer` for ``davis``, :class:`GraphTrainer` for ``tu:NAME`` (each
    evaluates with its own protocol, label-aware or not)."""
    return DavisTrainer if config.dataset == DAVIS else GraphTrainer


def check(config: TrainConfig) -> None:
    """(Run for every config.) ``finetune_epochs``: a positive integer, for drug–target
    data only. On graph sets, ``imbalance`` (and its ratio) are refused, since the graph
    trainers read their sets directly and would ignore it, and ``binarize_threshold``
    needs the supervised framework on davis, as on every regression set
    (:class:`~contrastkit.training.LabelAwareTrainer`)."""
    graph = is_graph_dataset(config.dataset)
    if graph and (config.imbalance is not None or config.imbalance_ratio is not None):
        raise ValueError(f"imbalance applies to image and tabular sets, not to {config.dataset!r}")
    if graph:  # davis is the regression set among them
        check_binarize_threshold(config, regression=config.dataset == DAVIS)
    ft = config.finetune_epochs
    if ft is None:
        return
    if not isinstance(ft, int) or isinstance(ft, bool) or ft < 1:
        raise ValueError(f"finetune_epochs must be a positive integer or null, got {ft!r}")
    if dataset_info(config.dataset).kind != "dta":
        raise ValueError(
            f"finetune_epochs applies to drug-target data (davis), not {config.dataset!r}"
        )


def load_tu_set(name: str, data_root: str | None = None, **options: object) -> Split:
    """``tu:NAME`` through the dataset registry (:func:`~.tu.load_tu`)."""
    return load_tu(name, data_root, **options)


def load_davis_set(data_root: str | None = None) -> Split:
    """``davis`` through the dataset registry (:func:`~.davis.load_davis`)."""
    return load_davis(data_root)


def gin_args(module: nn.Module) -> dict[str, Any]:
    """A :class:`~.gin.GINEncoder`'s constructor arguments (its export spec)."""
    return {"in_dim": module.in_dim, "width": module.width, "layers": module.layers}


def graph_dta_args(module: nn.Module) -> dict[str, Any]:
    """A :class:`~.dta.GraphDTAEncoder`: its GIN's and CNN's sizes."""
    first = module.cnn[0]
    return {
        "atom_features": module.gin.in_dim,
        "feature_dim": module.feature_dim,
        "width": module.gin.width,
        "layers": module.gin.layers,
        "embed_dim": module.embed.embedding_dim,
        "filters": first.out_channels,
        "kernel": first.kernel_size[0],
    }


# what GraphTrainer (GraphCL's SVM protocol, 10 folds) and DavisTrainer (an MLP head on
# frozen embeddings, then optionally GraphDTA's head fine-tuned end to end) add to final.json
GRAPH_METRICS = (
    Metric("svm_accuracy", "svm_accuracy"),
    Metric("svm_accuracy_std"),
    *(Metric(f"dta_{m}", f"dta_{m}" if m in ("mse", "ci") else "") for m in REGRESSION),
    *(Metric(f"finetune_{m}") for m in REGRESSION),
    Metric("finetune_train_mse"),
    Metric("finetune_time_s"),
)
GRAPH = Modality(
    "graph",
    kinds=("graph", "dta"),  # TU graph sets (GraphSet); drug graph + protein pairs (Davis)
    trainer=graph_trainer,
    check=check,
    metrics=GRAPH_METRICS,
    architectures=(
        Architecture("gin", GINEncoder, gin_args),
        Architecture("graph_dta", GraphDTAEncoder, graph_dta_args),
    ),
    description="graphs: GIN encoders, GraphCL views, SVM / drug-target evaluation",
)
