"""Imported first by :mod:`sdckit.protocol.services`: without the ``protocol`` extra, one line naming it
(:class:`~sdckit.errors.MissingExtraError`) instead of a ``ModuleNotFoundError`` from deep inside."""

from sdckit._io._optional import require

for _module in ("fastapi", "uvicorn"):
    require(_module, extra="protocol", what="the protocol's services (sdckit protocol serve)")
