"""What the receiving parties share: the tally of a batch."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
