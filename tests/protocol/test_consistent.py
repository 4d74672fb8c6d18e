"""protocol simulate's consistent count: against brute force, the redaction marker consistent with anything."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.protocol._simulate import consistent_below_k
from sdckit.protocol._wire import REDACTED


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.sampled_from("ab"), st.booleans(), st.booleans()), min_size=1, max_size=40),
    st.integers(1, 4),
)
def test_consistent_below_k_matches_brute_force(rows: list[tuple[int, str, bool, bool]], k: int) -> None:
    source = [(x, s) for x, s, _, _ in rows]
    released = [(REDACTED if hx else x, REDACTED if hs else s) for x, s, hx, hs in rows]
    counts = [sum(all(r is REDACTED or r == u for u, r in zip(user, row, strict=True)) for row in released)
              for user in source]
    assert consistent_below_k(source, released, k) == sum(c < k for c in counts) / len(source)
