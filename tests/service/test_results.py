"""The service's result values are the core's, and every JSON output rounds alike."""

from __future__ import annotations

from citeline.core.answering import results as core_results
from citeline.core.documents import Hit
from citeline.service import results


def test_the_front_ends_names_are_the_cores_values() -> None:
    assert results.Answer is core_results.Answer and results.Hit is Hit
    assert results.rounded(0.12345678) == 0.123457
    assert results.rounded(0.12345678, results.SECONDS_DIGITS) == 0.1235
    assert results.rounded(None) is None
