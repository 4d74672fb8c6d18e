"""The user's side: encode both rounds (pure; randomness from ``secrets`` unless an rng is given)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

import numpy as np

from sdckit.errors import ParameterError
from sdckit.protocol._crypto import PublicKey, info_label, seal
from sdckit.protocol._spec import PAIR_ROUND, CollectionSpec, PairQueries, PublishedPlan
from sdckit.protocol._wire import KIND_PAIR, REDACTED, SALT_LENGTH, encode_value, pack_feature, pack_row


class User:
    """A user's device: seals its values twice, for the curator (or analyst), then the shuffler.

    Round 1 sends one message per feature of the collection, every user the same number:
    ``Enc(pk_shuffler, Enc(pk_curator, pad(version | kind | salt | [feature, value])))``.
    Round 2 sends one message holding the planned columns, sealed for the analyst inside.
    Salts are 16 bytes from ``secrets`` (the OS CSPRNG) [seed; anonymity notes §5].

    Parameters
    ----------
    spec : The collection's public specification.
    shuffler_key, curator_key, analyst_key : The parties' public keys (``analyst_key`` is needed
        for round 2 only).

    Examples
    --------
    >>> from sdckit.protocol import CollectionSpec, PrivateKey
    >>> spec = CollectionSpec(id="demo", features=("sex", "race"))
    >>> keys = [PrivateKey.generate() for _ in range(3)]
    >>> user = User(spec, shuffler_key=keys[0].public_key(), curator_key=keys[1].public_key(),
    ...             analyst_key=keys[2].public_key())
    >>> messages = user.round1({"sex": "Male", "race": "White", "age": 39})
    >>> len(messages), {len(m) for m in messages}   # 32 + (32 + 256 + 16) + 16 bytes each
    (4, {352})

    Two per feature: the curator's, then the analyst's copy it recounts the curator's counts from
    (``count_check``, on by default).
    """

    def __init__(
        self,
        spec: CollectionSpec,
        *,
        shuffler_key: PublicKey,
        curator_key: PublicKey,
        analyst_key: PublicKey | None = None,
    ) -> None:
        for name, key in (("shuffler", shuffler_key), ("curator", curator_key), ("analyst", analyst_key)):
            if key is not None and key.suite != spec.suite:
                raise ParameterError(
                    f"the {name} key is {key.suite}; collection {spec.id!r} uses {spec.suite}"
                )
        self.spec = spec
        self.shuffler_key = shuffler_key
        self.curator_key = curator_key
        self.analyst_key = analyst_key
        self._info = {
            (1, "shuffler"): info_label(spec.id, 1, "shuffler"),
            (1, "curator"): info_label(spec.id, 1, "curator"),
            (1, "analyst"): info_label(spec.id, 1, "analyst"),
            (2, "analyst"): info_label(spec.id, 2, "analyst"),
            (PAIR_ROUND, "shuffler"): info_label(spec.id, PAIR_ROUND, "shuffler"),
            (PAIR_ROUND, "curator"): info_label(spec.id, PAIR_ROUND, "curator"),
            (PAIR_ROUND, "analyst"): info_label(spec.id, PAIR_ROUND, "analyst"),
        }

    def round1(self, row: Mapping[str, Any]) -> list[bytes]:
        """One doubly sealed message per feature of the collection, in feature order; in a
        collection with ``count_check``, followed by one more per feature sealed to the analyst
        inside (its own salt), from which the analyst recounts the curator's evidence."""
        out = []
        for key, info in self._recipients(1):
            for feature in self.spec.features:
                if feature not in row:
                    raise ParameterError(f"the user's row has no value for feature {feature!r}")
                plain = pack_feature(
                    feature, row[feature], secrets.token_bytes(SALT_LENGTH), self.spec.round1_pad
                )
                inner = seal(key, plain, info)
                out.append(seal(self.shuffler_key, inner, self._info[(1, "shuffler")]))
        return out

    def _recipients(self, round_: int) -> list[tuple[PublicKey, bytes]]:
        """Whom round 1 and the pair round are sealed to inside: the curator, and in a collection
        with ``count_check`` the analyst too, which recounts what the curator publishes."""
        out: list[tuple[PublicKey, bytes]] = [(self.curator_key, self._info[(round_, "curator")])]
        if self.spec.count_check:
            if self.analyst_key is None:
                raise ParameterError(
                    "this collection's counts are checked by the analyst: User(..., analyst_key=...)"
                )
            out.append((self.analyst_key, self._info[(round_, "analyst")]))
        return out

    def pairs(self, row: Mapping[str, Any], queries: PairQueries) -> list[bytes]:
        """The pair round: one doubly sealed message per query, in query order, each padded to
        ``queries.pad`` bytes inside; a value the query lists as rare is sent as :data:`REDACTED`.
        In a collection with ``count_check`` the same messages follow again, sealed to the analyst
        (own salts), so the analyst recounts the pair tables a plan rests on."""
        if queries.collection != self.spec.id:
            raise ParameterError(
                f"the queries are for collection {queries.collection!r}, not {self.spec.id!r}"
            )
        out = []
        for key, info in self._recipients(PAIR_ROUND):
            for q in queries.queries:
                values = []
                for col in q.columns:
                    if col not in row:
                        raise ParameterError(f"the user's row has no value for the queried column {col!r}")
                    v = row[col]
                    values.append(REDACTED if encode_value(v) in q.redact.get(col, ()) else v)
                plain = pack_row(q.columns, values, secrets.token_bytes(SALT_LENGTH), queries.pad, kind=KIND_PAIR)
                out.append(seal(self.shuffler_key, seal(key, plain, info), self._info[(PAIR_ROUND, "shuffler")]))
        return out

    def round2(
        self, row: Mapping[str, Any], plan: PublishedPlan, *, rng: np.random.Generator | None = None
    ) -> bytes:
        """The one round-2 message: the planned columns, recoded as the plan says
        (:meth:`PublishedPlan.generalise`: the generalised value of a recoded column, redacted for
        a value the recoding does not list), with the plan's redaction rules applied.

        A redaction rule (feature j, value v*, probability q) makes a holder of v* send
        :data:`REDACTED` for j, and any other user send it with probability q (seed §8). The coin
        comes from ``secrets`` unless ``rng`` is given (tests).
        """
        if self.analyst_key is None:
            raise ParameterError("round 2 needs the analyst's public key: User(..., analyst_key=...)")
        if plan.collection != self.spec.id:
            raise ParameterError(f"the plan is for collection {plan.collection!r}, not {self.spec.id!r}")
        values = {}
        for col in plan.columns:
            if col not in row:
                raise ParameterError(f"the user's row has no value for the planned column {col!r}")
            values[col] = plan.generalise(col, row[col])  # the plan's recoding, if any
        for rule in plan.redactions:
            if rule.feature not in values or values[rule.feature] is REDACTED:
                continue
            if encode_value(values[rule.feature]) == rule.value_key or _coin(rule.probability, rng):
                values[rule.feature] = REDACTED
        plain = pack_row(
            plan.columns,
            [values[c] for c in plan.columns],
            secrets.token_bytes(SALT_LENGTH),
            self.spec.round2_pad,
        )
        inner = seal(self.analyst_key, plain, self._info[(2, "analyst")])
        # the plan's hash in the outer label: a row for another plan fails at the shuffler
        return seal(self.shuffler_key, inner, info_label(self.spec.id, 2, "shuffler", plan_sha256=plan.sha256()))


def _coin(p: float, rng: np.random.Generator | None) -> bool:
    if p <= 0:
        return False
    if p >= 1:
        return True
    if rng is not None:
        return bool(rng.random() < p)
    # 53 random bits from the OS: P(u < p) = p up to 2^-53
    return secrets.randbits(53) < p * (1 << 53)
