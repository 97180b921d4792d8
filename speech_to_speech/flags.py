"""Command-line flags derived from a pydantic settings model, so a setting is declared once.

Each field becomes ``--field_name`` (or ``--field-name`` with dashes=True; a field with an
alias is named by its alias, and so is its value in the namespace): its type
from the annotation, its help from the field's description. Booleans get
``--flag/--no-flag``, lists take several values, Literals become choices.
Flags default to "not given", so the caller can layer them over YAML values.
Fields no flag can express (mappings, callables, lists of objects) are left
to YAML and Python.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

# The scalar types a flag can take, in the order a union of them tries to parse a value:
# "3" for ``int | str`` is a number (a device index), "mic" a name.
_SCALARS: tuple[type, ...] = (int, float, Path, str)
_METAVARS: dict[Any, str] = {int: "N", float: "X", Path: "PATH", str: "TEXT"}


def _without_none(annotation: Any) -> tuple[Any, ...]:
    """The types a value may have, None and constraints (``Annotated[int, Field(ge=1)]``) left out."""
    if get_origin(annotation) in (Union, types.UnionType):
        options = tuple(a for a in get_args(annotation) if a is not type(None))
    else:
        options = (annotation,)
    return tuple(get_args(a)[0] if get_origin(a) is Annotated else a for a in options)


def _words(option: Any) -> tuple[str, ...] | None:
    """The values of a Literal of strings (``Literal["auto"]``), else None."""
    if get_origin(option) is not Literal:
        return None
    values = get_args(option)
    return values if all(isinstance(v, str) for v in values) else None


def _scalar_parser(options: tuple[Any, ...]) -> Callable[[str], Any] | None:
    """A converter for one value of any of ``options`` (tried in order), or None if unsupported.

    A Literal of words may stand beside the scalars: ``int | Literal["auto"]`` takes ``4`` or ``auto``.
    """
    words = tuple(w for option in options for w in (_words(option) or ()))
    scalars = tuple(o for o in options if _words(o) is None)
    if not all(o in _SCALARS for o in scalars) or not scalars:
        return None
    if len(scalars) == 1 and not words:
        return scalars[0]
    ordered = sorted(scalars, key=_SCALARS.index)

    def parse(text: str) -> Any:
        if text in words:
            return text
        for option in ordered:
            try:
                return option(text)
            except ValueError:
                continue
        raise argparse.ArgumentTypeError(f"invalid value {text!r}")

    parse.__name__ = " or ".join([*(o.__name__ for o in scalars), *words])
    return parse


def flag_kwargs(field: FieldInfo) -> dict[str, Any] | None:
    """argparse keyword arguments for ``field``; None when no flag can express it."""
    options = _without_none(field.annotation)
    if len(options) == 1:
        (base,) = options
        if base is bool:
            return {"action": argparse.BooleanOptionalAction}
        if get_origin(base) is Literal:
            choices = list(get_args(base))
            return {"choices": choices, "type": type(choices[0])}
        if get_origin(base) is list:
            inner = _without_none(get_args(base)[0]) if get_args(base) else (str,)
            item = _scalar_parser(inner)
            return None if item is None else {"nargs": "+", "type": item, "metavar": _metavar(inner)}
    parse = _scalar_parser(options)
    return None if parse is None else {"type": parse, "metavar": _metavar(options)}


def _metavar(options: tuple[Any, ...]) -> str:
    if len(options) == 2 and (words := _words(options[1])) is not None:
        return f"{_METAVARS.get(options[0], 'VALUE')}|{'|'.join(words)}"  # N|auto
    return _METAVARS.get(options[0], "VALUE") if len(options) == 1 else "VALUE"


def _help(field: FieldInfo, extra: str) -> str:
    text = (field.description or "").rstrip()
    if extra:
        text = f"{text} {extra}".strip()
    default = field.get_default(call_default_factory=True)
    if default not in (None, "", [], ()):
        text += f" (default: {default})"
    return text.replace("%", "%%")


def add_model_flags(
    parser: argparse._ActionsContainer,
    model: type[BaseModel],
    *,
    exclude: Iterable[str] = (),
    extra_help: dict[str, str] | None = None,
    dashes: bool = False,
    unlisted: Iterable[str] = (),
) -> list[str]:
    """Add a flag for every expressible field of ``model``; returns the flag names added (alias, else name).

    ``extra_help`` appends text to a field's help; ``dashes`` spells ``--send-rate``, not ``--send_rate``;
    ``unlisted`` fields still parse but stay out of ``--help``.
    """
    skipped, quiet = set(exclude), set(unlisted)
    added = []
    for attribute, field in model.model_fields.items():
        name = field.alias or attribute
        if name in skipped:
            continue
        kwargs = flag_kwargs(field)
        if kwargs is None:
            continue
        parser.add_argument(
            f"--{name.replace('_', '-') if dashes else name}",
            dest=name,
            default=argparse.SUPPRESS,
            help=argparse.SUPPRESS if name in quiet else _help(field, (extra_help or {}).get(name, "")),
            **kwargs,
        )
        added.append(name)
    return added


def given_values(namespace: argparse.Namespace, fields: Iterable[str]) -> dict[str, Any]:
    """The values of ``fields`` that were given on the command line."""
    return {name: getattr(namespace, name) for name in fields if hasattr(namespace, name)}
