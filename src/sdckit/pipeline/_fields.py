"""The strict pydantic base of every pipeline section and step, and the field types they share.

An unknown key names its near matches; a renamed key says what it became and why. The pipeline
file's sections (:mod:`sdckit.pipeline._config`) and its steps (:mod:`sdckit.pipeline._steps`)
derive from :class:`Strict`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from sdckit._checks import k_message

__all__ = ["Columns", "Flag", "GroupSize", "Number", "OpenShare", "Share", "Strict", "Text", "Whole", "near", "split_columns"]

Whole = Annotated[int, Field(strict=True)]
Number = Annotated[float, Field(strict=True)]
Flag = Annotated[bool, Field(strict=True)]
Text = Annotated[str, Field(strict=True)]
Columns = Annotated[tuple[Text, ...], Field(min_length=1)]


def _k_at_least_two(value: Any) -> Any:
    """A whole number below 2 gets the package's one k message (:func:`sdckit._checks.k_message`)."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 2:
        raise ValueError(k_message(value).replace("k=", "", 1))
    return value


GroupSize = Annotated[int, Field(strict=True), BeforeValidator(_k_at_least_two)]
"""A k-anonymity target: a whole number of rows, at least 2 (refused when the file is read, with the one k message)."""
Share = Annotated[float, Field(strict=True, ge=0.0, le=1.0)]
"""A probability or a share, 0..1."""
OpenShare = Annotated[float, Field(strict=True, gt=0.0, lt=1.0)]
"""A probability strictly between 0 and 1."""


def split_columns(value: Any) -> Any:
    """``"a, b"`` is the list ``[a, b]``; lists are kept (validated as names later)."""
    if isinstance(value, str):
        return [c.strip() for c in value.split(",") if c.strip()]
    return value


def near(key: str, allowed: Sequence[str]) -> str:
    """`` Did you mean 'x'?`` for the closest allowed keys, else `` Allowed: a, b.``."""
    matches = difflib.get_close_matches(key, list(allowed), n=2, cutoff=0.6)
    return f" Did you mean {' or '.join(map(repr, matches))}?" if matches else f" Allowed: {', '.join(allowed)}."


class Strict(BaseModel):
    """Frozen, no extra keys; an unknown key names its near matches."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, use_attribute_docstrings=True)
    internal: ClassVar[tuple[str, ...]] = ("kind", "source")

    @classmethod
    def allowed_keys(cls) -> tuple[str, ...]:
        """The keys a pipeline file may give (every field but the internal ones)."""
        return tuple(k for k in cls.model_fields if k not in cls.internal)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, raw: Any) -> Any:
        if isinstance(raw, Mapping):
            renamed = getattr(cls, "renamed", {})
            for key in raw:
                if key in renamed:
                    why = getattr(cls, "why_renamed", "")
                    raise ValueError(f"{key!r} was renamed {renamed[key]!r} ({why}); write {renamed[key]}: {raw[key]!r}.")
                if key not in cls.allowed_keys() and key not in cls.internal:
                    raise ValueError(f"unknown key {str(key)!r}.{near(str(key), cls.allowed_keys())}")
        return raw
