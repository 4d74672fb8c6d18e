"""The workbench's step forms, generated from the step registry (:data:`sdckit.pipeline._steps.STEPS`).

Each option of a step kind (:meth:`~sdckit.pipeline._steps.Step.options_schema`: its name, its
values in words, its default, its help) becomes one input of the step's form, chosen by its values:

* ``a | b | c`` (a choice): a select whose first entry is the default;
* ``true | false``: a checkbox, preset to the default;
* ``whole number`` or ``number``: a number input, the default as its placeholder;
* ``mapping`` (recode's ``rules``, pram's ``matrix``): a text area holding YAML flow text;
* anything else (``list of columns``, ``number or recommended``, ``plan or list of columns``...):
  a text input; a list is written comma separated.

An empty input means the default: the option is left out of the step (a checkbox left at its
default too). :func:`options_from_fields` turns the submitted fields back into the step's options
by the option's values in words, and :func:`parse_step_fields` validates them through the same path
as the YAML text (:func:`sdckit.app._session.parse_step`), so a wrong value gets the pipeline
file's one-line :class:`~sdckit.errors.ConfigError`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from markupsafe import escape

from sdckit.app._session import SOURCE, parse_step_options, step_text
from sdckit.errors import ConfigError
from sdckit.pipeline._config import STEP_KINDS, parse_config
from sdckit.pipeline._steps import STEPS

__all__ = [
    "FIELD_PREFIX",
    "StepField",
    "field_values",
    "options_from_fields",
    "parse_step_fields",
    "posted_values",
    "step_fields",
    "uses_yaml",
]

FIELD_PREFIX = "opt:"
"""A step form's input for option ``name`` is named ``opt:name``."""

_BOOL = "true | false"
_TYPE_WORDS = ("whole number", "number", "text", "mapping")
_TRUE = (True, "true", "on", "yes", "1")
_FALSE = (False, "false", "off", "no", "0")


@dataclass(frozen=True)
class StepField:
    """One input of a step form: an option of the step and how the page asks for it."""

    name: str
    """The option's name (the input is named ``opt:<name>``)."""
    widget: str
    """``select``, ``checkbox``, ``number``, ``yaml`` (a text area of YAML flow text) or ``text``."""
    type: str
    """The option's values in words, as the registry states them (``whole number``, ``mdav | vmdav``)."""
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    """A select's values."""
    example: str = ""
    """The option's value in the step's ``example``, as the input shows it (a hint when there is no default)."""

    @property
    def input_name(self) -> str:
        return FIELD_PREFIX + self.name

    @property
    def default_text(self) -> str:
        """The default as the page writes it ('' when the default is None: the step decides)."""
        return "" if self.default is None else display(self.default)

    @property
    def placeholder(self) -> str:
        if self.default is not None:
            return self.default_text
        return f"e.g. {self.example}" if self.example and self.widget == "yaml" else "default"

    @property
    def number_step(self) -> str:
        """The number input's ``step``: 1 for whole numbers, any otherwise."""
        return "1" if self.type == "whole number" else "any"


def display(value: Any) -> str:
    """An option's value as an input shows it: a list comma separated, a mapping as YAML flow text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (list, tuple, Mapping)) for v in value):
            return ", ".join(display(v) for v in value)
        return step_text(list(value))
    if isinstance(value, Mapping):
        return step_text(dict(value))
    return "" if value is None else str(value)


def _alternatives(type_text: str) -> list[str]:
    return [a.strip() for a in type_text.split(" or ")]


def _words(type_text: str) -> set[str]:
    """The literal words an option takes (``recommended`` of ``number or recommended``, ``mdav``...)."""
    out: set[str] = set()
    for alt in _alternatives(type_text):
        if alt == _BOOL or alt in _TYPE_WORDS or alt.startswith("list of "):
            continue
        out.update(w.strip() for w in alt.split(" | "))
    return out


def _widget(type_text: str) -> tuple[str, tuple[str, ...]]:
    if type_text == _BOOL:
        return "checkbox", ()
    if " or " not in type_text and " | " in type_text:
        return "select", tuple(w.strip() for w in type_text.split(" | "))
    if type_text in ("whole number", "number"):
        return "number", ()
    if type_text == "mapping":
        return "yaml", ()
    return "text", ()


@functools.cache
def _example(kind: str) -> dict[str, Any]:
    try:
        out = yaml.safe_load(STEPS[kind].example)
    except yaml.YAMLError:
        return {}
    return dict(out) if isinstance(out, Mapping) else {}


@functools.cache
def step_fields(kind: str) -> tuple[StepField, ...]:
    """The inputs of ``kind``'s form, one per option, in the registry's order."""
    example = _example(kind)
    out = []
    for opt in STEPS[kind].options_schema():
        widget, choices = _widget(opt.type)
        shown = display(example[opt.name]) if opt.name in example else ""
        out.append(StepField(opt.name, widget, opt.type, opt.default, opt.help, choices, shown))
    return tuple(out)


def field_values(kind: str, options: Any) -> dict[str, Any]:
    """The inputs' values for a step's options as stored (``{option: value}``): text, or a bool for
    a checkbox (its default when the option is not given); an option not given is ''."""
    if not isinstance(options, Mapping):  # a shorthand (``suppress: plan``): the options the step holds
        step = parse_config({"steps": [{kind: options}]}, source=SOURCE).steps[0]
        options = step.model_dump(exclude_unset=True, exclude={"kind"})
    out: dict[str, Any] = {}
    for f in step_fields(kind):
        if f.widget == "checkbox":
            out[f.name] = bool(options[f.name]) if f.name in options else bool(f.default)
        else:
            out[f.name] = display(options.get(f.name))
    return out


def posted_values(kind: str, form: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs' values as posted (a failed change is shown again as the user typed it)."""
    out: dict[str, Any] = {}
    for f in step_fields(kind) if kind in STEPS else ():
        value = form.get(f.input_name)
        if f.widget == "checkbox":
            out[f.name] = bool(f.default) if value is None else value in _TRUE
        else:
            out[f.name] = "" if value is None else str(value)
    return out


def uses_yaml(form: Mapping[str, Any]) -> bool:
    """Whether a posted step is its YAML text (the ``yaml`` switch on, or no form field at all, as
    a script posting ``{"kind": ..., "options": ...}`` does)."""
    return form.get("yaml") in _TRUE or not any(str(key).startswith(FIELD_PREFIX) for key in form)


def _number(text: str, whole: bool) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    if whole:
        try:  # "3.0" from a number input is 3; 3.5 stays text, for the pipeline's message
            value = float(text)
        except ValueError:
            return None
        return int(value) if value.is_integer() else None
    try:
        return float(text)
    except ValueError:
        return None


def _yaml_value(text: str, kind: str, name: str, index: int) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        first = str(err).strip().splitlines()[0]
        example = dict(_example(kind)).get(name)
        hint = f", e.g. {step_text(example)}" if isinstance(example, Mapping) else ", e.g. {column: value}"
        raise ConfigError(
            f"{SOURCE}: steps[{index}].{kind}.{name}: not valid YAML ({first}); write a mapping in YAML flow "
            f"style{hint}."
        ) from None


_LIST_ITEMS = {"whole numbers": "whole number", "numbers": "number"}


def _list(text: str, alternatives: list[str]) -> list[Any] | None:
    """A comma-separated list as the first list alternative all its items convert to (whole
    numbers before columns: ``importance: 1, 2, 3``); None when the option takes no list."""
    kinds = [a.removeprefix("list of ") for a in alternatives if a.startswith("list of ")]
    if not kinds:
        return None
    items = [item.strip() for item in text.split(",") if item.strip()]
    for inner in sorted(kinds, key=lambda k: k not in _LIST_ITEMS):
        if inner in _LIST_ITEMS:
            numbers = [_number(i, _LIST_ITEMS[inner] == "whole number") for i in items]
            if all(n is not None for n in numbers):
                return numbers
        else:
            return items
    return items


def _convert(f: StepField, value: Any, kind: str, index: int) -> Any:
    """One posted input as the option's value, by the option's values in words; the text as typed
    when it is none of them (the pipeline's validation then names the value and what it expected)."""
    if f.widget == "checkbox" or f.type == _BOOL:
        if value in _TRUE:
            return True
        return False if value in _FALSE else value
    if not isinstance(value, str):  # a script posting JSON numbers, lists, mappings
        return value
    text = value.strip()
    alternatives = _alternatives(f.type)
    if text in _words(f.type):
        return text
    for alt in alternatives:
        if alt in ("whole number", "number"):
            number = _number(text, alt == "whole number")
            if number is not None:
                return number
        elif alt == "mapping" and (text.startswith("{") or ":" in text):
            return _yaml_value(text, kind, f.name, index)
    items = _list(text, alternatives)
    if items is not None:
        return items
    if "mapping" in alternatives:
        return _yaml_value(text, kind, f.name, index)
    return value


def options_from_fields(kind: str, form: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The step's options from its posted form fields (``opt:<name>``): an empty input, or a
    checkbox at its default, is left out; a field that is no option of the step is passed on (the
    pipeline names it and its near match)."""
    fields = {f.input_name: f for f in step_fields(kind)}
    out: dict[str, Any] = {}
    for key, value in form.items():
        key = str(key)
        if not key.startswith(FIELD_PREFIX):
            continue
        f = fields.get(key)
        if f is None:
            out[key.removeprefix(FIELD_PREFIX)] = value
            continue
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        converted = _convert(f, value, kind, index)
        if f.widget == "checkbox" and converted == bool(f.default):
            continue
        out[f.name] = converted
    order = [f.name for f in step_fields(kind)]
    return dict(sorted(out.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


def parse_step_fields(kind: str, form: Mapping[str, Any], index: int) -> tuple[str, str]:
    """Validate a step posted as its form: ``(kind, canonical JSON of its options)``, or the pipeline
    file's one-line :class:`~sdckit.errors.ConfigError` (as :func:`~sdckit.app._session.parse_step`)."""
    if kind not in STEP_KINDS:
        raise ConfigError(f"{SOURCE}: steps[{index}]: {kind!r} is not a step; use one of {', '.join(STEP_KINDS)}.")
    return parse_step_options(kind, options_from_fields(kind, form, index), index)


def help_html(text: str) -> str:
    """A help text for the page: escaped; ````code```` and ``:class:`name``` as ``<code>``."""
    html = re.sub(r":\w+:`~?([^`]+)`", r"<code>\1</code>", str(escape(text)))
    return re.sub(r"``(.+?)``", r"<code>\1</code>", html)
