"""``citeline/ask``: a cited answer, streamed as it is generated, cancellable.

Asks run one at a time on the generation worker, in the order they came.  The
question's retrieval runs on the index worker (which owns the embedder) as an
urgent task, so it overtakes any indexing.  With a ``partialResultToken`` each
piece of text goes to the client as ``$/progress`` ``{"delta": piece}`` as soon
as it is generated.  ``$/cancelRequest`` cancels the handler's task; the
generation loop sees the flag at its next token and stops.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from citeline.core.documents import Hit
from citeline.lsp import params as p
from citeline.lsp.convert import answer_json, uri_to_path
from citeline.lsp.errors import RequestFailed, invalid_params, reported

if TYPE_CHECKING:
    from citeline.lsp.folders import Folder
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

ASK = "citeline/ask"


def resolve_folder(ls: CitelineServer, method: str, uri: str | None) -> Folder | None:
    """The folder a request names (None when it names none); an error if it is not served."""
    if uri is None:
        return None
    path = uri_to_path(uri)
    if path is None:
        raise invalid_params(f"{method}: 'folder' must be a file:// URI")
    folder = ls.folders.get(path)
    if folder is None:
        raise RequestFailed(message=f"{uri} is not a documents folder Citeline serves")
    return folder


def no_folders_error() -> RequestFailed:
    return RequestFailed(
        message="no documents folder: open a folder, set citeline.folders or start with --docs"
    )


async def choose_folder(ls: CitelineServer, question: str, uri: str | None) -> Folder:
    named = resolve_folder(ls, ASK, uri)
    if named is not None:
        return named
    folders = list(ls.folders)
    if not folders:
        raise no_folders_error()
    if len(folders) == 1:
        return folders[0]

    def best() -> Folder:  # index thread: the folder whose best passage scores highest
        scored: list[tuple[float, int, Folder]] = []
        for i, folder in enumerate(folders):
            try:
                hits = ls.folders.workspace(folder).retriever.search(question, 1, rerank=False)
            except Exception as exc:
                log.warning("%s: cannot search: %s", folder.name, exc)
                continue
            scored.append((hits[0].score if hits else float("-inf"), -i, folder))
        if not scored:
            raise RequestFailed(message="no documents folder can be searched now")
        return max(scored, key=lambda s: (s[0], s[1]))[2]

    return await ls.index_worker.call(best, urgent=True)


async def run_ask(
    ls: CitelineServer, question: str, folder_uri: str | None, token: str | int | None
) -> dict[str, Any]:
    folder = await choose_folder(ls, question, folder_uri)
    workspace = await ls.index_worker.call(lambda: ls.folders.workspace(folder), urgent=True)
    loop = asyncio.get_running_loop()
    cancelled = threading.Event()

    def send_delta(piece: str) -> None:  # event loop
        if not cancelled.is_set() and token is not None:
            ls.progress(types.ProgressParams(token=token, value={"delta": piece}))

    def on_token(piece: str) -> None:  # generation thread
        loop.call_soon_threadsafe(send_delta, piece)

    def retrieve(query: str, k: int) -> list[Hit]:  # generation thread -> index thread
        return ls.index_worker.submit(
            lambda: ls.folders.workspace(folder).retriever.search(query, k), urgent=True
        ).result()

    def generate() -> dict[str, object]:  # generation thread
        answer = workspace.ask(
            question,
            on_token=on_token if token is not None else None,
            cancelled=cancelled.is_set,
            retrieve=retrieve,
        )
        return answer.to_json()

    future = ls.generation_worker.submit(generate)
    try:
        result = await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        cancelled.set()
        future.cancel()
        log.info("ask cancelled: %s", question)
        raise
    return answer_json(result, folder.root, folder.uri)


def register(ls: CitelineServer) -> None:
    @ls.feature(ASK)
    @reported(ASK)
    async def ask(ls: CitelineServer, params: Any) -> dict[str, Any]:
        args = p.as_object(ASK, params, ("question", "folder"))
        question = p.text(ASK, args, "question", required=True)
        assert question is not None
        folder = p.text(ASK, args, "folder", required=False)
        token = p.progress_token(ASK, args, "partialResultToken")
        return await run_ask(ls, question.strip(), folder, token)
