"""What the receiving parties share: the tally of a batch, and opening, deduplicating and keeping one."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Generic, Protocol, TypeVar

from sdckit.errors import MalformedMessageError


@dataclass(frozen=True)
class Tally:
    """Outcome of receiving a batch: messages accepted, duplicates (salt seen before: counted
    once) and rejected (malformed, wrong key, wrong round or unknown feature)."""

    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            self.accepted + other.accepted, self.duplicates + other.duplicates, self.rejected + other.rejected
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Salted(Protocol):
    @property
    def salt(self) -> bytes: ...


MessageT = TypeVar("MessageT", bound=_Salted)


class Receiver(Generic[MessageT]):
    """A party at the end of a shuffled round (curator, analyst): opens each message, counts a
    replayed or retried one (salt seen before) once, and keeps the rest.

    Subclasses call ``super().__init__()`` and define :meth:`open` (decrypt and validate one
    message) and :meth:`_keep` (use an accepted one).
    """

    def __init__(self) -> None:
        self.tally = Tally()
        self._salts: set[bytes] = set()

    def open(self, inner: bytes) -> MessageT:
        raise NotImplementedError

    def _keep(self, msg: MessageT) -> None:
        raise NotImplementedError

    def receive(self, batch: Iterable[bytes]) -> Tally:
        """Open, deduplicate (by salt) and keep a batch from the shuffler; returns the batch's
        tally (also added to ``tally``)."""
        acc = dup = rej = 0
        for inner in batch:
            try:
                msg = self.open(inner)
            except MalformedMessageError:
                rej += 1
                continue
            if msg.salt in self._salts:
                dup += 1
                continue
            self._salts.add(msg.salt)
            self._keep(msg)
            acc += 1
        t = Tally(acc, dup, rej)
        self.tally = self.tally + t
        return t
