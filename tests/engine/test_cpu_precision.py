"""The warning for a half precision that a CPU would run emulated (engine.cpu_precision)."""

from __future__ import annotations

import warnings

import pytest

from contrastkit.engine import Engine
from contrastkit.engine import cpu_precision as cp


@pytest.fixture
def cpu(monkeypatch: pytest.MonkeyPatch):
    """``set(machine, flags)``: this process's CPU as the module sees it; no warning given
    yet."""
    monkeypatch.setattr(cp, "_WARNED", set())

    def set_cpu(machine: str, flags: frozenset[str] | None) -> None:
        monkeypatch.setattr(cp.platform, "machine", lambda: machine)
        monkeypatch.setattr(cp, "cpu_flags", lambda: flags)

    return set_cpu


def _engine_warnings(precision: str) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Engine(device="cpu", precision=precision)
    return [w for w in caught if issubclass(w.category, cp.EmulatedPrecisionWarning)]


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_a_half_precision_without_its_cpu_units_warns_once(cpu, precision: str) -> None:
    cpu("x86_64", frozenset({"sse2", "avx2", "f16c"}))
    first = _engine_warnings(precision)
    assert len(first) == 1
    text = str(first[0].message)
    assert text.startswith(f"precision {precision} on this CPU runs emulated (no avx512_")
    assert "use precision fp32" in text and "\n" not in text
    assert _engine_warnings(precision) == []  # once per process


@pytest.mark.parametrize(
    ("machine", "flags", "precision"),
    [
        ("x86_64", {"avx2", "avx512_bf16"}, "bf16"),
        ("x86_64", {"avx2", "amx_bf16", "amx_tile"}, "bf16"),
        ("x86_64", {"avx512_fp16"}, "fp16"),
        ("aarch64", {"asimd", "bf16"}, "bf16"),
        ("aarch64", {"asimd", "asimdhp"}, "fp16"),
    ],
)
def test_no_warning_where_the_cpu_has_the_units(cpu, machine, flags, precision) -> None:
    cpu(machine, frozenset(flags))
    assert cp.native(precision) is True
    assert _engine_warnings(precision) == []


def test_no_warning_where_it_cannot_tell_or_for_fp32(cpu) -> None:
    cpu("x86_64", None)  # no /proc/cpuinfo
    assert cp.native("bf16") is None and _engine_warnings("bf16") == []
    cpu("riscv64", frozenset({"v"}))  # an architecture without a table
    assert cp.native("bf16") is None and _engine_warnings("bf16") == []
    cpu("x86_64", frozenset({"avx2"}))
    assert _engine_warnings("fp32") == []


def test_this_machines_flags_are_read() -> None:
    flags = cp.cpu_flags()
    assert flags is None or (isinstance(flags, frozenset) and all(" " not in f for f in flags))
