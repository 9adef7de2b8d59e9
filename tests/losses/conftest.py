"""Fixtures shared by the loss tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture
def count_calls(monkeypatch: pytest.MonkeyPatch) -> Callable[[object, str], list[int]]:
    """``count_calls(module, name)`` wraps ``module.name`` for the test so that each call
    appends to the returned list: which calls take a fused path."""

    def install(module: object, name: str) -> list[int]:
        calls: list[int] = []
        original = getattr(module, name)

        def counted(*args, **kwargs):
            calls.append(1)
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
        return calls

    return install
