"""How the report writes shares and bounds: percent everywhere, a bound of 1 as "no guarantee"."""

from __future__ import annotations

import re

NO_GUARANTEE = "no guarantee"
"""What a bound of 1 (100 % of users) says: nothing; the report never prints it as a figure."""


def pct(x: float | None) -> str:
    """A share (0..1) in percent, 3 significant digits: ``pct(0.0512) == "5.12 %"``; None is "–"."""
    if x is None:
        return "–"
    return f"{100 * x:.3g} %"


def is_vacuous(bound: float) -> bool:
    """True for a bound that says nothing (>= 1 - 1e-9 of users)."""
    return bound >= 1 - 1e-9


def bound_text(bound: float, *, prefix: str = "at most ") -> str:
    """A guarantee in words: ``"at most 4.2 %"``, or ``"no guarantee"`` when the bound is 1."""
    return NO_GUARANTEE if is_vacuous(bound) else f"{prefix}{pct(bound)}"


_SHARE = re.compile(r"\b(is|would be|bound|budget) (\d+(?:\.\d+)?(?:e-?\d+)?)(?![\d.eE%])")


def in_percent(text: str) -> str:
    """The planner's reasons with their shares (0..1) written in percent, a bound of 1 as no guarantee."""

    def repl(m: re.Match[str]) -> str:
        v = float(m.group(2))
        if m.group(1) != "budget" and is_vacuous(v):
            return f"{m.group(1)} 1 ({NO_GUARANTEE})"
        return f"{m.group(1)} {pct(v)}"

    return _SHARE.sub(repl, text)
