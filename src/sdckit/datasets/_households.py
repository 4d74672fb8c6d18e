"""A synthetic household survey made for the purpose: households in regions and districts.

Modelled on the layout of sdcMicro's ``createDat`` (nuts1 > nuts2 geography, household size,
person-level age group, sex and nationality), drawn afresh here with numpy: no record is a real
person. Big enough to show targeted record swapping (a few districts hold rare combinations).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from sdckit._estimator import RandomState, as_generator

__all__ = ["make_households"]

_SIZES = np.array([1, 2, 3, 4, 5, 6])
_SIZE_P = np.array([0.30, 0.32, 0.16, 0.14, 0.06, 0.02])


def make_households(n_households: int = 1000, *, random_state: RandomState = 2026) -> pl.DataFrame:
    """A household survey: one row per person, ``hid`` (household id), ``region`` (1..4), ``district``
    (region * 10 + 1..5, districts of unequal size), ``hsize``, ``age_group`` (1..8), ``sex`` (1/2),
    ``national`` (1 citizen, 2 foreign: 8 %, clustered in households), ``income`` (household, lognormal)
    and ``weight`` (a design weight, 50 for everyone).

    Examples
    --------
    >>> d = make_households(200)
    >>> d["hid"].n_unique(), d.columns[:4]
    (200, ['hid', 'region', 'district', 'hsize'])
    """
    if isinstance(n_households, bool) or not isinstance(n_households, int) or n_households < 1:
        raise ValueError(f"n_households={n_households!r} is a whole number >= 1.")
    rng = as_generator(random_state)
    m = n_households
    region = rng.choice(4, m, p=[0.4, 0.3, 0.2, 0.1]) + 1
    district = region * 10 + rng.choice(5, m, p=[0.35, 0.25, 0.2, 0.15, 0.05]) + 1
    hsize = rng.choice(_SIZES, m, p=_SIZE_P)
    foreign = rng.random(m) < 0.08
    income = np.round(rng.lognormal(10.3, 0.6, m), -1)
    hid = np.repeat(np.arange(1, m + 1), hsize)
    person = np.concatenate([np.arange(s) for s in hsize])
    adult = person < np.repeat(np.minimum(hsize, 2), hsize)
    age = np.where(adult, rng.integers(3, 9, hid.size), rng.integers(1, 4, hid.size))
    return pl.DataFrame({
        "hid": hid,
        "region": np.repeat(region, hsize),
        "district": np.repeat(district, hsize),
        "hsize": np.repeat(hsize, hsize),
        "age_group": age,
        "sex": rng.integers(1, 3, hid.size),
        "national": np.where(np.repeat(foreign, hsize), 2, 1),
        "income": np.repeat(income, hsize),
        "weight": np.full(hid.size, 50.0),
    })
