"""Imported first by :mod:`sdckit.protocol`: without the ``protocol`` extra, one line naming it
(:class:`~sdckit.errors.MissingExtraError`) instead of a ``ModuleNotFoundError`` from deep inside."""

from sdckit._io._optional import require

for _module in ("cryptography", "httpx", "rfc8785", "voprf"):
    require(_module, extra="protocol", what="the shuffle protocol (sdckit.protocol)")
