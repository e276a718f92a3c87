from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from oharness.recall.score import term_weight, term_weights

_terms = st.lists(
    st.tuples(st.integers(0, 20_000), st.sampled_from([0.0, 0.02, 0.08, 0.25])), max_size=30
)


@given(_terms, st.integers(0, 20_000))
def test_weights_in_bulk_are_exactly_the_single_weights(
    terms: list[tuple[int, float]], extra_notes: int
) -> None:
    note_count = max([frequency for frequency, _ in terms], default=0) + extra_notes
    frequencies = [frequency for frequency, _ in terms]
    priors = [prior for _, prior in terms]
    expected = [term_weight(f, note_count, p) for f, p in terms]
    assert term_weights(frequencies, note_count, priors) == expected
