"""Studies: a paper table's claim measured over arms × seeds to convergence, with a
verdict rule declared before the runs (``contrastkit study CONFIG``); a suite gathers
several studies as the columns of one table (:mod:`.suite`)."""

from .config import Arm, Study, load_study
from .report import collect, write_report
from .runner import DeadlineError, Progress, run_study, status
from .stats import Interval, Paired, convergence, paired, t_interval, verdict
from .suite import Suite, load_config, write_suite_report

__all__ = [
    "Arm",
    "DeadlineError",
    "Interval",
    "Paired",
    "Progress",
    "Study",
    "Suite",
    "collect",
    "convergence",
    "load_config",
    "load_study",
    "paired",
    "run_study",
    "status",
    "t_interval",
    "verdict",
    "write_report",
    "write_suite_report",
]
