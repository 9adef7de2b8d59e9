"""Several training processes for one study: ``contrastkit study CONFIG --jobs N``.

A process claims a run before training it (:mod:`.runner`), so processes started on the
same study share its runs without talking to each other. :func:`run_jobs` starts ``N`` of
them as children of one command and waits for all; the command then writes the report
once. Each child trains with its config's ``threads`` (1 by default), so on a CPU machine
``--jobs`` is the number of cores to fill. On a machine with several GPUs each child sees
one of them (``CUDA_VISIBLE_DEVICES``, round robin), so ``device: auto`` or ``cuda`` puts
one run on each GPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

VISIBLE = "CUDA_VISIBLE_DEVICES"


def worker_env(index: int, environ: Mapping[str, str], gpus: int) -> dict[str, str]:
    """The environment of child ``index``: ``environ`` with :data:`VISIBLE` narrowed to
    one of the ``gpus`` devices it lists (all ``gpus`` of the machine when unset), round
    robin over children; unchanged below two GPUs."""
    env = dict(environ)
    if gpus < 2:
        return env
    listed = [d.strip() for d in environ.get(VISIBLE, "").split(",") if d.strip()]
    devices = listed or [str(i) for i in range(gpus)]
    env[VISIBLE] = devices[index % len(devices)]
    return env


def run_jobs(
    argv: Sequence[str], jobs: int, gpus: int | None = None, options: Sequence[str] = ()
) -> list[int]:
    """Run ``jobs`` processes of ``contrastkit *options study *argv`` at once (``options``:
    the command line's own, such as ``--import MODULE``; this interpreter,
    :func:`worker_env` each; ``gpus`` defaults to ``torch.cuda.device_count()``) and
    return their exit codes. Interrupted (Ctrl-C, or SIGTERM, which the command line turns
    into an exception: :func:`contrastkit._signals.sigterm_unwinds`), it sends each child
    SIGTERM, which releases its claim and exits, and waits for them; each run resumes from
    its last saved epoch when the study is run again."""
    if gpus is None:
        import torch

        gpus = torch.cuda.device_count()
    command = [sys.executable, "-m", "contrastkit", *options, "study", *argv]
    children: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(jobs):
            children.append(subprocess.Popen(command, env=worker_env(i, os.environ, gpus)))
        return [child.wait() for child in children]
    except BaseException:
        for child in children:
            child.terminate()
        for child in children:
            child.wait()
        raise
