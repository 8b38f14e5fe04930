"""The tolerant comparison of printed contraction results (tests/support/printed.py) accepts
last-digit and padding differences and nothing more."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.printed import assert_prints_match_up_to_rounding, differences


def test_one_ulp_apart_prints_match() -> None:
    x = np.array([[7929.6, 6003.2]], np.float32)
    y = x.copy()
    y[0, 0] = np.nextafter(y[0, 0], np.float32(np.inf))
    assert str(x) != str(y)
    assert_prints_match_up_to_rounding(str(x), str(y))


def test_padding_and_last_printed_digit_may_differ_when_printing_rounded() -> None:
    assert not differences("[[-0.92958  1.5   ]]", "[[-0.92957 1.5]]", rounded=True)
    assert differences("[[-0.92958  1.5   ]]", "[[-0.92957 1.5]]")
    assert differences("[[-0.92958]]", "[[-0.92956]]", rounded=True)


@pytest.mark.parametrize("ours,theirs", [
    ("[[1.5 2.5]]", "[[1.5 2.6]]"),
    ("[[7929.6 1.]]", "[[7929.7 1.]]"),
    ("float32[2]", "float64[2]"),
    ("[[1.5 2.5]]", "[[1.5 2.5 3.5]]"),
])
def test_real_differences_are_reported(ours: str, theirs: str) -> None:
    with pytest.raises(AssertionError):
        assert_prints_match_up_to_rounding(ours, theirs)


def test_a_printed_difference_of_products_is_bounded_by_the_products_size() -> None:
    one_ulp = float(np.finfo(np.float32).eps)
    assert differences(f"{one_ulp:.8g}", f"{2 * one_ulp:.8g}")
    assert not differences(f"{one_ulp:.8g}", f"{2 * one_ulp:.8g}", scale=2.0)
    assert differences(f"{one_ulp:.8g}", f"{40 * one_ulp:.8g}", scale=2.0)
