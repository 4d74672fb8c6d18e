"""Bounds on the exposure from marginals, statistics and entropy (private; above the measures)."""
