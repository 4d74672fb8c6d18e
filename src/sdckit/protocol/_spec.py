"""What the parties agree on in public: a collection's specification and the curator's plan."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, TypeAlias

from sdckit.errors import ConfigError, ParameterError, ProtocolError, SdcError
from sdckit.protocol._crypto import SuiteName, check_suite
from sdckit.protocol._signing import canonical_json
from sdckit.protocol._wire import HEADER_LENGTH, REDACTED, decode_value, encode_value

Setting: TypeAlias = Literal["fixed", "statistical"]
"""``fixed``: the same users in both rounds (Section 2 bounds apply); ``statistical``: round-1 users
are a sample of the population the round-2 users come from (Section 3 estimators apply) [seed §5]."""

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_collection_id(collection: str) -> str:
    """A collection id is 1-64 characters of letters, digits, ``.``, ``_``, ``-``."""
    # fullmatch, not match: "$" also matches before a final newline, so "abc\n" passed
    if not isinstance(collection, str) or not _ID.fullmatch(collection):
        shown = (
            repr(collection[:64]) + ("..." if len(collection) > 64 else "")
            if isinstance(collection, str)
            else type(collection).__name__
        )
        raise ParameterError(
            f"collection id {shown} is not allowed; use 1-64 letters, digits, '.', '_' or '-'"
        )
    return collection


PINNED_ROLES = ("curator", "analyst", "shuffler")
"""Every party whose HPKE key a collection's spec must pin before the services or a device use it."""


class UnpinnedSpecError(ProtocolError):
    """A collection spec that does not pin every party's HPKE key (:data:`PINNED_ROLES`)."""


@dataclass(frozen=True, kw_only=True)
class CollectionSpec:
    """One run of the protocol ("collection"), published by the curator before round 1."""

    id: str
    """Collection id; part of every HPKE ``info`` label, so messages cannot cross collections."""
    features: tuple[str, ...]
    """The features every user sends in round 1 (one message each, in any order)."""
    suite: SuiteName = "x25519"
    """HPKE suite of every key in the collection."""
    round1_pad: int = 256
    """Length in bytes of every round-1 inner plaintext (header of 20 bytes included)."""
    round2_pad: int = 1024
    """Length in bytes of every round-2 inner plaintext."""
    setting: Setting = "fixed"
    """``fixed`` or ``statistical`` (see :data:`Setting`)."""
    min_k: int = 2
    """Floor every device pins: a plan or pair query with a smaller k is refused (>= 2)."""
    max_budget: float = 0.1
    """Ceiling every device pins: a plan or pair query with a larger budget is refused."""
    bound_method: str = "best"
    """The bound (:func:`sdckit.risk.joint_exposure_bound` method) devices and the shuffler
    recompute from the counts published with a plan; a plan whose bound is not that bound's value
    (or more) is refused."""
    keys: Mapping[str, str] = field(default_factory=dict)
    """HPKE public keys fixed for the collection, by role (``curator``, ``analyst``,
    ``shuffler``): devices and the shuffler refuse any other key for this collection. Rotating a
    key means a new collection (a new signed spec), never a silent change."""
    count_check: bool = True
    """Counts a second party checks (issue 37), on by default: devices seal each round-1 and
    pair-round message to the analyst as well, and a plan or pair queries reach a device only with
    the analyst's co-signature of their counts (:mod:`sdckit.protocol._recount`). Turning it off
    lets a curator that lies about its counts single a user out, and devices refuse such a spec
    unless they opt out too (``Client(require_count_check=False)``). Left out of the signed text
    when False, so a spec signed before the field existed reads as False (:meth:`from_dict`)."""

    def __post_init__(self) -> None:
        check_collection_id(self.id)
        if not (isinstance(self.min_k, int) and not isinstance(self.min_k, bool) and self.min_k >= 2):
            raise ParameterError(f"min_k={self.min_k!r}: give a whole number >= 2 (k = 1 protects nobody)")
        if not (
            isinstance(self.max_budget, (int, float))
            and not isinstance(self.max_budget, bool)
            and 0 <= self.max_budget <= 1
        ):
            raise ParameterError(f"max_budget={self.max_budget!r}: give a share of users in [0, 1]")
        if self.bound_method not in ("support", "theorem2", "theorem3", "best"):
            raise ParameterError(
                f"bound_method={self.bound_method!r}: use 'best', 'theorem2', 'theorem3' or 'support' (an upper bound)"
            )
        if not isinstance(self.keys, Mapping) or not all(
            r in ("curator", "analyst", "shuffler") and isinstance(v, str) for r, v in self.keys.items()
        ):
            raise ParameterError("keys: give {role: public key text} for roles curator, analyst, shuffler")
        if not isinstance(self.count_check, bool):
            raise ParameterError(f"count_check={self.count_check!r}: give true or false")
        check_suite(self.suite)
        if not all(isinstance(f, str) and f for f in self.features):
            raise ParameterError("features must be non-empty strings (the names users send in round 1)")
        if not self.features or len(set(self.features)) != len(self.features):
            raise ParameterError(f"features must be non-empty and distinct, got {list(self.features)}")
        for name, pad in (("round1_pad", self.round1_pad), ("round2_pad", self.round2_pad)):
            if not isinstance(pad, int) or not HEADER_LENGTH < pad <= 65_535:
                raise ParameterError(f"{name}={pad!r}: give a length in bytes in ({HEADER_LENGTH}, 65535]")
        if self.setting not in ("fixed", "statistical"):
            raise ParameterError(f"setting={self.setting!r}: use 'fixed' or 'statistical'")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["features"] = list(self.features)
        d["keys"] = dict(sorted(self.keys.items()))
        if not self.count_check:  # a spec without the check keeps the text it had before it existed
            d.pop("count_check")
        return d

    def with_key(self, role: str, public_key: str) -> CollectionSpec:
        """This spec with ``role``'s key pinned (refused if another key is pinned already)."""
        old = self.keys.get(role)
        if old is not None and old != public_key:
            raise ParameterError(
                f"collection {self.id!r} pins another {role} key; a key is fixed per collection "
                "(rotate it by creating a new collection)"
            )
        return replace(self, keys={**self.keys, role: public_key})

    def __hash__(self) -> int:
        return hash((self.id, self.features, tuple(sorted(self.keys.items()))))

    def unpinned(self) -> tuple[str, ...]:
        """The roles among :data:`PINNED_ROLES` whose HPKE key this spec does not pin."""
        return tuple(r for r in PINNED_ROLES if not self.keys.get(r))

    def require_pinned(self, who: str) -> None:
        """Refuse (:class:`UnpinnedSpecError`) a spec that does not pin every party's key: an
        unpinned key is whatever the relay hands each device, so a party could give each device its
        own key and tell devices apart (issue 37: 6 of 6 devices took 6 distinct analyst keys)."""
        missing = self.unpinned()
        if missing:
            raise UnpinnedSpecError(
                f"{who} refuses collection {self.id!r}: its spec does not pin the {', '.join(missing)} "
                f"key{'s' if len(missing) > 1 else ''} (give \"keys\": {{\"analyst\": ..., \"shuffler\": ...}} "
                "with each party's public key text, key.json.pub, when creating the collection; the "
                "curator adds its own)"
            )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CollectionSpec:
        """The spec from its signed JSON text: a text without ``count_check`` was signed without
        the check (the field is left out when False), so it reads as False. A new spec asked for
        in a request takes the default instead (:meth:`from_request`)."""
        return cls._parse({"count_check": False, **d})

    @classmethod
    def from_request(cls, d: Mapping[str, Any]) -> CollectionSpec:
        """A new spec from a request body (the curator's admin API): a field left out takes its
        default, so ``count_check`` is on unless the body says ``false``."""
        return cls._parse(d)

    @classmethod
    def _parse(cls, d: Mapping[str, Any]) -> CollectionSpec:
        try:
            return cls(**{**d, "features": tuple(d["features"]), "keys": dict(d.get("keys") or {})})
        except (TypeError, KeyError) as err:
            raise ConfigError(f"not a collection specification: {err}") from None


@dataclass(frozen=True, kw_only=True)
class Redaction:
    """A local-suppression rule [seed §8]: holders of ``value`` for ``feature`` always redact it,
    every other user redacts that feature with probability ``probability`` (so a redaction does not
    single out the holders)."""

    feature: str
    value_key: str
    """Canonical encoding of the redacted value (:func:`sdckit.protocol.encode_value`)."""
    probability: float
    """Probability (0..1) that a user who does not hold the value redacts the feature anyway."""


@dataclass(frozen=True, kw_only=True)
class PublishedPlan:
    """The curator's public decision: which columns round 2 carries, and why."""

    collection: str
    columns: tuple[str, ...]
    """The planned columns J, in release order."""
    k: int
    """Group size of the k-anonymity target (users)."""
    budget: float
    """Largest share of users (0..1) allowed in groups smaller than k."""
    bound: float
    """The planner's bound or estimate of that share for ``columns`` (share of users, 0..1)."""
    method: str
    """How ``bound`` was obtained (the risk planner's method name)."""
    excluded: Mapping[str, str] = field(default_factory=dict)
    """Why each left-out feature was left out."""
    n_round1: int = 0
    """Users counted in round 1."""
    setting: Setting = "fixed"
    redactions: tuple[Redaction, ...] = ()
    """Local-suppression rules (empty: global suppression only)."""
    rounds: tuple[str, ...] = ("singles", "release")
    """The rounds the plan rests on: ``singles`` (round 1), ``pairs`` (the middle round, when its
    pair tables were used) and ``release`` (round 2)."""
    pair_bound: float | None = None
    """With the pair round: the bound, computed before asking, on the share of users in a received
    pair-table cell of fewer than k users (:attr:`sdckit.plan.QueryPlan.bound`)."""
    pair_measured: float | None = None
    """With the pair round: that share measured on the received tables (union over the tables:
    the sum of their shares, capped at 1)."""
    recodings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Per recoded column, ``{value_key: generalised value key}`` for every value counted in round 1
    (keys canonical, :func:`sdckit.protocol.encode_value`). A user sends the generalised value
    instead of its own; a value outside the mapping (one that no round-1 message carried) is sent
    as :data:`REDACTED` (:meth:`generalise`). Columns not listed are sent as they are."""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    """The counts the bound was computed from, published and signed with the plan so that devices
    and the shuffler recompute it (:func:`sdckit.protocol.verify_plan`): ``n``, ``counts``
    (``{column: {value key: users}}`` of the planned columns as released: recoded, rare values
    merged into the redaction marker's key), ``blocks`` (pair tables inside the plan, the same
    way) and, in the statistical setting, ``n_release``, ``delta`` and ``candidates``; with local
    suppression ``delta``. Nothing here is finer than what the release shows."""

    def generalise(self, column: str, value: Any) -> Any:
        """The value a user sends for ``column``: its generalised value when the column is recoded
        (:data:`REDACTED` for a value the mapping does not list), else the value itself.

        [derived] In the fixed setting the round-2 users are the round-1 users, so every value
        they hold was counted and the plan's bound (on the recoded round-1 counts) covers the
        recoded release. A value outside the mapping comes from no counted user; sending it in
        clear could single its holder out, sending the generalised value of a guess could put it
        in a group the bound did not count, so it is redacted.
        """
        mapping = self.recodings.get(column)
        if mapping is None or value is REDACTED:
            return value
        label = mapping.get(encode_value(value))
        return REDACTED if label is None else decode_value(label)

    def sha256(self) -> str:
        """SHA-256 (hex) of the plan's canonical JSON (RFC 8785) as signed: bound into round 2's
        outer HPKE ``info`` (:func:`~sdckit.protocol.info_label`)."""
        return hashlib.sha256(canonical_json(self.to_dict())).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rounds"] = list(self.rounds)
        d["columns"] = list(self.columns)
        d["excluded"] = dict(self.excluded)
        d["redactions"] = [asdict(r) for r in self.redactions]
        # canonical: columns in plan order, values sorted by key (one plan, one signed text); a plan
        # without recodings keeps the text it had before they existed
        d.pop("recodings")
        d.pop("evidence")
        if self.evidence:
            d["evidence"] = dict(self.evidence)
        if self.recodings:
            d["recodings"] = {
                c: dict(sorted(self.recodings[c].items())) for c in self.columns if c in self.recodings
            }
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PublishedPlan:
        """The plan from its JSON form (:meth:`to_dict`), checked field by field: it may come from
        a request, so anything else raises :class:`ConfigError`."""
        try:
            plan = cls(
                **{
                    **d,
                    "columns": tuple(d["columns"]),
                    "rounds": tuple(d.get("rounds", ("singles", "release"))),
                    "excluded": dict(d.get("excluded", {})),
                    "redactions": tuple(Redaction(**r) for r in d.get("redactions", ())),
                    "recodings": _mapping(
                        d.get("recodings", {}), lambda m: {c: _mapping(v, dict) for c, v in m.items()}
                    ),
                    "evidence": _mapping(d.get("evidence", {}), dict),
                }
            )
        except (TypeError, KeyError, ValueError) as err:  # ValueError: dict("ab")
            raise ConfigError(f"not a published plan: {err}") from None
        plan._check()
        return plan

    def _check(self) -> None:
        def real(x: Any) -> bool:
            return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

        problems = []
        if not isinstance(self.collection, str):
            problems.append("collection is not a string")
        if not all(isinstance(c, str) for c in self.columns) or len(set(self.columns)) != len(self.columns):
            problems.append("columns are not distinct strings")
        if not (isinstance(self.k, int) and not isinstance(self.k, bool) and self.k >= 1):
            problems.append("k is not an integer >= 1")
        if not all(real(x) and 0 <= x <= 1 for x in (self.budget, self.bound)):
            problems.append("budget and bound are not shares in [0, 1]")
        if not (isinstance(self.n_round1, int) and self.n_round1 >= 0):
            problems.append("n_round1 is not a count")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.excluded.items()):
            problems.append("excluded is not {column: reason}")
        if self.setting not in ("fixed", "statistical"):
            problems.append("setting is not 'fixed' or 'statistical'")
        if not set(self.rounds) <= {"singles", "pairs", "release"}:
            problems.append("rounds are not among 'singles', 'pairs', 'release'")
        if not all(x is None or (real(x) and 0 <= x <= 1) for x in (self.pair_bound, self.pair_measured)):
            problems.append("pair_bound and pair_measured are not shares in [0, 1]")
        for r in self.redactions:
            if not (
                isinstance(r.feature, str)
                and isinstance(r.value_key, str)
                and real(r.probability)
                and 0 <= r.probability <= 1
            ):
                problems.append("a redaction is not {feature, value_key, probability in [0, 1]}")
                break
        problems.extend(_recoding_problems(self.recodings, self.columns))
        if problems:
            raise ConfigError(f"not a published plan: {'; '.join(problems)}")


def _mapping(obj: Any, then: Any) -> Any:
    """``then(obj)`` for a JSON object; TypeError for anything else (``dict`` would take a list of pairs)."""
    if not isinstance(obj, Mapping):
        raise TypeError(f"{type(obj).__name__} where a JSON object was expected")
    return then(obj)


MAX_RECODED_VALUES = 10_000
"""Most values a recoded column's mapping may list (the plan is a signed public document that
every device fetches: a column with more distinct values is released raw or withheld)."""

MAX_RECODING_BYTES = 1 << 20
"""Most bytes (UTF-8) the keys and generalised values of a plan's recodings may add up to, so the
signed plan stays small whatever the values' lengths."""


def recoding_bytes(recodings: Mapping[str, Mapping[str, str]]) -> int:
    """Bytes (UTF-8) of the keys and generalised values of ``recodings``."""
    return sum(
        len(key.encode()) + len(label.encode()) for m in recodings.values() for key, label in m.items()
    )


def _recoding_problems(recodings: Mapping[str, Mapping[str, str]], columns: Sequence[str]) -> list[str]:
    """What is wrong with a plan's recodings: columns outside the plan, too many values, or keys
    that are not canonical value encodings."""
    if not isinstance(recodings, Mapping):
        return ["recodings is not {column: {value_key: generalised value key}}"]
    if not set(recodings) <= set(columns):
        return [f"recodings name columns {sorted(set(recodings) - set(columns))} outside the plan"]
    for c, mapping in recodings.items():
        if not isinstance(mapping, Mapping) or not mapping:
            return [f"the recoding of {c!r} is not a non-empty {{value_key: generalised value key}}"]
        if len(mapping) > MAX_RECODED_VALUES:
            return [f"the recoding of {c!r} lists {len(mapping):,} values (at most {MAX_RECODED_VALUES:,})"]
        for key, label in mapping.items():
            if not (isinstance(key, str) and isinstance(label, str)):
                return [f"the recoding of {c!r} is not {{value_key: generalised value key}} (text)"]
            try:
                canonical = (
                    encode_value(decode_value(key)) == key and encode_value(decode_value(label)) == label
                )
            except SdcError:
                canonical = False
            if not canonical or label == encode_value(REDACTED) or key == encode_value(REDACTED):
                return [
                    f"the recoding of {c!r} maps {key[:40]!r} to {label[:40]!r}: not canonical value keys"
                ]
    if recoding_bytes(recodings) > MAX_RECODING_BYTES:
        return [f"the recodings hold more than {MAX_RECODING_BYTES:,} bytes"]
    return []


PAIR_ROUND = 3
"""Round number of the middle (pair) round on the wire and in HPKE labels (1 singles, 2 release)."""


@dataclass(frozen=True, kw_only=True)
class PairQuery:
    """One query of the pair round: every user sends its values of ``columns``, the values listed
    in ``redact`` (rare at k) replaced by the redaction marker."""

    columns: tuple[str, str]
    redact: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per column, the canonical keys (:func:`sdckit.protocol.encode_value`) of the values sent
    redacted."""
    bound: float = 0.0
    """Bound, before asking, on the share of users in a cell < k of this table."""


@dataclass(frozen=True, kw_only=True)
class PairQueries:
    """The curator's published pair queries (signed and relayed like the plan)."""

    collection: str
    k: int
    queries: tuple[PairQuery, ...]
    bound: float
    """Union bound over the queries (:attr:`sdckit.plan.QueryPlan.bound`), <= ``budget``."""
    budget: float
    pad: int
    """Length in bytes of every pair-round inner plaintext."""
    evidence: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """The round-1 counts of the queried columns the bounds were computed from, each column's
    values held by fewer than k users merged into the redaction marker's key (what every query
    redacts), so devices and the shuffler recompute each bound (:func:`sdckit.protocol.verify_pairs`)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "collection": self.collection,
            "k": self.k,
            "queries": [
                {
                    "columns": list(q.columns),
                    "redact": {c: list(v) for c, v in q.redact.items()},
                    "bound": q.bound,
                }
                for q in self.queries
            ],
            "bound": self.bound,
            "budget": self.budget,
            "pad": self.pad,
        }
        if self.evidence:
            out["evidence"] = {c: dict(sorted(v.items())) for c, v in sorted(self.evidence.items())}
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PairQueries:
        """The queries from their JSON form, checked (they may come from a request)."""
        try:
            queries = tuple(
                PairQuery(
                    columns=(str(q["columns"][0]), str(q["columns"][1])),
                    redact={str(c): tuple(str(x) for x in v) for c, v in dict(q.get("redact", {})).items()},
                    bound=float(q.get("bound", 0.0)),
                )
                for q in d["queries"]
            )
            out = cls(
                collection=str(d["collection"]),
                k=int(d["k"]),
                queries=queries,
                bound=float(d["bound"]),
                budget=float(d["budget"]),
                pad=int(d["pad"]),
                evidence={
                    str(c): {str(key): int(n) for key, n in _mapping(v, dict).items()}
                    for c, v in _mapping(d.get("evidence", {}), dict).items()
                },
            )
        except (TypeError, KeyError, ValueError, IndexError) as err:
            raise ConfigError(f"not published pair queries: {err}") from None
        if len(q_cols := [q.columns for q in queries]) != len(set(q_cols)) or any(a == b for a, b in q_cols):
            raise ConfigError("not published pair queries: a pair is repeated or names one column twice")
        if not HEADER_LENGTH < out.pad <= 65_535 or out.k < 1:
            raise ConfigError("not published pair queries: bad pad length or k")
        return out


class PlanRefusedError(ProtocolError):
    """A plan or pair query that does not meet the collection's pinned floors or whose bound the
    published counts do not back: a device sends nothing for it."""
