"""The one exception tree of sdckit.

Every error the library raises on purpose derives from :class:`SdcError`, and also from the builtin
a caller would expect, so ``except ValueError`` keeps working::

    * SdcError
        + InputError(ValueError)
            ColumnNotFoundError(KeyError-like message), NonNumericColumnError, EmptyTableError,
            MissingValuesError, UnreadableInputError, TooFewRowsError
            FileNotFoundInputError(FileNotFoundError)
        + OutputError(OSError)                 an output path that cannot be written (no such folder)
        + ParameterError(ValueError)           a parameter out of its domain (k < 1, t outside [0, 1])
        + NotFittedError(AttributeError)       transform before fit
        + InfeasibleError(ValueError)          rank(S1) != rank(S2); a budget below the lower bound
        + ConfigError(ValueError)              a pipeline file with unknown keys or wrong types
        + MissingExtraError(ImportError)       an optional feature whose extra is not installed
        + ProtocolError
            MalformedMessageError(ValueError), ReplayError, AuthError(PermissionError)
    * SdcWarning(UserWarning)                  legal but suspicious input (an identifier as a
                                               quasi-identifier, an unusual budget)

The CLI prints an :class:`SdcError` as one line and exits 1; anything else is a bug: exit 70 with a
short message, its traceback only with ``SDCKIT_DEBUG=1`` (:mod:`sdckit.cli._exit`). Messages name the column, the value and the fix; they never contain more microdata than
the single offending value.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

__all__ = [
    "AuthError",
    "ColumnNotFoundError",
    "ConfigError",
    "EmptyTableError",
    "FileNotFoundInputError",
    "InfeasibleError",
    "InputError",
    "MalformedMessageError",
    "MissingExtraError",
    "MissingValuesError",
    "NonNumericColumnError",
    "NotFittedError",
    "OutputError",
    "ParameterError",
    "ProtocolError",
    "ReplayError",
    "SdcError",
    "SdcWarning",
    "TooFewRowsError",
    "UnreadableInputError",
]


class SdcError(Exception):
    """Base class of every error sdckit raises on purpose."""


class SdcWarning(UserWarning):
    """Input that is legal but probably not what was meant."""


class InputError(SdcError, ValueError):
    """The data given cannot be used as it is."""


class FileNotFoundInputError(InputError, FileNotFoundError):
    """A path that does not exist."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no file at {path!r}. Check the path (relative paths start at the current folder).")
        self.path = path


class UnreadableInputError(InputError):
    """A file or object whose format sdckit cannot read."""


class EmptyTableError(InputError):
    """A table with no rows (or no columns) where rows are needed."""


class TooFewRowsError(InputError):
    """Fewer rows than an algorithm needs (e.g. MDAV with k larger than n)."""


class ColumnNotFoundError(InputError):
    """A column name that is not in the table; the message lists the near matches."""

    def __init__(self, column: str, available: Sequence[str]) -> None:
        near = difflib.get_close_matches(column, [str(a) for a in available], n=3, cutoff=0.6)
        if near:
            hint = f" Did you mean {', '.join(map(repr, near))}?"
        else:
            shown = ", ".join(map(repr, list(available)[:12]))
            more = ", ..." if len(available) > 12 else ""
            hint = f" The table has: {shown}{more}."
        super().__init__(f"column {column!r} is not in the table.{hint}")
        self.column = column
        self.available = tuple(available)


class NonNumericColumnError(InputError):
    """A column that must hold numbers but holds something else."""

    def __init__(self, column: str, value: object, row: int | None = None, *, fix: str | None = None) -> None:
        where = f" (row {row})" if row is not None else ""
        fix = fix or "Recode it as numbers or leave it out of the numeric columns."
        super().__init__(f"column {column!r} must be numeric but holds {value!r}{where}. {fix}")
        self.column = column
        self.value = value
        self.row = row


class MissingValuesError(InputError):
    """Missing values (null or NaN) under the policy ``missing="error"``."""

    def __init__(self, column: str, count: int, first_row: int | None = None, *, fix: str | None = None) -> None:
        where = f", first at row {first_row}" if first_row is not None else ""
        fix = fix or "Pass missing='drop' to drop those rows, or impute them first."
        super().__init__(f"column {column!r} has {count} missing value(s){where}. {fix}")
        self.column = column
        self.count = count
        self.first_row = first_row


class OutputError(SdcError, OSError):
    """An output file (``--out``, ``--plot``) that cannot be written: no such folder, a folder in
    its place, no permission, or the input file itself."""


class ParameterError(SdcError, ValueError):
    """A parameter outside its domain."""


class NotFittedError(SdcError, AttributeError):
    """An estimator used before ``fit``."""


class InfeasibleError(SdcError, ValueError):
    """A request that no answer can satisfy (with the reason)."""


class ConfigError(SdcError, ValueError):
    """A pipeline configuration with unknown keys, wrong types or columns not in the data."""


class MissingExtraError(SdcError, ImportError):
    """An optional feature used without its extra: the message names the package and the
    ``pip install 'sdckit[extra]'`` line that adds it (raised by :func:`sdckit._io._optional.require`)."""

    def __init__(self, module: str, *, extra: str, what: str) -> None:
        super().__init__(f"{what} needs {module.split('.')[0]}: pip install 'sdckit[{extra}]'", name=module)
        self.module = module
        self.extra = extra
        self.what = what


class ProtocolError(SdcError):
    """A message or request that breaks the shuffle protocol."""


class MalformedMessageError(ProtocolError, ValueError):
    """A message that cannot be parsed or decrypted."""


class ReplayError(ProtocolError):
    """A message whose salt was seen before."""


class AuthError(ProtocolError, PermissionError):
    """A missing or wrong bearer token."""
