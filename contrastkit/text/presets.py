"""Training presets for ``contrastkit simcse``, each named after the paper it comes from.

A preset fixes the loss, its hyper-parameters and the training settings the paper
states; everything a paper leaves unsaid keeps SimCSE's unsupervised recipe, on which
all three papers build (Gao et al., 2021, §3 and App. A: CLS pooling with the
training-only MLP head, dropout 0.1, one epoch over the 1M Wikipedia sentences; maximum
length 32 and STS-B dev evaluated every 125 steps from the authors' run_unsup_example.sh).

* ``simcse-unsup-bert`` / ``simcse-unsup-roberta``: SimCSE, InfoNCE τ = 0.05, batch 64,
  lr 3e-5 (BERT-base) / 1e-5 (RoBERTa-base).
* ``macl-bert`` / ``macl-roberta``: MACL App. B.4 — {τ0, α, A0} = {0.05, 2, 0.8}, no
  reweighting, batch 64, lr 3e-5 / 1e-5, one epoch, dropout 0.2 (B.4 reports 0.2 works
  better with MACL).
* ``paradigm-{mmhe,mmhs,mbarlow,mvicreg}-{bert,roberta}``: the gradient-paradigm paper
  (Li, Zhang & Nie, ACL 2024) App. A.4, Table 4 (BERT-base) and Table 5 (RoBERTa-base):
  batch size, lr, margin m, temperature τ (none for mMHS) and ratio r per loss; CLS +
  MLP and one epoch from its App. A.3.

Example:
    >>> get_preset("macl-roberta").loss_args["alpha"]
    2.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..frameworks.simcse import SimCSE

SIMCSE = "Gao et al., 2021 (SimCSE), unsupervised, App. A"
MACL = "MACL App. B.4"
PARADIGM = "Li, Zhang & Nie, ACL 2024, App. A.4"


@dataclass(frozen=True)
class Preset:
    """One paper's settings: the loss and its arguments, and training options."""

    name: str
    source: str
    loss: str
    loss_args: dict[str, object]
    train: dict[str, object] = field(default_factory=dict)

    def describe(self) -> str:
        """One line listing everything the preset sets."""
        items = [f"loss={self.loss}"]
        items += [f"{k}={v}" for k, v in self.loss_args.items()]
        items += [f"--{k.replace('_', '-')}={v}" for k, v in self.train.items()]
        return f"preset {self.name} ({self.source}): " + ", ".join(items)


def _train(batch_size: int, lr: float, dropout: float = 0.1) -> dict[str, object]:
    """SimCSE's recipe with the paper's batch size, learning rate and dropout."""
    return {
        "batch_size": batch_size,
        "lr": lr,
        "epochs": 1,
        "max_length": 32,
        "pooling": "cls",
        "mlp_head": True,
        "dropout": dropout,
        "eval_every": 125,
    }


def _build() -> dict[str, Preset]:
    # the losses' sentence settings are the simcse framework's (SimCSE.loss_defaults)
    infonce = SimCSE.loss_defaults["infonce"]
    presets = [
        Preset(f"simcse-unsup-{backbone}", SIMCSE, "infonce", dict(infonce), _train(64, lr))
        for backbone, lr in (("bert", 3e-5), ("roberta", 1e-5))
    ]
    macl = SimCSE.loss_defaults["macl"]
    for backbone, lr in (("bert", 3e-5), ("roberta", 1e-5)):
        presets.append(Preset(f"macl-{backbone}", MACL, "macl", dict(macl), _train(64, lr, 0.2)))
    # (batch size, lr, m, τ, r): Table 4 (BERT-base) and Table 5 (RoBERTa-base)
    tables = {
        ("bert", "Table 4"): {
            "mmhe": (128, 1e-5, 0.30, 5e-2, 1.75),
            "mmhs": (128, 1e-5, 0.30, None, 1.75),
            "mbarlow": (128, 1e-5, 0.30, 5e-2, 1.50),
            "mvicreg": (128, 1e-5, 0.30, 5e-2, 1.50),
        },
        ("roberta", "Table 5"): {
            "mmhe": (512, 1e-5, 0.30, 5e-2, 1.25),
            "mmhs": (512, 1e-5, 0.27, None, 1.00),
            "mbarlow": (512, 1e-5, 0.37, 5e-2, 1.25),
            "mvicreg": (512, 1e-5, 0.37, 5e-2, 1.25),
        },
    }
    for (backbone, table), rows in tables.items():
        for loss, (bs, lr, m, tau, r) in rows.items():
            args: dict[str, object] = {"margin": m, "ratio": r}
            if tau is not None:
                args["temperature"] = tau
            presets.append(
                Preset(
                    f"paradigm-{loss}-{backbone}",
                    f"{PARADIGM}, {table}",
                    loss,
                    args,
                    _train(bs, lr),
                )
            )
    return {p.name: p for p in presets}


PRESETS: dict[str, Preset] = _build()


def get_preset(name: str) -> Preset:
    """The preset ``name``; ``ValueError`` listing the known names otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"--preset must be one of {', '.join(PRESETS)}, got {name!r}") from None


# Built-in values of the options a preset may set (SimCSE's unsupervised BERT recipe, Gao et
# al., 2021, App. A; pooling None = the model's own; dropout 0.1).
BUILTIN: dict[str, object] = {
    "loss": "infonce",
    "batch_size": 64,
    "lr": 3e-5,
    "epochs": 1,
    "max_length": 32,
    "pooling": None,
    "mlp_head": False,
    "dropout": 0.1,
    "eval_every": 125,
}


def resolve_options(
    given: dict[str, object], preset: str | None
) -> tuple[dict[str, object], dict[str, object], Preset | None]:
    """Merge command-line options with a preset: ``(options, preset loss args, preset)``.

    ``given`` maps each option of :data:`BUILTIN` to the user's value or ``None`` (not
    given; ``mlp_head`` False counts as not given). Precedence: the user's value, then the
    preset's, then :data:`BUILTIN`. A ``loss`` given by the user that differs from the
    preset's is an error (its hyper-parameters would not apply).
    """
    chosen = get_preset(preset) if preset else None
    options: dict[str, object] = {}
    for key, default in BUILTIN.items():
        value = given.get(key)
        if value is None or (key == "mlp_head" and value is False):
            value = chosen.train.get(key, default) if chosen else default
            if chosen and key == "loss":
                value = chosen.loss
        options[key] = value
    if chosen and given.get("loss") not in (None, chosen.loss):
        raise ValueError(
            f"--loss {given['loss']} conflicts with --preset {chosen.name} (loss {chosen.loss})"
        )
    return options, (dict(chosen.loss_args) if chosen else {}), chosen
