"""The curator's logic: decrypt round 1, reject duplicates and malformed messages, count the
marginals, decide the release plan (pure, no I/O)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from sdckit.errors import MalformedMessageError
from sdckit.protocol._crypto import PrivateKey, Recipient, info_label, open_sealed
from sdckit.protocol._planning import PlanMethod, decide_plan
from sdckit.protocol._spec import PAIR_ROUND, CollectionSpec, PairQueries, PublishedPlan
from sdckit.protocol._wire import (
    KIND_PAIR,
    REDACTED,
    FeatureMessage,
    RowMessage,
    decode_value,
    encode_value,
    unpack_feature,
    unpack_row,
)
from sdckit.protocol.parties._common import Receiver


class Curator(Receiver[FeatureMessage]):
    """Counts single-feature marginals from round 1 and publishes which features are safe.

    The curator sees values but never a row: round-1 messages carry one feature each and arrive
    shuffled, without sender. It drops each message's salt after using it to reject duplicates
    (a replayed or retried message is counted once) [seed; anonymity notes §5, step 4].

    Parameters
    ----------
    private_key : The curator's HPKE private key.
    spec : The collection.

    Attributes
    ----------
    counts : ``{feature: Counter({value_key: users})}``, value keys canonical (:func:`encode_value`).
    tally : Messages accepted, duplicated and rejected so far.
    """

    def __init__(self, private_key: PrivateKey, spec: CollectionSpec, *, role: Recipient = "curator") -> None:
        super().__init__()
        self.private_key = private_key
        self.spec = spec
        self.counts: dict[str, Counter[str]] = {f: Counter() for f in spec.features}
        # role="analyst": the analyst's own count of the round-1 copies sealed to it (issue 37)
        self._info = info_label(spec.id, 1, role)

    def open(self, inner: bytes) -> FeatureMessage:
        """Decrypt and parse one round-1 message; :class:`MalformedMessageError` if it does not
        open, is not padded to the collection's length or names a feature outside the collection."""
        msg = unpack_feature(open_sealed(self.private_key, inner, self._info), self.spec.round1_pad)
        if msg.feature not in self.counts:
            raise MalformedMessageError(f"feature {msg.feature!r} is not in collection {self.spec.id!r}")
        return msg

    def _keep(self, msg: FeatureMessage) -> None:
        """Count an accepted message (:meth:`receive` opens and deduplicates a batch)."""
        self.counts[msg.feature][msg.value_key] += 1

    def marginals(self) -> dict[str, dict[Any, int]]:
        """``{feature: {value: users}}`` with the values decoded."""
        return marginals_from_keys(self.counts)

    def decide(
        self,
        *,
        k: int,
        budget: float,
        method: PlanMethod = "best",
        weights: Mapping[str, float] | None = None,
        n_release: int | None = None,
        local_suppression: bool = False,
        hierarchies: Mapping[str, Any] | None = None,
    ) -> PublishedPlan:
        """The release plan from the counted marginals (see :func:`sdckit.protocol.decide_plan`;
        with ``hierarchies``, recodings whose rows fit the collection's round-2 pad)."""
        return decide_plan(
            self.counts,
            collection=self.spec.id,
            k=k,
            budget=budget,
            method=method,
            weights=weights,
            setting=self.spec.setting,
            n_release=n_release,
            local_suppression=local_suppression,
            hierarchies=hierarchies,
            round2_pad=self.spec.round2_pad,
        )


class PairCurator(Receiver[RowMessage]):
    """Counts the pair tables of the middle round: one message per user and query, shuffled.

    The curator sees a pair of values, never a row: the messages of one user's queries arrive
    separately, mixed with every other user's. A message for a pair that was not asked, or with a
    value the query lists as rare sent in clear, is rejected (counted in ``tally``), so the curator
    never holds a table it did not publish.

    Attributes
    ----------
    tables : ``{(column a, column b): Counter({(key a, key b): users})}``, keys canonical
        (:func:`encode_value`; the redaction marker's key for a redacted value).
    """

    def __init__(
        self, private_key: PrivateKey, spec: CollectionSpec, queries: PairQueries, *, role: Recipient = "curator"
    ) -> None:
        super().__init__()
        self.private_key = private_key
        self.spec = spec
        self.queries = queries
        self._redact: dict[tuple[str, ...], dict[str, frozenset[str]]] = {
            q.columns: {c: frozenset(v) for c, v in q.redact.items()} for q in queries.queries
        }
        self.tables: dict[tuple[str, ...], Counter[tuple[str, ...]]] = {
            q.columns: Counter() for q in queries.queries
        }
        # role="analyst": the analyst's own count of the copies sealed to it (count_check)
        self._info = info_label(spec.id, PAIR_ROUND, role)

    def open(self, inner: bytes) -> RowMessage:
        """Decrypt and parse one pair-round message; :class:`MalformedMessageError` if it does not
        open, is not padded to the round's length, names a pair that was not asked, or sends a
        value the query redacts."""
        msg = unpack_row(open_sealed(self.private_key, inner, self._info), self.queries.pad, kind=KIND_PAIR)
        rare = self._redact.get(msg.columns)
        if rare is None:
            raise MalformedMessageError(f"the pair {list(msg.columns)!r} was not asked for")
        for c, v in zip(msg.columns, msg.values, strict=True):
            if v is not REDACTED and encode_value(v) in rare.get(c, ()):
                raise MalformedMessageError(f"a value of {c!r} the query redacts was sent in clear")
        return msg

    def _keep(self, msg: RowMessage) -> None:
        self.tables[msg.columns][tuple(encode_value(v) for v in msg.values)] += 1


def marginals_from_keys(counts: Mapping[str, Mapping[str, int]]) -> dict[str, dict[Any, int]]:
    """Decode the canonical value keys of ``{feature: {value_key: count}}``."""
    return {f: {decode_value(key): int(n) for key, n in c.items()} for f, c in counts.items()}
