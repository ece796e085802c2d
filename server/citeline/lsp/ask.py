"""``citeline/ask``: a cited answer, streamed as it is generated, cancellable.

With a ``partialResultToken`` each piece of text goes to the client as
``$/progress`` ``{"delta": piece}`` as soon as it is generated.
``$/cancelRequest`` cancels the handler's task; generation stops at its next
token.  Routing, ordering and threads are the service's (``Service.ask``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from citeline import wire
from citeline.lsp import convert
from citeline.lsp.convert import path_to_uri
from citeline.lsp.params import folder
from citeline.lsp.routes import request
from citeline.service.workspace import cited_passages

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer


async def answer_request(
    ls: CitelineServer, question: str, folder: Path | None, token: str | int | None
) -> wire.Answer:
    """The answer to ``question`` as the client gets it; deltas go to ``token``."""

    def send_delta(piece: str) -> None:  # event loop
        assert token is not None
        ls.progress(types.ProgressParams(token=token, value=wire.AskDelta(delta=piece)))

    served, answer = await ls.service.ask(
        question.strip(), folder, send_delta if token is not None else None
    )
    paths = {c.path for c in answer.citations} | {h.chunk.path for h in answer.hits}
    copies = await ls.service.local_copies(served, sorted(paths))
    root = served.root
    return convert.answer(answer, root, path_to_uri(root), copies, cited_passages(answer))


def register(ls: CitelineServer) -> None:
    @request(ls, wire.ASK)
    async def ask(ls: CitelineServer, params: wire.AskParams) -> wire.Answer:
        return await answer_request(
            ls, params["question"], folder(params.get("folder")), params.get("partialResultToken")
        )
