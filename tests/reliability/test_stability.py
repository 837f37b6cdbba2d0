"""Repeat-scoring stability from hand-made repeats: applicable criteria, non-unanimous ones, rates."""

import pytest

from omnidr.reliability import stability_of


def test_rates_count_only_criteria_decided_every_time_and_not_all_na():
    a = {"x1": ("C-FC", "pass"), "x2": ("C-FC", "fail"), "x3": ("R-CS", "na"), "x4": ("R-CS", "pass")}
    b = {"x1": ("C-FC", "pass"), "x2": ("C-FC", "pass"), "x3": ("R-CS", "na"), "x4": ("R-CS", "skipped")}
    c = {"y1": ("C-FC", "pass"), "y2": ("P-RI", "pass"), "y3": ("P-RI", "fail"), "y4": ("P-RI", "pass")}
    d = {"y1": ("C-FC", "fail"), "y2": ("P-RI", "pass"), "y3": ("P-RI", "fail"), "y4": ("P-RI", "na")}
    s = stability_of({("sys", "t1"): [a, b], ("sys", "t2"): [c, d]}, "judge-k", replicates=200)
    one, two = s.reports
    # t1: x3 is N/A every time, x4 was skipped once: x1 and x2 count, x2 differs
    assert (one.applicable, one.non_unanimous, one.rate) == (2, ["x2"], 0.5)
    # t2: y4 pass then N/A is a difference; y1 differs too
    assert (two.applicable, sorted(two.non_unanimous), two.rate) == (4, ["y1", "y4"], 0.5)
    assert s.mean_rate.value == pytest.approx(0.5) and s.pooled_rate == pytest.approx(3 / 6)
    rows = {d.direction: (d.applicable, d.non_unanimous) for d in s.by_direction}
    assert rows == {"C-FC": (3, 2), "P-RI": (3, 1)}
    assert s.repeats == 2 and s.judge == "judge-k"
