"""Anonymous single-use credentials per round, as Privacy Pass issuance with a VOPRF (RFC 9578
type 1 style, on RFC 9497 ristretto255-SHA512 from the ``voprf`` package; nothing here implements
a primitive).

* The shuffler holds one VOPRF key per collection **and round** (derived from a 32-byte secret
  seed with ``DeriveKeyPair(seed, "sdckit/enrol/v2|<collection>|round=<r>")``) and publishes the
  public keys, signed.
* A device with a one-time **invite** (minted by the shuffler's admin and handed out by whoever
  decides who is a real participant) picks a random 32-byte nonce per round and sends the
  **blinded** token inputs ``"sdckit/token/v1|<collection>|round=<r>|" + nonce``, in the order of
  :data:`ENROL_ROUNDS` (round 1, round 2, the pair round); the shuffler spends the invite and
  evaluates the input at position i with the key of round ``ENROL_ROUNDS[i]``, answering each
  round's evaluations with a DLEQ proof for that round's published key.

Why a key per round: the shuffler cannot see inside a blinded input, so with one key a device could
blind three round-1 inputs with one invite and submit round 1 three times. With a key per position,
an input blinded for another round than its position evaluates to a credential that no round's key
verifies, so one invite yields at most one valid credential per round.
* The device unblinds and verifies: its credential for round r is ``(nonce, output)``. The
  shuffler checks one at submission by evaluating the input itself (``Evaluate``), and spends it.

The issuer never saw the nonce or the output, so a credential cannot be linked to the invite it
came from (the shuffler can still link by network address or timing; see docs/protocol.md). The
verifier must hold the VOPRF key: tokens are privately verifiable, issuer and verifier are one party.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from voprf import ristretto

from sdckit.errors import MalformedMessageError, ParameterError

NONCE_LENGTH = 32
MAX_ENROL_USERS = 128
"""Most users one enrolment request may name (a gateway splits larger groups). Each round's batch
answer holds 32 bytes per user and a 64-byte proof, so its text stays within
:data:`_MAX_FIELD_TEXT`; a larger request is refused whole, before any invite is spent."""
_MAX_FIELD_TEXT = 8192
_KEY_INFO = b"sdckit/enrol/v2|"
ENROL_ROUNDS: tuple[int, ...] = (1, 2, 3)
"""The rounds a device enrols for, in the order of its blinded inputs: round 1, round 2 and the
optional pair round (``sdckit.protocol.PAIR_ROUND``). A device may enrol for a prefix."""


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str, what: str) -> bytes:
    if not isinstance(text, str) or len(text) > _MAX_FIELD_TEXT:
        raise MalformedMessageError(f"{what} is not base64url text")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise MalformedMessageError(f"{what} is not base64url") from None


def _is_panic(err: BaseException) -> bool:
    """``voprf`` (pyo3) raises ``PanicException``, a BaseException, where it should raise
    ValueError (e.g. a batch proof that does not verify): treat it as a refusal, never a crash."""
    return type(err).__name__ == "PanicException"


def token_input(collection: str, round_: int, nonce: bytes) -> bytes:
    """The VOPRF input of a round's credential: binds it to one collection and round."""
    return f"sdckit/token/v1|{collection}|round={round_}|".encode() + nonce


@dataclass(frozen=True)
class Credential:
    """A device's credential for one round: ``(nonce, output)``; text form ``nonce.output``."""

    round_: int
    nonce: bytes
    output: bytes

    def to_text(self) -> str:
        return f"{_b64(self.nonce)}.{_b64(self.output)}"

    @classmethod
    def from_text(cls, text: str, round_: int) -> Credential:
        nonce, sep, output = text.strip().partition(".")
        if not sep:
            raise MalformedMessageError("a credential is '<nonce>.<output>' in base64url")
        n, o = _unb64(nonce, "the credential nonce"), _unb64(output, "the credential output")
        if len(n) != NONCE_LENGTH or len(o) != 64:
            raise MalformedMessageError("a credential has a 32-byte nonce and a 64-byte output")
        return cls(round_, n, o)

    @property
    def id(self) -> bytes:
        """What the shuffler stores to spend it: a hash of the nonce (never the output)."""
        return hashlib.sha256(b"sdckit/spent/v1|" + self.nonce).digest()


class Issuer:
    """The shuffler's side for one collection: evaluate blinded inputs (one key per round),
    verify and spend credentials."""

    def __init__(self, seed: bytes, collection: str) -> None:
        if len(seed) != 32:
            raise ValueError("the enrolment seed has 32 bytes")
        self.collection = collection
        self._ev = {
            r: ristretto.Evaluator.from_seed(seed, _KEY_INFO + f"{collection}|round={r}".encode())
            for r in ENROL_ROUNDS
        }

    @property
    def public_keys(self) -> dict[str, str]:
        """``{round: public key}`` (round as text, as in JSON)."""
        return {str(r): _b64(ev.public_key.serialize()) for r, ev in self._ev.items()}

    @staticmethod
    def parse(blinded: list[str]) -> list[Any]:
        """The blinded inputs of a request, checked to be ristretto255 elements (cheap: no
        evaluation), so a bad request is refused before an invite is spent."""
        if not 1 <= len(blinded) <= 4096:
            raise MalformedMessageError("give 1 to 4096 blinded inputs")
        try:
            return [ristretto.BlindedInput.deserialize(_unb64(b, "a blinded input")) for b in blinded]
        except BaseException as err:
            if isinstance(err, ValueError) or _is_panic(err):
                raise MalformedMessageError("a blinded input is not a ristretto255 element") from None
            raise

    def evaluate(self, blinded: list[list[str]] | list[list[Any]]) -> dict[str, str]:
        """Blind-evaluate one request: ``blinded[u]`` are user u's inputs in the order of
        :data:`ENROL_ROUNDS` (at most one per round). Position i of every user is evaluated with
        round ``ENROL_ROUNDS[i]``'s key, with one batch DLEQ proof per round (RFC 9497 §2.2.2
        batching); returns ``{round: batch answer}`` for the rounds asked."""
        if any(not 1 <= len(u) <= len(ENROL_ROUNDS) for u in blinded):
            raise MalformedMessageError(f"give 1 to {len(ENROL_ROUNDS)} blinded inputs per user (one per round)")
        out: dict[str, str] = {}
        for pos, r in enumerate(ENROL_ROUNDS):
            column: list[Any] = [u[pos] for u in blinded if len(u) > pos]
            if not column:
                break
            items: list[Any] = self.parse(column) if isinstance(column[0], str) else column
            try:
                out[str(r)] = _b64(self._ev[r].evaluate_batch(items).serialize())
            except BaseException as err:
                if isinstance(err, ValueError) or _is_panic(err):
                    raise MalformedMessageError("a blinded input is not a ristretto255 element") from None
                raise
        return out

    def verify(self, cred: Credential) -> bool:
        """Whether ``cred`` was issued by this collection's key of its round, for that round."""
        ev = self._ev.get(cred.round_)
        if ev is None:
            return False
        expected = ev.evaluate_known_input(token_input(self.collection, cred.round_, cred.nonce))
        return hmac.compare_digest(expected, cred.output)


class Enrolment:
    """Pending enrolments of ``users`` devices (1 for a device; more for a gateway that enrols
    several at once): blinded inputs, one per user and round (:attr:`blinded`, user by user), then
    :meth:`finish` with the issuer's batch answer and its published key gives the credentials."""

    def __init__(self, collection: str, rounds: tuple[int, ...] = ENROL_ROUNDS, users: int = 1) -> None:
        if not rounds or tuple(rounds) != ENROL_ROUNDS[: len(rounds)]:
            raise ValueError(f"rounds={rounds!r}: enrol for a prefix of {ENROL_ROUNDS} (the order of the keys)")
        if not 1 <= users <= MAX_ENROL_USERS:
            raise ParameterError(
                f"users={users}: one enrolment request names 1 to {MAX_ENROL_USERS} users; split the group"
            )
        self.collection = collection
        self.rounds = rounds
        self.users = users
        self._nonces = [secrets.token_bytes(NONCE_LENGTH) for _ in range(users) for _ in rounds]
        pairs = [
            ristretto.Client.blind(token_input(collection, r, n))
            for r, n in zip(rounds * users, self._nonces, strict=True)
        ]
        self._clients = [c for c, _ in pairs]
        flat = [_b64(b.serialize()) for _, b in pairs]
        per = len(rounds)
        self.blinded = [flat[i * per : (i + 1) * per] for i in range(users)]
        """The blinded inputs of each user (one per round)."""

    def finish(self, evaluated: Mapping[str, str], issuer_keys: Mapping[str, str]) -> list[dict[int, Credential]]:
        """Unblind and check each round's batch proof against the issuer's published key of that
        round; the credentials of each user, ``{round: credential}``."""
        per = len(self.rounds)
        creds: list[dict[int, Credential]] = [{} for _ in range(self.users)]
        for pos, r in enumerate(self.rounds):
            idx = [u * per + pos for u in range(self.users)]
            try:
                out = ristretto.VerifiableBatchOutput.deserialize(
                    _unb64(evaluated.get(str(r), ""), f"the round-{r} evaluation")
                )
                pk = ristretto.PublicKey.deserialize(_unb64(issuer_keys.get(str(r), ""), "the issuer key"))
                outputs = ristretto.Client.finalize_batch([self._clients[i] for i in idx], out, pk)
            except BaseException as err:
                if isinstance(err, MalformedMessageError | ValueError | AttributeError) or _is_panic(err):
                    raise MalformedMessageError(
                        f"the enrolment answer for round {r} does not verify against the shuffler's "
                        "published issuer key of that round"
                    ) from None
                raise
            for u, i, o in zip(range(self.users), idx, outputs, strict=True):
                creds[u][r] = Credential(r, self._nonces[i], bytes(o))
        return creds
