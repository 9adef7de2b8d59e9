"""Studies: a paper table's claim measured over arms × seeds to convergence, with a
verdict rule declared before the runs (``contrastkit study CONFIG``)."""

from .config import Arm, Study, load_study
from .report import collect, write_report
from .runner import DeadlineError, Progress, run_study, status
from .stats import Interval, Paired, convergence, paired, t_interval, verdict

__all__ = [
    "Arm",
    "DeadlineError",
    "Interval",
    "Paired",
    "Progress",
    "Study",
    "collect",
    "convergence",
    "load_study",
    "paired",
    "run_study",
    "status",
    "t_interval",
    "verdict",
    "write_report",
]
