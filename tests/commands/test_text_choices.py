"""The text commands' named values are declared once: ``senteval``'s and ``simcse``'s
flags take their choices from the constants that define them (the engine's precisions,
the encoder's poolings, SentEval's classifiers and tasks, the STS formats), which the text
modality's config check also uses, and the names SentEval's flags need load without
scikit-learn."""

from __future__ import annotations

import argparse
import subprocess
import sys

from contrastkit.cli import build_parser
from contrastkit.commands import senteval, simcse
from contrastkit.engine import PRECISIONS
from contrastkit.text.data import STS_FORMATS
from contrastkit.text.encoder import POOLINGS
from contrastkit.text.senteval import TASKS
from contrastkit.text.senteval.transfer import Fitting
from contrastkit.text.senteval_names import CLASSIFIERS, spoken


def _choices(command: str) -> dict[str, tuple[str, ...] | None]:
    """``command``'s flags -> their choices (``None``: any value)."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices[command]
    return {
        a.option_strings[0]: tuple(a.choices) if a.choices is not None else None
        for a in parser._actions
        if a.option_strings
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


def test_spoken_lists_the_allowed_values() -> None:
    assert spoken(("a",)) == "a"
    assert spoken(CLASSIFIERS) == "sklearn or pytorch"
    assert spoken(("cls", "mean", "null")) == "cls, mean or null"


def test_the_names_and_the_cli_parser_load_without_scikit_learn() -> None:
    code = (
        "import sys\n"
        "from contrastkit.text.senteval_names import CLASSIFIERS, TASKS\n"
        "from contrastkit.cli import build_parser\n"
        "build_parser()\n"
        "assert 'sklearn' not in sys.modules, 'sklearn imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
