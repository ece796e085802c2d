"""The params of Citeline's own requests, parsed once into their wire types.

pygls passes custom params as plain JSON; :func:`parse` checks them against the
method's ``TypedDict`` in ``citeline.wire`` (its keys, each key's type) and the
limits below, and returns the typed params.  A wrong type, a missing required key,
an unknown key, a text longer than :data:`MAX_TEXT_CHARS`, a number out of its
range or a folder that is not a ``file://`` URI is one InvalidParams error (-32602)
naming the key, so a typo never silently changes what is asked and a megabyte of
query is refused at once instead of being searched.  JSON ``null`` is the key left
out.  A command's positional arguments become the same params
(:func:`command_params`).
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from citeline import wire
from citeline.lsp.convert import uri_to_path
from citeline.lsp.errors import invalid_params
from citeline.service.history import MAX_LIMIT

# Keys any request may carry (LSP's WorkDoneProgressParams / PartialResultParams).
MIXINS = frozenset({"workDoneToken", "partialResultToken"})
MAX_TEXT_CHARS = 10_000  # a question, a query, a folder URI
MAX_TOKEN_CHARS = 256
MAX_K = 100
MAX_OFFSET = 1_000_000
# Per key, wherever it appears: an integer's range, a text's own length limit.
BOUNDS: dict[str, tuple[int, int]] = {
    "k": (1, MAX_K),
    "limit": (1, MAX_LIMIT),
    "offset": (0, MAX_OFFSET),
}
TEXT_LIMITS: dict[str, tuple[int, str]] = {"id": (64, "a history entry's id")}
URI_KEYS = frozenset({"folder"})  # a documents folder, named by its file:// URI


def parse(method: wire.Method[wire.P, Any], params: object) -> wire.P:
    """``params`` of ``method`` as its wire type (``{}`` for a method without params)."""
    name = method.name
    if params is None or (isinstance(params, list) and not params):
        params = {}
    if not isinstance(params, Mapping):
        raise invalid_params(f"{name}: params must be an object")
    allowed = method.param_names()
    unknown = sorted(str(k)[:50] for k in params if k not in allowed and k not in MIXINS)
    if unknown:
        listed = ", ".join(unknown[:5]) + (", …" if len(unknown) > 5 else "")
        raise invalid_params(f"{name}: unknown parameter(s): {listed}")
    if method.params is None:
        return cast(wire.P, {})
    required: frozenset[str] = method.params.__required_keys__  # type: ignore[attr-defined]
    out: dict[str, Any] = {}
    for key, kind in typing.get_type_hints(method.params).items():
        value = params.get(key)
        if value is None:
            if key in required:
                raise invalid_params(f"{name}: {key!r} is required")
            continue
        out[key] = _value(name, key, kind, value, required=key in required)
    return cast(wire.P, out)


def _value(method: str, key: str, kind: object, value: object, *, required: bool) -> object:
    if kind is str:
        return _text(method, key, value, required=required)
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise invalid_params(f"{method}: {key!r} must be an integer")
        low, high = BOUNDS[key]
        if not low <= value <= high:
            raise invalid_params(f"{method}: {key!r} must be between {low} and {high}")
        return value
    if set(typing.get_args(kind)) == {str, int}:  # a progress token
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise invalid_params(f"{method}: {key!r} must be a string or an integer")
        if isinstance(value, str) and len(value) > MAX_TOKEN_CHARS:
            raise invalid_params(f"{method}: {key!r} is too long")
        return value
    raise TypeError(f"{method}: no rule for {key!r} of type {kind!r}")  # a new wire type


def _text(method: str, key: str, value: object, *, required: bool) -> str:
    if not isinstance(value, str):
        raise invalid_params(f"{method}: {key!r} must be a string")
    if len(value) > MAX_TEXT_CHARS:
        raise invalid_params(
            f"{method}: {key!r} is too long ({len(value):,} characters; at most {MAX_TEXT_CHARS:,})"
        )
    if required and not value.strip():
        raise invalid_params(f"{method}: {key!r} must not be empty")
    if key in TEXT_LIMITS:
        limit, what = TEXT_LIMITS[key]
        if len(value) > limit or not value.strip():
            raise invalid_params(f"{method}: {key!r} must be {what}")
    if key in URI_KEYS and uri_to_path(value) is None:
        raise invalid_params(f"{method}: {key!r} must be a file:// URI")
    return value


def command_params(method: wire.Method[Any, Any], args: tuple[Any, ...]) -> dict[str, Any]:
    """A command's positional arguments as the params of the request it twins, checked
    for count (the params it may leave out are the optional ones)."""
    names = method.arguments
    if method.params is None:
        required = 0
    else:
        keys: frozenset[str] = method.params.__required_keys__
        required = sum(1 for n in names if n in keys)
    if len(args) < required or len(args) > len(names):
        wanted = f"{required}" if required == len(names) else f"{required} to {len(names)}"
        raise invalid_params(
            f"{method.command}: expected {wanted} argument(s) ({', '.join(names)}), got {len(args)}"
        )
    return dict(zip(names, args, strict=False))


def folder(uri: str | None) -> Path | None:
    """The documents folder a parsed ``folder`` param names (checked by :func:`parse`)."""
    if uri is None:
        return None
    path = uri_to_path(uri)
    assert path is not None, "parse() checks every folder URI"
    return path
