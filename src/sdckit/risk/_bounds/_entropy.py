"""What entropy does and does not say about exposure (anonymity notes §4)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from sdckit._checks import REL_TOL, as_scalar_or_array, check_t
from sdckit.errors import ParameterError

_INV_LN2 = 1.0 / math.log(2.0)


def _check_h(H: ArrayLike) -> np.ndarray[Any, np.dtype[np.float64]]:
    arr = np.asarray(H, dtype=np.float64)
    if np.any(~np.isfinite(arr) | (arr < 0)):
        raise ParameterError(f"H={H!r} must be an entropy in bits, >= 0.")
    return arr


def _nudge(t: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """t as the exposure functions read it: a relative 1e-12 up (so t = k / n means k), at most 1."""
    return np.minimum(1.0, t * (1.0 + REL_TOL))


def entropy_exposure_bound(H: ArrayLike, t: ArrayLike) -> Any:
    """Upper bound on the exposure from the entropy alone: Q(t) <= min(1, H / log2(1/t)).

    Parameters
    ----------
    H : Shannon entropy of the joint distribution, in bits.
    t : share of rows (0..1).

    Returns
    -------
    A share of users (0..1), float or array (broadcast of H and t).

    Notes
    -----
    [seed; anonymity notes §4]: each exposed user's value has probability <= t, so contributes at
    least log2(1/t) bits. With n = 2^16, H = 8 bits and t = 2^-16 it allows up to 50% unique users:
    the reading "each value is shared by about n / 2^H users" holds only for near-uniform data.

    Examples
    --------
    >>> round(entropy_exposure_bound(8.0, 2.0**-16), 9)
    0.5
    """
    h = _check_h(H)
    tt = _nudge(check_t(t))
    with np.errstate(divide="ignore"):
        level = -np.log2(tt)
        out = np.where(
            tt <= 0, 0.0, np.where(level <= 0, 1.0, np.minimum(1.0, h / np.where(level > 0, level, 1.0)))
        )
    return as_scalar_or_array(np.asarray(out, dtype=np.float64), np.ndim(out) == 0)


def _sharp_one(h: float, t: float) -> float:
    from scipy.optimize import brentq  # lazy: start-up time

    if t <= 0:
        return 0.0
    level = -math.log2(t)  # not log2(1 / t): 1 / t overflows for subnormal t
    if h >= level:  # g(1) = L <= H: nothing excludes Q = 1
        return 1.0

    def g(q: float) -> float:
        rest = 1.0 - q
        return q * level + (rest * math.log2(1.0 / rest) if rest > 0 else 0.0) - h

    # g rises up to 1 - q* = 2^-(L + 1/ln 2), then falls to L > H: the root below q* is the answer
    q_star = 1.0 - 2.0 ** (-(level + _INV_LN2))
    if g(q_star) <= 0:
        return 1.0
    root = float(brentq(g, 0.0, q_star, xtol=1e-15, rtol=4 * np.finfo(float).eps))
    return min(1.0, root + 1e-12)  # the root is found to ~1e-15: round toward privacy


def entropy_exposure_bound_sharp(H: ArrayLike, t: ArrayLike) -> Any:
    """Sharp entropy bound: the largest Q with Q log2(1/t) + (1 - Q) log2(1/(1 - Q)) <= H.

    [derived; anonymity notes §4]: the exposed share Q carries at least Q log2(1/t) bits and the
    rest at least (1 - Q) log2(1/(1 - Q)) (all of it in one group). Attained by Q n unique users plus
    one big group: n = 2^16, H = 8 bits, t = 2^-16 gives 46.97% instead of 50%.

    Examples
    --------
    >>> round(entropy_exposure_bound_sharp(8.0, 2.0**-16), 4)
    0.4697
    """
    h = _check_h(H)
    tt = _nudge(check_t(t))
    hb, tb = np.broadcast_arrays(h, tt)
    out = np.array([_sharp_one(float(a), float(b)) for a, b in zip(hb.ravel(), tb.ravel(), strict=True)])
    return as_scalar_or_array(out.reshape(hb.shape), hb.ndim == 0)
