"""Fleiss' kappa on the textbook worked example (Fleiss 1971, 10 subjects, 14 raters, 5 categories: 0.210)."""

import numpy as np
import pytest

from omnidr.reliability import fleiss_kappa

TABLE = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
         [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def test_the_worked_example_gives_0_210():
    assert fleiss_kappa(np.array(TABLE, dtype=float)) == pytest.approx(0.210, abs=5e-4)


def test_perfect_agreement_is_one_and_a_single_category_is_undefined():
    assert fleiss_kappa(np.array([[3, 0], [0, 3], [3, 0]], dtype=float)) == pytest.approx(1.0)
    assert fleiss_kappa(np.array([[3, 0], [3, 0]], dtype=float)) is None
