"""The shuffle protocol of statistical anonymity: users, shuffler, curator, analyst.

A curator decides which columns are safe to release without ever seeing a user's row, and an
analyst receives the safe columns without knowing who sent them [seed: arXiv:2201.12306, §5;
anonymity notes §5, ``docs/theory/anonymity.md``].

* Crypto: HPKE (RFC 9180) from ``cryptography`` (:func:`seal`, :func:`open_sealed`,
  :class:`PrivateKey`, :class:`PublicKey`, key files); suites ``"x25519"`` and
  ``"mlkem768-x25519"`` (hybrid post-quantum).
* Wire format: fixed-length padded, salted, versioned messages (:func:`pack_feature`,
  :func:`pack_row`, :func:`pack_batch`).
* Parties as pure logic: :class:`User`, :class:`Shuffler`, :class:`Curator`, :class:`Analyst`;
  the optional pair round: :func:`choose_pairs`, :class:`PairQueries`, :class:`PairCurator`.
* Services (``sdckit.protocol.services``): one web app per role with SQLite storage, started with
  ``sdckit protocol serve``; :class:`Client` for a user's device; :func:`simulate` runs the whole
  protocol on loopback.
"""

from sdckit.protocol import _check_extra  # noqa: F401 - first: names the extra in one line when missing
from sdckit.protocol._client import Client
from sdckit.protocol._crypto import (
    PrivateKey,
    PublicKey,
    SuiteName,
    info_label,
    open_sealed,
    seal,
    sealed_length,
)
from sdckit.protocol._keyfile import generate_key_file, read_private_key, write_private_key
from sdckit.protocol._planning import (
    PlanMethod,
    choose_pairs,
    decide_plan,
    decoy_probability,
    key_hierarchy,
    suppress_rare,
    verify_pairs,
    verify_plan,
)
from sdckit.protocol._simulate import SimulationResult, exposure_at_k, simulate, verify_release
from sdckit.protocol._spec import (
    CollectionSpec,
    PairQueries,
    PairQuery,
    PlanRefusedError,
    PublishedPlan,
    Redaction,
    Setting,
    UnpinnedSpecError,
)
from sdckit.protocol._wire import (
    REDACTED,
    decode_value,
    encode_value,
    pack_batch,
    pack_feature,
    pack_row,
    unpack_batch,
    unpack_feature,
    unpack_row,
)
from sdckit.protocol.parties import Analyst, Curator, PairCurator, Shuffler, Tally, User, secure_permutation

__all__ = [
    "REDACTED",
    "Analyst",
    "Client",
    "CollectionSpec",
    "Curator",
    "PairCurator",
    "PairQueries",
    "PairQuery",
    "PlanMethod",
    "PlanRefusedError",
    "PrivateKey",
    "PublicKey",
    "PublishedPlan",
    "Redaction",
    "Setting",
    "Shuffler",
    "SimulationResult",
    "SuiteName",
    "Tally",
    "UnpinnedSpecError",
    "User",
    "choose_pairs",
    "decide_plan",
    "decode_value",
    "decoy_probability",
    "encode_value",
    "exposure_at_k",
    "generate_key_file",
    "info_label",
    "key_hierarchy",
    "open_sealed",
    "pack_batch",
    "pack_feature",
    "pack_row",
    "read_private_key",
    "seal",
    "sealed_length",
    "secure_permutation",
    "simulate",
    "suppress_rare",
    "unpack_batch",
    "unpack_feature",
    "unpack_row",
    "verify_pairs",
    "verify_plan",
    "verify_release",
    "write_private_key",
]
