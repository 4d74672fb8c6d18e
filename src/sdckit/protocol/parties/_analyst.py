"""The analyst's logic: decrypt round 2, deduplicate, build the released table (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from sdckit.errors import MalformedMessageError
from sdckit.protocol._crypto import PrivateKey, info_label, open_sealed
from sdckit.protocol._spec import CollectionSpec, PublishedPlan
from sdckit.protocol._wire import REDACTED, RowMessage, encode_value, unpack_row
from sdckit.protocol.parties._common import Receiver


class Analyst(Receiver[RowMessage]):
    """Receives one row per user on the planned columns, with no link to who sent it.

    Parameters
    ----------
    private_key : The analyst's HPKE private key.
    spec : The collection.
    plan : The curator's published plan (the columns every row must carry, in order).

    Attributes
    ----------
    rows : The accepted rows (tuples of values in plan order; :data:`REDACTED` where redacted).
    tally : Messages accepted, duplicated (salt seen before) and rejected.
    """

    def __init__(self, private_key: PrivateKey, spec: CollectionSpec, plan: PublishedPlan) -> None:
        super().__init__()
        self.private_key = private_key
        self.spec = spec
        self.plan = plan
        self.rows: list[tuple[Any, ...]] = []
        self._info = info_label(spec.id, 2, "analyst")
        # a recoded column carries only generalised values (or the marker): anything else is not
        # what the plan lets a device send, and would put a raw value into the release
        self._generalised = {c: frozenset(m.values()) for c, m in plan.recodings.items()}

    def open(self, inner: bytes) -> RowMessage:
        """Decrypt and parse one round-2 message; :class:`MalformedMessageError` if it does not
        open, is not padded to the round's length, does not carry exactly the planned columns, or
        carries in a recoded column a value that is not one of the plan's generalised values."""
        msg = unpack_row(open_sealed(self.private_key, inner, self._info), self.spec.round2_pad)
        if msg.columns != self.plan.columns:
            raise MalformedMessageError(
                f"row with columns {list(msg.columns)}; the plan is {list(self.plan.columns)}"
            )
        for col, value in zip(msg.columns, msg.values, strict=True):
            allowed = self._generalised.get(col)
            if allowed is not None and value is not REDACTED and encode_value(value) not in allowed:
                raise MalformedMessageError(f"a value of {col!r} that is not a generalised value of the plan")
        return msg

    def _keep(self, msg: RowMessage) -> None:
        """Keep an accepted row (:meth:`receive` opens and deduplicates a batch)."""
        self.rows.append(msg.values)

    def release(self) -> pl.DataFrame:
        """The released table (see :func:`rows_to_frame`)."""
        return rows_to_frame(self.rows, self.plan.columns)


def rows_to_frame(rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> pl.DataFrame:
    """A polars DataFrame of ``rows`` on ``columns``; a redacted entry becomes null (the count of
    redactions per column is in :func:`count_redacted`)."""
    data = {c: [None if r[i] is REDACTED else r[i] for r in rows] for i, c in enumerate(columns)}
    return pl.DataFrame(data, strict=False)


def count_redacted(rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> dict[str, int]:
    """Number of redacted entries per column."""
    return {c: sum(1 for r in rows if r[i] is REDACTED) for i, c in enumerate(columns)}
