"""The shuffler's logic: strip the outer layer, pool, permute with a CSPRNG (pure, no I/O)."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TypeVar

from sdckit.errors import MalformedMessageError, ParameterError
from sdckit.protocol._crypto import PrivateKey, info_label, open_sealed, sealed_length
from sdckit.protocol._spec import check_collection_id

T = TypeVar("T")
_SYSTEM_RANDOM = secrets.SystemRandom()


def secure_permutation(items: Sequence[T]) -> list[T]:
    """A uniformly random permutation of ``items`` drawn from the OS CSPRNG (``secrets``).

    Fisher-Yates with ``secrets.SystemRandom`` (never the ``random`` module's Mersenne Twister,
    whose state can be recovered from its outputs) [anonymity notes §6]. Returns a new list.
    """
    out = list(items)
    _SYSTEM_RANDOM.shuffle(out)
    return out


class Shuffler:
    """Strips the outer HPKE layer and releases pooled messages in a random order.

    The shuffler holds only ciphertexts: after stripping, what it keeps is sealed for the curator
    (round 1) or the analyst (round 2). It keeps no arrival order, time or sender (the pool is
    a multiset, drained in a CSPRNG permutation) [seed; anonymity notes §5, step 3].

    Parameters
    ----------
    private_key : The shuffler's HPKE private key.
    batch_threshold : Smallest pool (messages) released at once; 1 releases immediately.

    Examples
    --------
    >>> from sdckit.protocol import PrivateKey
    >>> s = Shuffler(PrivateKey.generate(), batch_threshold=3)
    >>> s.is_ready(2), s.is_ready(3)
    (False, True)
    """

    def __init__(self, private_key: PrivateKey, *, batch_threshold: int = 100) -> None:
        if not isinstance(batch_threshold, int) or batch_threshold < 1:
            raise ParameterError(f"batch_threshold={batch_threshold!r}: give a number of messages >= 1")
        self.private_key = private_key
        self.batch_threshold = batch_threshold
        self._pools: dict[tuple[str, int], list[bytes]] = {}

    def strip(
        self,
        outer: bytes,
        collection: str,
        round_: int,
        *,
        pad_length: int | None = None,
        plan_sha256: str | None = None,
    ) -> bytes:
        """Open the outer layer; :class:`MalformedMessageError` if it does not open.

        With ``pad_length`` (the round's inner plaintext length) the inner ciphertext's length is
        also checked, so a message that would leak a value through its length is refused here.
        """
        check_collection_id(collection)
        inner = open_sealed(
            self.private_key, outer, info_label(collection, round_, "shuffler", plan_sha256=plan_sha256)
        )
        if pad_length is not None and len(inner) != sealed_length(self.private_key.suite, pad_length):
            raise MalformedMessageError(
                f"inner ciphertext of {len(inner)} bytes; round {round_} messages have "
                f"{sealed_length(self.private_key.suite, pad_length)}"
            )
        return inner

    def is_ready(self, pooled: int) -> bool:
        """Whether a pool of ``pooled`` messages may be released (batch threshold reached)."""
        return pooled >= self.batch_threshold

    # in-memory pool, for pure use and tests; the service keeps its pool in SQLite
    def submit(self, outer: bytes, collection: str, round_: int, *, plan_sha256: str | None = None) -> None:
        """Strip ``outer`` and add it to the in-memory pool of (collection, round) (round 2: give the
        pinned plan's ``plan_sha256``)."""
        self._pools.setdefault((collection, round_), []).append(
            self.strip(outer, collection, round_, plan_sha256=plan_sha256)
        )

    def release(self, collection: str, round_: int, *, force: bool = False) -> list[bytes]:
        """Drain the pool in a CSPRNG permutation if it reached the threshold (or ``force``)."""
        pool = self._pools.get((collection, round_), [])
        if not pool or not (force or self.is_ready(len(pool))):
            return []
        self._pools[(collection, round_)] = []
        return secure_permutation(pool)
