"""The workbench's guards that need no web framework: a token strong enough to guard data, the
upload size limit, and which requests may open a session.

* A token is refused when a guess could find it: fewer than :data:`MIN_TOKEN_LENGTH` characters,
  fewer than :data:`MIN_TOKEN_DISTINCT` distinct characters, or under :data:`MIN_TOKEN_BITS` bits
  by the size of the character classes it uses (``secrets.token_urlsafe()`` has 256 bits).
* An upload larger than the limit is refused from its ``Content-Length`` before any byte is read,
  and while streamed when it announces none.
* ``GET /`` opens a session only for a top-level visit the user made (``Sec-Fetch-Site`` ``none`` or
  ``same-origin``, or an ``Origin`` of this server; a browser sends these and a page elsewhere cannot
  forge them): a page on another site cannot create sessions to push the user's out. A client
  address holds at most :data:`SESSIONS_PER_CLIENT` sessions (its own least recently used one makes
  room for its new one); when all the sessions are full, only an idle one (unused for
  :data:`IDLE_SECONDS`) of another client makes room, otherwise the new one is refused, in words.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping

from sdckit.errors import ParameterError

__all__ = ["MAX_UPLOAD_BYTES", "check_token", "cross_site", "upload_too_large"]

MIN_TOKEN_LENGTH = 16
MIN_TOKEN_DISTINCT = 8
MIN_TOKEN_BITS = 80
MAX_UPLOAD_BYTES = 512 * 1024 * 1024
"""The largest upload (a file on this machine can be loaded by its path instead, at any size)."""
IDLE_SECONDS = 15 * 60
"""A session unused this long may make room for a new one when the sessions are full."""
SESSIONS_PER_CLIENT = 16


def _pool(token: str) -> int:
    pool = 0
    for chars in (string.ascii_lowercase, string.ascii_uppercase, string.digits):
        if any(c in chars for c in token):
            pool += len(chars)
    if any(not c.isalnum() for c in token):
        pool += 32
    return pool


def check_token(token: str) -> None:
    """Refuse a weak token (:class:`~sdckit.errors.ParameterError` saying why and how to make one)."""
    how = "make one with: python -c 'import secrets; print(secrets.token_urlsafe())'"
    if len(token) < MIN_TOKEN_LENGTH:
        raise ParameterError(f"--token: {len(token)} characters is too short to guard the data (at least "
                             f"{MIN_TOKEN_LENGTH}, random); {how}.")
    if len(set(token)) < MIN_TOKEN_DISTINCT:
        raise ParameterError(f"--token: only {len(set(token))} distinct characters, easy to guess; {how}.")
    bits = len(token) * math.log2(max(_pool(token), 2))
    if bits < MIN_TOKEN_BITS:
        raise ParameterError(f"--token: about {bits:.0f} bits, under the {MIN_TOKEN_BITS} a token needs; {how}.")


def upload_too_large(headers: Mapping[str, str], limit: int) -> str | None:
    """The refusal of an upload whose announced size is over ``limit`` (None: go on reading, counting)."""
    length = headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        return too_large_message(int(length), limit)
    return None


def too_large_message(size: int | None, limit: int) -> str:
    got = f"{size / 2**20:,.1f} MB" if size is not None else "more"
    return (f"upload: {got} is over the workbench's limit of {limit / 2**20:,.0f} MB; load the file by its path on "
            "this machine instead (Load, a file on this machine).")


def cross_site(headers: Mapping[str, str], host: str) -> bool:
    """Whether a request comes from a page of another site (not the user's own visit of the address)."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("none", "same-origin"):
        return True
    origin = headers.get("origin")
    if origin is not None and origin != "null":
        return origin.split("://", 1)[-1] != host
    return origin == "null"
