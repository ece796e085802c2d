"""pygls' protocol, made safe for a client that sends anything.

What changes from pygls (``LanguageServerProtocol``):

- a message whose params do not fit its method gets an InvalidParams (-32602)
  response naming the method (pygls drops it and leaves the client waiting), and
  every bad input is one log line, never a traceback (pygls logs one per failure);
- ``initialize`` is accepted once per connection (again: -32600 InvalidRequest), and
  requests before it get -32002 ServerNotInitialized, as LSP says;
- a handler's failure is answered and logged in one line; only a bug (an exception
  that is not a JSON-RPC error) logs its traceback;
- the futures of finished notifications are dropped (pygls keeps each one forever);
- ``exit`` ends the transport (``server.request_exit``) rather than raising
  ``SystemExit`` inside the event loop, so a TCP server can end cleanly;
- ``didChange`` of a document that was never opened, or of a notebook, is ignored:
  nothing is read from disk for it;
- hover's ``citeline`` extension field (which the typed hover params do not carry) is
  kept for the handler (at most a few at a time).

Framing, size and nesting limits are ``lsp/framing.py``'s; the transports are
``lsp/transport.py`` (stdio) and ``lsp/tcp.py``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Generator
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcMethodNotFound,
    JsonRpcRequestCancelled,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    lsp_method,
)

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

MAX_HOVER_EXTRAS = 64
MAX_LOGGED_CHARS = 200


class Exits(Protocol):
    def request_exit(self, code: int) -> None: ...


class Rejected:
    """A message that could not be read; already answered (or logged) once."""

    jsonrpc = "rejected"


def short(text: object, limit: int = MAX_LOGGED_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters: what a log line quotes."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class CitelineProtocol(LanguageServerProtocol):
    def __init__(self, server: LanguageServer, converter: Any) -> None:
        super().__init__(server, converter)
        self._hover_extras: dict[Any, dict[str, Any]] = {}
        self.session_initialized = False

    def new_session(self) -> None:
        """A new client connected (TCP): it initializes again, from a clean slate."""
        for future in list(self._request_futures.values()):
            if not future.done():
                future.cancel()
        self._request_futures.clear()
        self._hover_extras.clear()
        self._result_types.clear()
        self.session_initialized = False
        self._shutdown = False

    # -- reading ----------------------------------------------------------------------

    def structure_message(self, data: dict[str, Any]) -> Any:
        """A JSON-RPC message object as pygls' typed message (or :class:`Rejected`)."""
        if "jsonrpc" not in data:
            return data
        method = data.get("method")
        if method == types.TEXT_DOCUMENT_HOVER and "id" in data:
            params = data.get("params")
            if isinstance(params, dict) and isinstance(params.get("citeline"), dict):
                if len(self._hover_extras) >= MAX_HOVER_EXTRAS:
                    self._hover_extras.clear()  # requests that never ran: forget them
                self._hover_extras[data["id"]] = params["citeline"]
        try:
            if "id" in data:
                if "error" in data:
                    return self._converter.structure(data, types.ResponseErrorMessage)
                if method is not None:
                    kind = self.get_message_type(method) or JsonRPCRequestMessage
                    return self._converter.structure(data, kind)
                kind = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
                return self._converter.structure(data, kind)
            kind = self.get_message_type(method or "") or JsonRPCNotification
            return self._converter.structure(data, kind)
        except Exception as exc:
            self._hover_extras.pop(data.get("id"), None)
            if method is None:
                log.warning("unreadable response from the client: %s", short(exc))
                return Rejected()
            log.warning("invalid params for %s: %s", short(method), short(exc))
            if "id" in data:
                error = JsonRpcInvalidParams(message=f"invalid params for {short(method)}")
                self._send_response(data["id"], error=error.to_response_error())
            return Rejected()

    def handle_message(self, message: Any) -> None:
        if isinstance(message, Rejected):
            return
        method = getattr(message, "method", None)
        is_request = method is not None and hasattr(message, "id")
        if is_request and method == types.INITIALIZE:
            if self.session_initialized:
                log.warning("a second initialize was refused")
                again = JsonRpcInvalidRequest(message="initialize may only be sent once")
                self._send_response(message.id, error=again.to_response_error())
                return
            self.session_initialized = True
        elif method is not None and not self.session_initialized and method != types.EXIT:
            log.info("%s before initialize: refused", short(method))
            if is_request:
                error = JsonRpcServerNotInitialized(message="the server is not initialized yet")
                self._send_response(message.id, error=error.to_response_error())
            return
        super().handle_message(message)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """As pygls, but an error for a message whose id is unknown says ``"id": null``
        (JSON-RPC's rule; lsprotocol's converter would leave the member out)."""
        if error is not None and msg_id is None:
            body = {"jsonrpc": "2.0", "id": None, "error": self._converter.unstructure(error)}
            self._send_data(body)
            return
        super()._send_response(msg_id, result, error)

    def hover_extras(self) -> dict[str, Any]:
        """The current hover request's ``citeline`` field (empty if none)."""
        return self._hover_extras.pop(self.msg_id, {})

    # -- handling: one line per failure ------------------------------------------------

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        try:
            handler = self._get_handler(method_name)
        except JsonRpcMethodNotFound:
            log.warning("unknown method %s", short(method_name))
            error = JsonRpcMethodNotFound(message=f"unknown method {short(method_name)}")
            self._send_response(msg_id, None, error.to_response_error())
            return
        self._ctx_msg_id.set(msg_id)
        try:
            self._execute_handler(
                msg_id=msg_id,
                handler=handler,
                args=(params,),
                callback=partial(self._send_handler_result, msg_id=msg_id),
            )
        except Exception as exc:
            self._send_response(msg_id, None, self._failure(method_name, exc).to_response_error())

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            error: JsonRpcException = JsonRpcRequestCancelled(message="the request was cancelled")
            self._send_response(msg_id, error=error.to_response_error())
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
            return
        self._send_response(msg_id, error=self._failure(str(msg_id), exc).to_response_error())

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if method_name == types.CANCEL_REQUEST:
            self._handle_cancel_notification(params.id)
            return
        try:
            handler = self._get_handler(method_name)
        except JsonRpcMethodNotFound:
            log.info("ignoring notification %s (unknown method)", short(method_name))
            return
        key = f"notification-{uuid.uuid4()}"
        try:
            self._execute_handler(
                msg_id=key,
                handler=handler,
                args=(params,),
                callback=partial(self._notification_done, key, method_name),
            )
        except Exception as exc:
            self._failure(method_name, exc)

    def _notification_done(self, key: str, method: str, future: Future[Any]) -> None:
        self._request_futures.pop(key, None)
        if not future.cancelled() and (exc := future.exception()) is not None:
            self._failure(method, exc)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        if isinstance(msg_id, bool) or not isinstance(msg_id, (int, str)):
            log.info("cancel for an id that is not a string or an integer: ignored")
            return
        future = self._request_futures.pop(msg_id, None)
        if future is None:
            log.debug("cancel for an unknown or finished request %s", short(msg_id))
        elif future.cancel():
            log.info("request %s cancelled", short(msg_id))

    @staticmethod
    def _failure(what: str, exc: BaseException) -> JsonRpcException:
        """The error to answer with; logged in one line (a bug: with its traceback)."""
        if isinstance(exc, JsonRpcException):  # the handler (lsp/errors.py) logged it
            log.debug("%s: %s", short(what), short(exc.message))
            return exc
        log.error("%s failed", short(what), exc_info=exc)
        return JsonRpcInternalError(message=f"Citeline failed ({short(exc)})")

    # -- the built-in methods that change --------------------------------------------

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Ends the transport (stdio: the process; TCP: the server); 0 after shutdown."""
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        server: Exits = self._server  # type: ignore[assignment]
        server.request_exit(0 if self._shutdown else 1)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        """Changes apply to documents the client opened; others are not read from disk."""
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            log.info("didChange of a document that is not open: ignored")
        else:
            for change in params.content_changes:
                self.workspace.update_text_document(params.text_document, change)
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(
        self, params: types.DidChangeNotebookDocumentParams
    ) -> None:
        """Citeline reads no notebooks: their changes are ignored."""
        return None
