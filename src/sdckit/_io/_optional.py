"""The one door to optional dependencies: :func:`require` imports a module of an extra, or raises
:class:`~sdckit.errors.MissingExtraError`, one line naming the extra to install.

The core install (``pip install sdckit``) runs every core command (``run``, ``report``, ``risk``,
``plan``, the masking commands, ``microaggregate``, ``spectral``, ``datasets``, ``describe``); the
extras add readers and writers of other formats, other frame libraries, the distributed engines,
the protocol's services and the browser workbench. :data:`EXTRAS` lists which extra installs which
package; every import of one of them that a user can reach without having passed in an object of
that library goes through :func:`require`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from sdckit.errors import MissingExtraError

EXTRAS: dict[str, tuple[str, ...]] = {
    "frames": ("pandas", "pyarrow", "duckdb"),
    "formats": ("fastexcel", "pyreadstat", "pyreadr"),
    "scale": ("dask", "pyspark"),
    "protocol": ("cryptography", "fastapi", "uvicorn", "httpx", "voprf", "psycopg", "psycopg_pool", "rfc8785"),
    "app": ("fastapi", "uvicorn"),
    "dp": ("opendp",),
}
"""Each optional extra of ``pyproject.toml`` and the top-level modules it installs (beside the core)."""


def require(module: str, *, extra: str, what: str) -> ModuleType:
    """Import ``module`` (dotted names allowed) and return it, or raise one line naming the extra.

    Parameters
    ----------
    module : The module to import, e.g. ``"pyreadstat"`` or ``"dask.dataframe"``.
    extra : The extra of ``pyproject.toml`` that installs it, e.g. ``"formats"``.
    what : The feature that needs it, as the start of the message: ``"reading .sav files"``.

    Raises
    ------
    MissingExtraError
        ``reading .sav files needs pyreadstat: pip install 'sdckit[formats]'`` (also an
        ``ImportError``, so ``except ImportError`` still catches it).

    Examples
    --------
    >>> require("json", extra="frames", what="a doctest").__name__
    'json'
    >>> require("no_such_module_xyz", extra="frames", what="reading Arrow tables")
    Traceback (most recent call last):
    ...
    sdckit.errors.MissingExtraError: reading Arrow tables needs no_such_module_xyz: pip install 'sdckit[frames]'
    """
    if extra not in EXTRAS:  # a typo here would print a wrong install line
        raise ValueError(f"unknown extra {extra!r}; one of {', '.join(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ImportError as err:
        missing = (err.name or module).split(".")[0]
        if missing != module.split(".")[0] and not any(missing in mods for mods in EXTRAS.values()):
            raise  # a broken installation of something else: not the extra's absence
        raise MissingExtraError(module, extra=extra, what=what) from None
