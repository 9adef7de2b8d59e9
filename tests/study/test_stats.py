"""The study statistics on constructed inputs whose answers are known."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from contrastkit.study.stats import (
    HOLDS,
    MEAN,
    NOT_CONVERGED,
    RANGE,
    REVERSED,
    TOO_FEW_SEEDS,
    WITHIN_NOISE,
    adjusted_verdict,
    convergence,
    holm,
    paired,
    t_interval,
    verdict,
)


def test_t_interval_matches_the_textbook_formula() -> None:
    # values 1..5: mean 3, s = sqrt(2.5), t_{0.975, 4} = 2.7764451051977987
    interval = t_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5)
    assert interval.mean == pytest.approx(3.0)
    assert interval.std == pytest.approx(math.sqrt(2.5))
    assert (interval.low, interval.high) == pytest.approx((3.0 - half, 3.0 + half))
    wider = t_interval([1.0, 2.0, 3.0, 4.0, 5.0], confidence=0.99)
    assert wider.low < interval.low and wider.high > interval.high


def test_t_interval_of_one_value_has_no_width_and_bad_input_raises() -> None:
    one = t_interval([0.7])
    assert one.mean == 0.7 and math.isnan(one.low) and math.isnan(one.high)
    with pytest.raises(ValueError, match="at least one"):
        t_interval([])
    with pytest.raises(ValueError, match="confidence"):
        t_interval([1.0, 2.0], confidence=1.5)


def test_paired_test_agrees_with_scipy_ttest_rel() -> None:
    arm = {0: 0.71, 1: 0.74, 2: 0.69, 3: 0.75, 4: 0.73, 9: 0.5}
    base = {0: 0.70, 1: 0.71, 2: 0.70, 3: 0.72, 4: 0.70, 7: 0.9}  # seeds 7, 9 unpaired
    result = paired(arm, base)
    assert result is not None and result.seeds == [0, 1, 2, 3, 4]
    ref = stats.ttest_rel([arm[s] for s in range(5)], [base[s] for s in range(5)])
    assert result.t == pytest.approx(ref.statistic)
    assert result.p == pytest.approx(ref.pvalue)
    diffs = [arm[s] - base[s] for s in range(5)]
    ci = stats.t.interval(0.95, 4, loc=sum(diffs) / 5, scale=stats.sem(diffs))
    assert (result.difference.low, result.difference.high) == pytest.approx(ci)


def test_paired_degenerate_cases() -> None:
    assert paired({0: 1.0}, {1: 1.0}) is None
    same = paired({0: 0.5, 1: 0.6}, {0: 0.5, 1: 0.6})
    assert same is not None and same.t == 0.0 and same.p == 1.0
    shifted = paired({0: 0.75, 1: 1.0, 2: 1.25}, {0: 0.5, 1: 0.75, 2: 1.0})  # exact in binary
    assert shifted is not None and shifted.t == math.inf and shifted.p == 0.0


@pytest.mark.parametrize(
    ("arm", "better", "expected"),
    [
        ([0.80, 0.82, 0.81, 0.83], "higher", HOLDS),  # Δ ≈ +0.1, tight
        ([0.60, 0.62, 0.61, 0.63], "higher", REVERSED),
        ([0.72, 0.68, 0.73, 0.69], "higher", WITHIN_NOISE),  # Δ straddles 0
        ([0.60, 0.62, 0.61, 0.63], "lower", HOLDS),  # e.g. an error metric
        ([0.80, 0.82, 0.81, 0.83], "lower", REVERSED),
    ],
)
def test_every_verdict_branch(arm: list[float], better: str, expected: str) -> None:
    base = {s: v for s, v in enumerate([0.70, 0.72, 0.71, 0.73])}
    result = paired(dict(enumerate(arm)), base)
    assert verdict(result, better) == expected


def test_not_converged_and_too_few_seeds_come_first() -> None:
    base = {0: 0.70, 1: 0.72, 2: 0.71}
    result = paired({0: 0.80, 1: 0.82, 2: 0.81}, base)
    assert verdict(result, converged=False) == NOT_CONVERGED
    two = paired({0: 0.80, 1: 0.82}, base)
    assert verdict(two) == TOO_FEW_SEEDS
    assert verdict(two, min_seeds=2) == HOLDS
    assert verdict(None) == TOO_FEW_SEEDS
    with pytest.raises(ValueError, match="better"):
        verdict(result, better="up")


def test_convergence_on_flat_rising_and_noisy_curves() -> None:
    epochs = list(range(1, 51))
    flat = [0.5 + 0.3 * (1 - math.exp(-e / 5)) for e in epochs]  # plateaued by epoch 40
    rising = [0.5 + 0.004 * e for e in epochs]  # +0.04 over epochs 40-50
    check = convergence(epochs, flat, 50)
    assert check.converged and check.window == (40, 50) and abs(check.change) < 1e-3
    check = convergence(epochs, rising, 50)
    assert not check.converged and check.change == pytest.approx(0.04)
    # ±1 point jitter around a flat line: the fitted change stays small
    jitter = [0.8 + (0.01 if e % 2 else -0.01) for e in epochs]
    assert convergence(epochs, jitter, 50).converged
    # a loss falling 5 % over the window fails a 1 % relative tolerance
    loss = [2.0 - 0.01 * e for e in epochs]
    assert not convergence(epochs, loss, 50, tolerance=0.01, scale=MEAN).converged


def test_convergence_needs_two_points_in_the_window() -> None:
    check = convergence([10, 20, 30], [0.5, 0.6, 0.6], 50)
    assert not check.converged and math.isnan(check.change)
    with pytest.raises(ValueError, match="window"):
        convergence([1, 2], [0.1, 0.2], 2, window=0.0)


def test_convergence_on_a_loss_is_scaled_by_its_range_not_its_level() -> None:
    epochs = list(range(1, 51))
    # near a high floor (log 63 = 4.143): falls 0.3 in all, still 0.06 over epochs 40-50
    near_floor = [4.143 + 0.3 * (1 - e / 50) for e in epochs]
    # towards a low floor: falls 2.2 in all, about 0.03 (6 % of its level) over epochs 40-50
    towards_zero = [0.5 + 2.5 * math.exp(-e / 10) for e in epochs]
    assert convergence(epochs, near_floor, 50, tolerance=0.02, scale=MEAN).converged
    check = convergence(epochs, near_floor, 50, tolerance=0.02, scale=RANGE)
    assert not check.converged and check.change == pytest.approx(-0.06 / 0.294)
    assert not convergence(epochs, towards_zero, 50, tolerance=0.02, scale=MEAN).converged
    assert convergence(epochs, towards_zero, 50, tolerance=0.02, scale=RANGE).converged
    assert convergence(epochs, [1.0] * 50, 50, scale=RANGE).change == 0.0


def test_a_curve_with_a_nan_or_inf_anywhere_has_not_converged() -> None:
    """A non-finite first point made the range NaN (max and min keep a leading NaN),
    and a NaN range read as a flat curve: a loss still falling 10 % a step passed."""
    epochs = list(range(1, 11))
    falling = [9.0 - e for e in epochs]
    assert not convergence(epochs, falling, 10, tolerance=0.02, scale=RANGE).converged
    for bad in (math.nan, math.inf):
        for at in (0, 4, 9):
            curve = [*falling[:at], bad, *falling[at + 1 :]]
            check = convergence(epochs, curve, 10, tolerance=0.02, scale=RANGE)
            assert not check.converged and math.isnan(check.change)
            assert not convergence(epochs, [*[0.5] * at, bad, *[0.5] * (9 - at)], 10).converged


def test_the_window_keeps_its_first_epoch_despite_rounding() -> None:
    # 90 - 0.7·90 is 27.000000000000007 in floats: epoch 27 belongs to the window
    check = convergence(list(range(1, 91)), [0.5] * 90, 90, window=0.7)
    assert check.window == (27, 90) and check.points == 64


def test_convergence_refuses_fewer_points_than_the_rule_needs() -> None:
    check = convergence([1, 2, 3], [0.7, 0.7, 0.7], 3, window=0.5, min_points=4)
    assert not check.converged and check.change == 0.0
    assert (check.points, check.min_points) == (2, 4)
    assert convergence([3, 4, 5, 6], [0.7] * 4, 6, window=0.5, min_points=4).converged


def test_holm_matches_hand_computed_values() -> None:
    # sorted 0.01, 0.02, 0.03, 0.04, 0.2 (m = 5): 5·0.01 = 0.05, 4·0.02 = 0.08,
    # 3·0.03 = 0.09, 2·0.04 = 0.08 → 0.09 (monotone), 1·0.2 = 0.2
    assert holm([0.04, 0.01, 0.2, 0.03, 0.02]) == pytest.approx([0.09, 0.05, 0.2, 0.09, 0.08])
    # capped at 1, and an untested entry counts as p = 1 in the family
    assert holm([0.5, 0.3]) == pytest.approx([0.6, 0.6])
    assert holm([0.01, None, float("nan")]) == [pytest.approx(0.03), None, None]
    assert holm([]) == []
    with pytest.raises(ValueError, match="p-values"):
        holm([1.5])


def test_adjusted_verdict_reads_the_holm_p_and_the_sign() -> None:
    up = paired({s: 1.0 + 0.1 * s for s in range(5)}, {s: 0.0 for s in range(5)})
    assert up is not None and up.p < 0.05
    assert adjusted_verdict(up, 0.01) == HOLDS
    assert adjusted_verdict(up, 0.2) == WITHIN_NOISE  # the interval alone would say holds
    assert verdict(up) == HOLDS
    assert adjusted_verdict(up, 0.01, better="lower") == REVERSED
    assert adjusted_verdict(up, 0.01, converged=False) == NOT_CONVERGED
    assert adjusted_verdict(up, None) == WITHIN_NOISE
    assert adjusted_verdict(up, 0.01, min_seeds=6) == TOO_FEW_SEEDS
