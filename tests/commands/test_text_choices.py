"""The text commands' named values are declared once: ``senteval``'s and ``simcse``'s
flags take their choices from the constants that define them (the engine's precisions,
the encoder's poolings, SentEval's classifiers and tasks, the STS formats), which the text
modality's config check also uses, and the names SentEval's flags need load without
scikit-learn."""

from __future__ import annotations

import argparse
import inspect
import subprocess
import sys

from contrastkit.cli import build_parser
from contrastkit.commands import senteval, simcse
from contrastkit.engine import PRECISIONS
from contrastkit.text.data import STS_FORMATS
from contrastkit.text.encoder import DEFAULT_MODEL, DEFAULT_POOLING, POOLINGS
from contrastkit.text.senteval import TASKS
from contrastkit.text.senteval.run import run_senteval
from contrastkit.text.senteval.transfer import Fitting
from contrastkit.text.senteval_names import CLASSIFIERS, KFOLD
from contrastkit.training import TrainConfig, setting_notes
from contrastkit.training.settings import listed


def _actions(command: str) -> dict[str, argparse.Action]:
    """``command``'s flags -> their argparse actions."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.option_strings[0]: a for a in sub.choices[command]._actions if a.option_strings}


def _choices(command: str) -> dict[str, tuple[str, ...] | None]:
    """``command``'s flags -> their choices (``None``: any value)."""
    return {
        flag: tuple(a.choices) if a.choices is not None else None
        for flag, a in _actions(command).items()
    }


def test_senteval_flags_take_their_choices_from_the_constants() -> None:
    choices = _choices("senteval")
    assert choices["--precision"] == tuple(PRECISIONS)
    assert choices["--pooling"] == POOLINGS
    assert choices["--classifier"] == CLASSIFIERS
    assert senteval.TASKS.split(",") == list(TASKS)


def test_simcse_flags_take_their_choices_from_the_constants() -> None:
    choices = _choices("simcse")
    assert choices["--senteval-classifier"] == CLASSIFIERS
    assert choices["--sts-format"] == STS_FORMATS
    assert choices["--pooling"] == POOLINGS
    assert choices["--precision"] == tuple(PRECISIONS)
    assert simcse.CHOICES["--senteval-classifier"] == CLASSIFIERS


def test_the_transfer_classifier_refuses_a_name_it_does_not_declare() -> None:
    for kind in CLASSIFIERS:
        Fitting(kind)
    try:
        Fitting("svm")
    except ValueError as error:
        assert str(error) == "--classifier must be sklearn or pytorch, got 'svm'"
    else:
        raise AssertionError("Fitting('svm') was accepted")


def test_the_default_classifier_and_folds_are_the_declared_ones() -> None:
    """SentEval's first classifier and its fold count are the defaults of the command, of
    the classifiers' fitting, of a run's config and of the evaluation itself."""
    actions = _actions("senteval")
    assert actions["--classifier"].default == CLASSIFIERS[0] == Fitting().kind
    assert TrainConfig().senteval_classifier == CLASSIFIERS[0]
    assert actions["--kfold"].default == KFOLD
    assert inspect.signature(run_senteval).parameters["kfold"].default == KFOLD


def test_the_text_modality_s_notes_come_from_its_constants() -> None:
    """``train --help`` on the text settings: their names and unset values are the text
    modality's notes, written from the encoder's and SentEval's constants."""
    assert setting_notes("pooling") == (
        f"text: {listed(POOLINGS)}; default the model folder's, else {DEFAULT_POOLING}"
    )
    assert DEFAULT_MODEL in setting_notes("text_model")
    assert setting_notes("senteval_classifier") == f"text: {listed(CLASSIFIERS)}"
    assert setting_notes("senteval_tasks") == f"text: default all {len(TASKS)}"
    assert setting_notes("sts_format").startswith(f"text: {listed(STS_FORMATS)};")
    assert TrainConfig(dataset="sst5").pooling is None  # resolved by the encoder, not here


def test_the_names_and_the_cli_parser_load_without_scikit_learn() -> None:
    code = (
        "import sys\n"
        "from contrastkit.text.senteval_names import CLASSIFIERS, TASKS\n"
        "from contrastkit.cli import build_parser\n"
        "build_parser()\n"
        "assert 'sklearn' not in sys.modules, 'sklearn imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
