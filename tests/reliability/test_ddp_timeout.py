"""A frozen rank ends a distributed job with an error after the process-group timeout
(issue 17 item 6), bounded in time: SIGSTOP one rank of a 2-process gloo group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from contrastkit import distributed

WORKER = """
import time, torch
from contrastkit import distributed
torch.set_num_threads(1)
distributed.init_from_env()
print("ready", flush=True)
x = torch.ones(4)
while True:
    torch.distributed.all_reduce(x)
    time.sleep(0.01)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX signals")
def test_frozen_rank_fails_the_job_within_the_timeout() -> None:
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}
    env.update(WORLD_SIZE="2", OMP_NUM_THREADS="1", **{distributed.TIMEOUT_ENV: "3"})
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER],
            env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        procs[1].send_signal(signal.SIGSTOP)
        start = time.monotonic()
        procs[0].wait(timeout=60)
        elapsed = time.monotonic() - start
        stderr = procs[0].stderr.read() if procs[0].stderr else ""
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    assert procs[0].returncode != 0
    assert elapsed < 30, elapsed  # 3 s timeout (+ detection); torch's default is 30 min
    print(f"rank 0 failed {elapsed:.1f} s after rank 1 froze")
    assert "timed out" in stderr.lower() or "timeout" in stderr.lower(), stderr[-500:]


def test_timeout_setting_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(distributed.TIMEOUT_ENV, "abc")
    with pytest.raises(ValueError, match="CONTRASTKIT_DDP_TIMEOUT"):
        distributed.timeout_seconds()
    monkeypatch.setenv(distributed.TIMEOUT_ENV, "45")
    assert distributed.timeout_seconds() == 45.0
    monkeypatch.delenv(distributed.TIMEOUT_ENV)
    assert distributed.timeout_seconds() == distributed.DEFAULT_TIMEOUT_S
