"""The four parties of the shuffle protocol as pure logic: bytes in, bytes or counts out, no I/O."""

from sdckit.protocol.parties._analyst import Analyst, count_redacted, rows_to_frame
from sdckit.protocol.parties._common import Tally
from sdckit.protocol.parties._curator import Curator, PairCurator, marginals_from_keys
from sdckit.protocol.parties._shuffler import Shuffler, secure_permutation
from sdckit.protocol.parties._user import User

__all__ = [
    "Analyst",
    "Curator",
    "PairCurator",
    "Shuffler",
    "Tally",
    "User",
    "count_redacted",
    "marginals_from_keys",
    "rows_to_frame",
    "secure_permutation",
]
