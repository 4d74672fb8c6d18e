"""Measures of one table: exposure, individual risk, l-diversity, SUDA, linkage, the release (private)."""
