"""The curator's logic: decrypt round 1, reject duplicates and malformed messages, count the
marginals, decide the release plan (pure, no I/O)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from sdckit.errors import MalformedMessageError
from sdckit.protocol._crypto import PrivateKey, info_label, open_sealed
from sdckit.protocol._planning import PlanMethod, decide_plan
from sdckit.protocol._spec import CollectionSpec, PublishedPlan
from sdckit.protocol._wire import FeatureMessage, decode_value, unpack_feature
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

    def __init__(self, private_key: PrivateKey, spec: CollectionSpec) -> None:
        super().__init__()
        self.private_key = private_key
        self.spec = spec
        self.counts: dict[str, Counter[str]] = {f: Counter() for f in spec.features}
        self._info = info_label(spec.id, 1, "curator")

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
    ) -> PublishedPlan:
        """The release plan from the counted marginals (see :func:`sdckit.protocol.decide_plan`)."""
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
        )


def marginals_from_keys(counts: Mapping[str, Mapping[str, int]]) -> dict[str, dict[Any, int]]:
    """Decode the canonical value keys of ``{feature: {value_key: count}}``."""
    return {f: {decode_value(key): int(n) for key, n in c.items()} for f, c in counts.items()}
