"""Checking the params of Citeline's own requests (pygls passes them as plain JSON).

A wrong type, a missing required key, an unknown key or a text longer than
:data:`MAX_TEXT_CHARS` is an InvalidParams error (-32602) naming the key, so a
typo never silently changes what is asked and a megabyte of query is refused at
once instead of being searched.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from citeline import wire
from citeline.lsp.convert import uri_to_path
from citeline.lsp.errors import invalid_params

# Keys any request may carry (LSP's WorkDoneProgressParams / PartialResultParams).
MIXINS = frozenset({"workDoneToken", "partialResultToken"})
MAX_TEXT_CHARS = 10_000  # a question, a query, a folder URI


def object_params(method: str, params: object, allowed: Collection[str]) -> Mapping[str, Any]:
    """``params`` as an object with only ``allowed`` keys (``None`` = empty)."""
    if params is None:
        return {}
    if isinstance(params, list) and not params:
        return {}
    if not isinstance(params, Mapping):
        raise invalid_params(f"{method}: params must be an object")
    unknown = sorted(str(k)[:50] for k in params if k not in allowed and k not in MIXINS)
    if unknown:
        listed = ", ".join(unknown[:5]) + (", …" if len(unknown) > 5 else "")
        raise invalid_params(f"{method}: unknown parameter(s): {listed}")
    return params


def request_params(method: wire.Method, params: object) -> Mapping[str, Any]:
    """``params`` of ``method`` as an object with only the keys its wire type names."""
    return object_params(method.name, params, method.param_names())


def string_param(method: str, params: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = params.get(key)
    if value is None:
        if required:
            raise invalid_params(f"{method}: {key!r} is required")
        return None
    if not isinstance(value, str):
        raise invalid_params(f"{method}: {key!r} must be a string")
    if len(value) > MAX_TEXT_CHARS:
        raise invalid_params(
            f"{method}: {key!r} is too long ({len(value):,} characters; at most {MAX_TEXT_CHARS:,})"
        )
    if required and not value.strip():
        raise invalid_params(f"{method}: {key!r} must not be empty")
    return value


def int_param(
    method: str, params: Mapping[str, Any], key: str, *, low: int, high: int
) -> int | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_params(f"{method}: {key!r} must be an integer")
    if not low <= value <= high:
        raise invalid_params(f"{method}: {key!r} must be between {low} and {high}")
    return value


def token_param(method: str, params: Mapping[str, Any], key: str) -> str | int | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise invalid_params(f"{method}: {key!r} must be a string or an integer")
    if isinstance(value, str) and len(value) > 256:
        raise invalid_params(f"{method}: {key!r} is too long")
    return value


def command_args(method: str, args: tuple[Any, ...], names: list[str], required: int) -> list[Any]:
    """Command arguments, checked for count; missing optional ones are None."""
    if len(args) < required or len(args) > len(names):
        wanted = f"{required}" if required == len(names) else f"{required} to {len(names)}"
        raise invalid_params(
            f"{method}: expected {wanted} argument(s) ({', '.join(names)}), got {len(args)}"
        )
    return list(args) + [None] * (len(names) - len(args))


def folder_param(method: str, params: Mapping[str, Any], key: str) -> Path | None:
    """The documents folder a request names by its ``file://`` URI, or None."""
    uri = string_param(method, params, key, required=False)
    if uri is None:
        return None
    path = uri_to_path(uri)
    if path is None:
        raise invalid_params(f"{method}: {key!r} must be a file:// URI")
    return path
