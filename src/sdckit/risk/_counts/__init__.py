"""Group sizes and counts: the counting kernels every measure and bound stands on (private)."""
