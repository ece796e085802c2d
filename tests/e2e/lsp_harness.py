"""Driving `citeline serve` as an editor would: a pytest-lsp client, a small corpus.

The client keeps what the server sends (status notifications, streamed deltas,
diagnostics, messages) and wakes waiters on every message, so tests wait for a
state with a deadline (``wait_until``), never for a fixed time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pymupdf
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCRequestMessage
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from citeline.lsp.server import json_converter

REPO = Path(__file__).resolve().parents[2]

# Generous: the machine has 2 cores shared with other work, and the models are real.
READY_TIMEOUT = 600.0
CHANGE_TIMEOUT = 300.0
ASK_TIMEOUT = 600.0

# Small answers keep generation time down; a long timeout keeps a busy machine from
# turning answers into "timeout" evidence lists.
TEST_SETTINGS: dict[str, Any] = {"answer": {"maxAnswerTokens": 48, "timeoutSeconds": 600}}

GARDEN = """\
# Garden notes

## Tomatoes

Tomatoes need six hours of direct sun every day.
Water tomatoes deeply twice a week, at the roots, in the morning.

## Basil

Basil grows best planted next to tomatoes.
Pinch basil flowers off so the leaves stay sweet.
"""

KITCHEN = """\
# Kitchen notebook

## Bread

Knead the dough for ten minutes, then let it rise for two hours in a warm place.
Bake the loaf at 230 degrees Celsius for thirty-five minutes.
"""

ASTRONOMY = """\
# Night sky

## Jupiter

Jupiter is the largest planet in the solar system and has at least ninety-five moons.
Its Great Red Spot is a storm larger than the Earth.
"""

PDF_PAGES = [
    "Bicycle maintenance manual. Chapter one covers cleaning the frame.",
    "Chain care. Lubricate the bicycle chain every three hundred kilometres with a drop "
    "of oil on each link, then wipe off the excess.",
]


def write_pdf(path: Path, pages: list[str]) -> None:
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 520, 770), text, fontsize=12)
    doc.save(str(path))
    doc.close()


def mark(root: Path) -> Path:
    """Make ``root`` a documents folder as a user would: a ``citeline.toml`` in it (a
    workspace folder without one is not served)."""
    (root / "citeline.toml").write_text("# a documents folder Citeline serves\n", "utf-8")
    return root


def make_corpus(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    mark(root)
    (root / "garden.md").write_text(GARDEN, "utf-8")
    (root / "kitchen.md").write_text(KITCHEN, "utf-8")
    (root / "astronomy.md").write_text(ASTRONOMY, "utf-8")
    write_pdf(root / "bicycle.pdf", PDF_PAGES)
    return root


class CitelineClient(LanguageClient):
    """pytest-lsp's client keeping Citeline's notifications and streamed deltas."""

    statuses: list[dict[str, Any]]
    deltas: dict[str | int, list[str]]
    changed: asyncio.Event


def make_client() -> CitelineClient:
    client = CitelineClient(converter_factory=json_converter)
    client.statuses = []
    client.deltas = {}
    client.changed = asyncio.Event()
    features = dict(DEFAULT_CLIENT_FEATURES)
    default_progress = features.pop(types.PROGRESS)
    default_diagnostics = features.pop(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    default_show = features.pop(types.WINDOW_SHOW_MESSAGE)
    register_lsp_features(client, features)

    def wake() -> None:
        client.changed.set()

    @client.feature(types.PROGRESS)
    def progress(ls: CitelineClient, params: types.ProgressParams) -> None:
        value = params.value
        if isinstance(value, dict) and "delta" in value and "kind" not in value:
            ls.deltas.setdefault(params.token, []).append(str(value["delta"]))
        else:
            default_progress(ls, params)
        wake()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(ls: CitelineClient, params: types.PublishDiagnosticsParams) -> None:
        default_diagnostics(ls, params)
        wake()

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def show_message(ls: CitelineClient, params: types.ShowMessageParams) -> None:
        default_show(ls, params)
        wake()

    @client.feature("citeline/status")
    def status(ls: CitelineClient, params: dict[str, Any]) -> None:
        ls.statuses.append(params)
        wake()

    return client


def server_command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "citeline.cli", "serve", *extra]


async def start(
    editor: str,
    folders: list[Path],
    *,
    init_options: dict[str, Any] | None = None,
    extra_args: tuple[str, ...] = (),
    configuration: dict[str, Any] | None = None,
    root_only: bool = False,
) -> CitelineClient:
    """Start the server as ``editor`` would (its captured capabilities) and initialize."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    config = ClientServerConfig(
        server_command=server_command(*extra_args), client_factory=make_client, server_env=env
    )
    client = await config.start()
    assert isinstance(client, CitelineClient)
    if configuration is not None:
        client.set_configuration(configuration)
    capabilities = client_capabilities(editor)
    workspace_folders = (
        None
        if root_only or not folders
        else [types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders]
    )
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=folders[0].as_uri() if folders else None,
            workspace_folders=workspace_folders,
            initialization_options=init_options
            if init_options is not None
            else dict(TEST_SETTINGS),
            client_info=types.ClientInfo(name=f"pytest ({editor})"),
        )
    )
    return client


async def stop(client: CitelineClient) -> None:
    try:
        await asyncio.wait_for(client.shutdown_session(), 60)
    finally:
        await client.stop()


async def wait_until(
    client: CitelineClient, predicate: Callable[[], Any], timeout: float, what: str
) -> Any:
    """Wait (woken by each notification) until ``predicate()`` is truthy; return it."""
    deadline = time.monotonic() + timeout
    while True:
        client.changed.clear()
        value = predicate()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(client.changed.wait(), remaining)


def latest_status(client: CitelineClient) -> dict[str, Any] | None:
    return client.statuses[-1] if client.statuses else None


def folder_status(client: CitelineClient, folder: Path) -> dict[str, Any] | None:
    status = latest_status(client)
    if status is None:
        return None
    for entry in status["folders"]:
        if entry["uri"] == folder.as_uri():
            return dict(entry)
    return None


async def wait_ready(client: CitelineClient, *folders: Path) -> None:
    def ready() -> bool:
        entries = [folder_status(client, f) for f in folders]
        return all(e is not None and e["state"] == "ready" for e in entries)

    await wait_until(client, ready, READY_TIMEOUT, f"{', '.join(f.name for f in folders)} ready")


async def request(
    client: CitelineClient, method: str, params: Any, msg_id: str | None = None
) -> Any:
    return await client.protocol.send_request_async(method, params, msg_id=msg_id)


_raw_ids = itertools.count(1)


async def raw_request(client: CitelineClient, method: str, params: Any) -> Any:
    """Send ``params`` exactly as given (even for a standard method); the raw result."""
    msg_id = f"raw-{next(_raw_ids)}-{uuid.uuid4().hex[:6]}"
    future: Future[Any] = Future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data(
        JsonRPCRequestMessage(id=msg_id, method=method, params=params, jsonrpc="2.0")
    )
    return await asyncio.wrap_future(future)


async def expect_error(awaitable: Awaitable[Any], code: int) -> JsonRpcException:
    try:
        result = await awaitable
    except JsonRpcException as exc:
        assert exc.code == code, f"expected error {code}, got {exc.code}: {exc.message}"
        return exc
    raise AssertionError(f"expected error {code}, got result {result!r}")


def lines_of(uri: str, rng: dict[str, Any]) -> str:
    """The text of the whole lines a citation range covers."""
    assert uri.startswith("file://")
    path = Path(uri[len("file://") :].split("#")[0])
    lines = path.read_text("utf-8").splitlines()
    return "\n".join(lines[rng["start"]["line"] : rng["end"]["line"]])


async def search(
    client: CitelineClient, query: str, k: int = 5, **extra: Any
) -> list[dict[str, Any]]:
    result = await request(client, "citeline/search", {"query": query, "k": k, **extra})
    return list(result["hits"])


async def wait_for_search(
    client: CitelineClient,
    query: str,
    accept: Callable[[list[dict[str, Any]]], bool],
    what: str,
    timeout: float = CHANGE_TIMEOUT,
) -> list[dict[str, Any]]:
    """Search again after each notification until ``accept(hits)``."""
    deadline = time.monotonic() + timeout
    while True:
        seen = len(client.statuses)
        hits = await search(client, query)
        if accept(hits):
            return hits
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f}s waiting for {what}; last hits: "
                f"{[(h['path'], h['text'][:60]) for h in hits]}"
            )
        await wait_until(
            client,
            lambda seen=seen: len(client.statuses) > seen,  # type: ignore[misc]
            max(deadline - time.monotonic(), 0.1),
            what,
        )
