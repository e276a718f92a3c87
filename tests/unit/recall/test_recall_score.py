from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oharness.recall.score import DEFAULT_PARAMS
from oharness.recall.scoring import term_weight

_terms = st.lists(
    st.tuples(st.integers(0, 20_000), st.sampled_from([0.0, 0.02, 0.08, 0.25])), max_size=30
)


@given(_terms, st.integers(0, 20_000))
def test_weights_in_bulk_are_the_single_weights(
    terms: list[tuple[int, float]], extra_notes: int
) -> None:
    note_count = max([frequency for frequency, _ in terms], default=0) + extra_notes
    frequencies = np.array([frequency for frequency, _ in terms], dtype=np.int32)
    priors = np.array([prior for _, prior in terms], dtype=np.float64)
    expected = [float(term_weight(f, note_count, p)) for f, p in terms]
    found = term_weight(frequencies, note_count, priors, DEFAULT_PARAMS).tolist()
    assert found == pytest.approx(expected, rel=1e-12, abs=1e-15)
