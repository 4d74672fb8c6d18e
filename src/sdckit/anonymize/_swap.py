"""Targeted record swapping of households: sdcMicro's ``recordSwap`` (the census offices' method).

A household's geography (the ``hierarchy`` columns, e.g. region > district) and the ``carry_along``
columns are exchanged with those of a *similar* household in *another area*; every member moves
with its household, nothing else changes. The riskiest households go first:

1. **Risk.** Per record and hierarchy level h, the count c_h of records sharing its
   ``risk_variables`` and its areas down to level h; the record's risk at h is 1 / c_h and a
   household's is the largest of its members' (sdcMicro's ``setRisk``). Or a given per-record
   ``risk`` column (e.g. the individual risk), the household's largest, at every level.
2. **At risk.** A household is at risk at the first level h where its risk exceeds the threshold
   (1 / ``k_anonymity``, or ``risk_threshold``), and must be swapped *across* that level's areas
   (sdcMicro's ``setLevels``; ``k_anonymity=0`` and no ``risk``: none is).
3. **How many.** round(n_households * swap_rate / 2) swaps (ceiling or floor at random), each
   moving two households; shared among the lowest-level areas in proportion to their households,
   fractions rounded at random so the total holds (``distributeDraws``).
4. **Swapping**, from the highest level to the lowest, area by area: at a higher level the
   households at risk there; at the lowest level those at risk there plus households drawn with
   probability proportional to risk (weighted sampling without replacement by the keys
   risk / Exp(1), ``randSample``) up to the area's number of swaps, less those already swapped in
   it. Each finds a donor: the unused household of highest key risk / Exp(1) outside the area
   that equals it on the first similarity profile (e.g. household size), else the next profile;
   none found: the household stays (counted in ``n_not_swapped_``). A household is swapped once.

Random draws from OS entropy unless ``random_state`` (tests and reproductions only).

Reference: Gussenbauer, J. (2021), ``recordSwap`` in R's sdcMicro 5.8.1 (R/recordSwap.R,
src/recordSwap/recordSwap.cpp); the ESS recommendation for the 2021 census (targeted record
swapping with the cell key method).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._estimator import RandomState, as_generator
from sdckit._io import DataSource
from sdckit.anonymize._base import Anonymizer
from sdckit.errors import InputError, ParameterError

__all__ = ["RecordSwapper"]


def _list(value: Sequence[str] | str | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


class RecordSwapper(Anonymizer):
    """Targeted record swapping of whole households between areas, riskiest first (sdcMicro's ``recordSwap``).

    See the module for the algorithm.

    Parameters
    ----------
    household : the household id column (``hid``); every member of a household moves with it.
    hierarchy : the geography columns, highest level first (``region``, ``district``); household-level.
    similar : similarity profiles: a list of lists of household-level columns (a donor equals the
        household on every column of the first profile; if none does, on the second, ...); a flat
        list is one profile; None: any household is similar.
    swap_rate : share of households (0..1) to swap at the lowest level (each swap moves two).
    k_anonymity : a household is at risk at level h when some member's group on ``risk_variables``
        and the areas down to h holds fewer than this many records (0: none is at risk).
    risk_variables : the columns of the at-risk counts (person or household level).
    carry_along : further household-level columns that move with the geography.
    risk : a per-record risk column (0..1, e.g. :func:`sdckit.risk.individual_risk`) instead of the
        counts; a household's risk is its members' largest; ``risk_threshold`` marks those at risk.
    risk_threshold : with ``risk``: at risk when the household's risk exceeds it.
    random_state : None (default: OS entropy), or a seed for tests and reproductions.

    Attributes
    ----------
    n_households_ : int, households.
    n_swaps_ : int, swaps made (pairs of households).
    n_swapped_households_ : int, households that moved (2 per swap).
    n_swapped_records_ : int, records that moved.
    n_not_swapped_ : int, households chosen for a swap with no donor found.
    n_at_risk_ : int, households at risk at some level.
    target_swaps_ : int, swaps asked for by the swap rate.
    swapped_ : bool array (n,), records whose geography changed hands.
    partner_ : int64 array (n,), the row of the partner household's first member (-1: not swapped).
    order_ : int64 array of the swapped households' first rows, in the order they were chosen.
    strata_ : polars DataFrame, per lowest-level area: households, swaps asked (``target``),
        households of the area chosen and swapped (``chosen``), households that left (``out``) and
        came in (``in``).
    margins_ : polars DataFrame, per area of every level: records and households before and after.
    changes_ : dict, per swapped column ``{"cells_changed": ...}``.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"hh": [1, 1, 2, 3, 3, 4], "region": ["a", "a", "a", "b", "b", "b"],
    ...                    "size": [2, 2, 1, 2, 2, 1]})
    >>> sw = RecordSwapper(household="hh", hierarchy=["region"], similar=["size"], swap_rate=1.0,
    ...                    k_anonymity=0, random_state=1)
    >>> out = sw.fit_transform(df)
    >>> sw.n_swapped_households_, out["region"].to_list()
    (4, ['b', 'b', 'b', 'a', 'a', 'a'])
    """

    def __init__(
        self,
        *,
        household: str = "hid",
        hierarchy: Sequence[str] | str = (),
        similar: Sequence[Sequence[str]] | Sequence[str] | str | None = None,
        swap_rate: float = 0.05,
        k_anonymity: int = 3,
        risk_variables: Sequence[str] | str | None = None,
        carry_along: Sequence[str] | str | None = None,
        risk: str | None = None,
        risk_threshold: float = 0.0,
        random_state: RandomState = None,
    ) -> None:
        self.household = household
        self.hierarchy = hierarchy
        self.similar = similar
        self.swap_rate = swap_rate
        self.k_anonymity = k_anonymity
        self.risk_variables = risk_variables
        self.carry_along = carry_along
        self.risk = risk
        self.risk_threshold = risk_threshold
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags

    # --- checks ---------------------------------------------------------------------------------

    def _profiles(self) -> list[list[str]]:
        sim = self.similar
        if sim is None:
            return [[]]
        if isinstance(sim, str):
            return [[sim]]
        items = list(sim)
        if all(isinstance(s, str) for s in items):
            return [[str(s) for s in items]]
        return [_list(s) for s in items]

    def _check(self, frame: pl.DataFrame) -> tuple[list[str], list[list[str]], list[str], list[str]]:
        hier = _list(self.hierarchy)
        if not hier:
            raise ParameterError("hierarchy: name the geography columns, highest level first, e.g. ['region', 'district'].")
        rate = self.swap_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
            raise ParameterError(f"swap_rate={rate!r} is a share of households between 0 and 1, e.g. 0.05.")
        kk = self.k_anonymity
        if isinstance(kk, bool) or not isinstance(kk, int) or kk < 0:
            raise ParameterError(f"k_anonymity={kk!r} is a whole number >= 0 (0: no household is at risk by counts).")
        thr = self.risk_threshold
        if isinstance(thr, bool) or not isinstance(thr, (int, float)) or thr < 0:
            raise ParameterError(f"risk_threshold={thr!r} is a number >= 0.")
        profiles = self._profiles()
        risk_vars = _list(self.risk_variables)
        carry = _list(self.carry_along)
        named = [self.household, *hier, *[c for p in profiles for c in p], *risk_vars, *carry,
                 *([self.risk] if self.risk else [])]
        missing = [c for c in named if c not in frame.columns]
        if missing:
            raise InputError(f"column {missing[0]!r} is not in the data; the data has: {', '.join(frame.columns[:15])}.")
        clash = [c for c in [*hier, *carry] if c == self.household]
        if clash:
            raise ParameterError(f"{self.household!r} is the household id and cannot be swapped.")
        nulls = [c for c in [self.household, *hier] if frame[c].null_count()]
        if nulls:
            raise InputError(f"column {nulls[0]!r} has missing values; every record needs its household and areas.")
        shared = [*hier, *carry, *[c for p in profiles for c in p]]
        for c in dict.fromkeys(shared):
            bad = frame.group_by(self.household).agg(pl.col(c).n_unique().alias("__n")).filter(pl.col("__n") > 1)
            if bad.height:
                hid = bad.sort(self.household)[self.household][0]
                raise InputError(
                    f"column {c!r} differs within household {hid!r} ({bad.height:,} households): geography, "
                    "similarity and carry-along columns are household-level (one value per household)."
                )
        return hier, profiles, risk_vars, carry

    # --- fit ------------------------------------------------------------------------------------

    def fit(self, X: DataSource, y: None = None) -> Self:
        """Choose the households to swap and their donors (see the module)."""
        nwframe, _, _ = self._frame_in(X, None, reset=True)
        frame = nwframe.to_polars() if hasattr(nwframe, "to_polars") else pl.DataFrame(nwframe.to_native())
        hier, profiles, risk_vars, carry = self._check(frame)
        rng = as_generator(self.random_state)
        n = frame.height
        nh = len(hier)
        hh_codes = frame.select(pl.col(self.household).rank("dense").cast(pl.Int64) - 1)[self.household].to_numpy()
        m = int(hh_codes.max()) + 1 if n else 0
        first = np.full(m, n, dtype=np.int64)
        np.minimum.at(first, hh_codes, np.arange(n, dtype=np.int64))
        size = np.bincount(hh_codes, minlength=m)
        # areas per level: codes of the prefix hierarchy[:h + 1], per household
        area = np.stack(
            [frame.select(pl.struct(hier[: h + 1]).rank("dense").cast(pl.Int64) - 1).to_series().to_numpy()[first]
             for h in range(nh)], axis=1,
        )
        prob = self._risk(frame, hier, risk_vars, hh_codes, m)  # (m, nh)
        if self.risk is not None:
            threshold = float(self.risk_threshold)
        else:
            threshold = 2.0 if self.k_anonymity == 0 else 1.0 / self.k_anonymity
        above = prob > threshold
        level = np.where(above.any(axis=1), np.argmax(above, axis=1), nh)
        sim_keys = [self._profile_keys(frame, p, first) for p in profiles]
        target = self._draws(area[:, -1], m, rng)
        used = np.zeros(m, dtype=bool)
        not_found = np.zeros(m, dtype=bool)
        partner = np.full(m, -1, dtype=np.int64)
        chosen_order: list[int] = []
        sampled = np.zeros(m, dtype=bool)  # the household was chosen (not a donor)
        donor_keys = [prob[:, h] / rng.exponential(1.0, m) for h in range(nh)]
        for h in range(nh):
            order = np.argsort(-donor_keys[h], kind="stable")
            for a in np.unique(area[:, h]):
                in_area = area[:, h] == a
                pool = in_area & ~used & ~not_found
                if h < nh - 1:
                    ids = np.flatnonzero(pool & (level == h))
                else:
                    already = int(np.sum(in_area & sampled))
                    rest = max(0, int(target.get(int(a), 0)) - already)
                    must = np.flatnonzero(pool & (level == h))
                    others = np.flatnonzero(pool & (level != h))
                    extra = max(0, min(others.size, rest - must.size))
                    if extra:
                        keys = prob[others, h] / rng.exponential(1.0, others.size)
                        others = others[np.argsort(-keys, kind="stable")[:extra]]
                    else:
                        others = others[:0]
                    ids = np.concatenate([must, others])
                for i in ids:
                    d = self._donor(int(i), order, used, in_area, sim_keys)
                    if d < 0:
                        not_found[i] = True
                        continue
                    used[i] = used[d] = True
                    sampled[i] = True
                    partner[i], partner[d] = d, i
                    chosen_order.append(int(i))
        swap_cols = [*hier, *[c for c in carry if c not in hier]]
        row_partner = np.where(partner[hh_codes] >= 0, first[np.maximum(partner[hh_codes], 0)], -1)
        self._source = np.where(row_partner >= 0, row_partner, np.arange(n))
        self.columns_ = tuple(swap_cols)
        self.n_households_ = m
        self.n_swaps_ = len(chosen_order)
        self.n_swapped_households_ = int(np.sum(partner >= 0))
        self.n_swapped_records_ = int(np.sum(size[partner >= 0]))
        self.n_not_swapped_ = int(np.sum(not_found & ~used))
        self.n_at_risk_ = int(np.sum(level < nh))
        self.target_swaps_ = int(sum(target.values()))
        self.swapped_ = row_partner >= 0
        self.partner_ = row_partner.astype(np.int64)
        self.order_ = first[np.asarray(chosen_order, dtype=np.int64)]
        self.household_risk_ = prob[:, -1][hh_codes]
        self.strata_ = self._strata(frame, hier, area[:, -1], first, target, sampled, partner, size)
        after = frame.select(swap_cols).with_columns(
            [frame[c].gather(self._source).alias(c) for c in swap_cols]
        )
        self.margins_ = _margins(frame, after, hier, self.household)
        self.changes_ = {
            c: {"cells_changed": int(np.sum(np.asarray((frame[c] != after[c]).fill_null(True).to_numpy()))),
                "values_merged": 0}
            for c in swap_cols
        }
        self.n_rows_ = n
        return self

    def _risk(self, frame: pl.DataFrame, hier: list[str], risk_vars: list[str], hh: NDArray[np.int64],
              m: int) -> NDArray[np.float64]:
        """(households, levels): the household's largest member risk at each level."""
        nh = len(hier)
        if self.risk is not None:
            r = frame[self.risk].cast(pl.Float64).fill_null(0.0).to_numpy()
            if np.any(r < 0) or np.any(~np.isfinite(r)):
                raise InputError(f"risk column {self.risk!r} holds a negative or infinite value; risks are >= 0.")
            per = np.zeros(m)
            np.maximum.at(per, hh, r)
            return np.repeat(per[:, None], nh, axis=1)
        out = np.zeros((m, nh))
        for h in range(nh):
            cols = [*risk_vars, *hier[: h + 1]]
            counts = frame.select(pl.len().over(cols).alias("__c"))["__c"].to_numpy().astype(np.float64)
            per = np.zeros(m)
            np.maximum.at(per, hh, 1.0 / counts)
            out[:, h] = per
        return out

    @staticmethod
    def _profile_keys(frame: pl.DataFrame, cols: list[str], first: NDArray[np.int64]) -> NDArray[np.int64]:
        if not cols:
            return np.zeros(first.size, dtype=np.int64)
        codes = frame.select(pl.struct(cols).rank("dense").cast(pl.Int64)).to_series().to_numpy()
        return np.asarray(codes[first], dtype=np.int64)

    @staticmethod
    def _donor(i: int, order: NDArray[np.int64], used: NDArray[np.bool_], in_area: NDArray[np.bool_],
               sim_keys: list[NDArray[np.int64]]) -> int:
        """The free household outside the area with the highest key, similar on the first profile that has one."""
        free = order[~used[order] & ~in_area[order]]
        free = free[free != i]
        for keys in sim_keys:
            match = free[keys[free] == keys[i]]
            if match.size:
                return int(match[0])
        return -1

    def _draws(self, lowest: NDArray[np.int64], m: int, rng: np.random.Generator) -> dict[int, int]:
        """Swaps per lowest-level area: round(m * rate / 2) at random, shared in proportion to households."""
        half = m * float(self.swap_rate) / 2.0
        total = int(np.ceil(half)) if rng.integers(0, 2) == 0 else int(np.floor(half))
        areas, counts = np.unique(lowest, return_counts=True)
        share = counts / m * total
        base = np.floor(share).astype(np.int64)
        extra = round(float((share - base).sum()))
        if extra:
            base[rng.permutation(areas.size)[:extra]] += 1
        return {int(a): int(b) for a, b in zip(areas, base, strict=True)}

    def _strata(self, frame: pl.DataFrame, hier: list[str], lowest: NDArray[np.int64], first: NDArray[np.int64],
                target: dict[int, int], sampled: NDArray[np.bool_], partner: NDArray[np.int64],
                size: NDArray[np.int64]) -> pl.DataFrame:
        """Per lowest-level area: households, swaps asked, chosen here, households swapped (out, and as
        many in: a swap is an exchange), and the records that left and arrived."""
        moved = partner >= 0
        rows = []
        for a in np.unique(lowest):
            inside = lowest == a
            out = inside & moved
            rows.append({
                **{c: frame[c][int(first[np.flatnonzero(inside)[0]])] for c in hier},
                "households": int(inside.sum()),
                "target": target.get(int(a), 0),
                "chosen": int(np.sum(inside & sampled)),
                "swapped": int(out.sum()),
                "records_out": int(size[out].sum()),
                "records_in": int(size[partner[out]].sum()),
            })
        return pl.DataFrame(rows)

    def transform(self, X: DataSource) -> Any:
        """The fitted table with each swapped household's geography (and carry-along columns) exchanged."""
        self.check_is_fitted("swapped_")
        nwframe, _, was_array = self._frame_in(X, None, reset=False)
        if len(nwframe) != self.n_rows_:
            raise ParameterError(
                "RecordSwapper swaps households of the very table it was fitted on; call fit_transform(...) on this one."
            )
        src = self._source
        native = nwframe.to_native()
        if isinstance(native, pl.DataFrame):
            out: Any = native.with_columns([native[c].gather(src).alias(c) for c in self.columns_])
        else:  # pandas and the like: positional gather, the index kept
            out = native.copy()
            for c in self.columns_:
                out[c] = native[c].to_numpy()[src]
        return self._write_output(out, was_array)


def _margins(before: pl.DataFrame, after: pl.DataFrame, hier: list[str], household: str) -> pl.DataFrame:
    """Records and households per area at every level, before and after the swap."""
    parts = []
    for h in range(len(hier)):
        cols = hier[: h + 1]
        b = before.group_by(cols).agg(pl.len().alias("records_before"),
                                      pl.col(household).n_unique().alias("households_before"))
        a = after.with_columns(before[household]).group_by(cols).agg(
            pl.len().alias("records_after"), pl.col(household).n_unique().alias("households_after"))
        joined = b.join(a, on=cols, how="full", coalesce=True).fill_null(0)
        parts.append(joined.with_columns(pl.lit(hier[h]).alias("level"),
                                         pl.concat_str([pl.col(c).cast(pl.String) for c in cols], separator=" > ")
                                         .alias("area")).select("level", "area", "records_before", "records_after",
                                                                "households_before", "households_after"))
    return pl.concat(parts).sort("level", "area")
