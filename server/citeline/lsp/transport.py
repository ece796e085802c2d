"""How ``citeline serve`` talks to its client: stdio here, TCP in ``lsp/tcp.py``; both
read frames with ``lsp/framing.py`` and write through a writer from this module.

stdio (the default): one client, the editor that started the server; its stdin is
read on a thread of its own (unbuffered), so the event loop never waits on it.  The
server ends when the client sends ``exit`` or closes stdin.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable
from functools import partial
from typing import IO, TYPE_CHECKING

from citeline.lsp.framing import Frame, FrameParser, handle_frame

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024
BACKLOG_FRAMES = 64  # frames read ahead of the event loop (stdio)


# -- writers ---------------------------------------------------------------------------


class NullWriter:
    """Where messages go while no client is connected (TCP): nowhere."""

    def write(self, data: bytes) -> None:
        return None

    def close(self) -> None:
        return None


class StreamWriter:
    """A TCP client's stream; writing to a client that went away is not an error."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    def write(self, data: bytes) -> None:
        if not self._writer.is_closing():
            self._writer.write(data)

    def close(self) -> None:
        self._writer.close()


class PipeWriter:
    """stdout: every message written whole and flushed."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stream.close()


# -- stdio -----------------------------------------------------------------------------


class Exit:
    """An exit code and an event to wait for it on the loop."""

    def __init__(self) -> None:
        self.code: int | None = None
        self.event = asyncio.Event()

    def request(self, code: int) -> None:
        if self.code is None:
            self.code = code
        self.event.set()


def stop_on_sigterm(exit_: Exit) -> None:
    """End the server as ``exit`` does when SIGTERM arrives: every index is closed
    cleanly (the next start skips its full check) and the TCP token file removed.
    Only the main thread's loop can take signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return

    def stop() -> None:
        log.info("SIGTERM: closing")
        exit_.request(0)

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)


def serve_stdio(
    ls: CitelineServer, stdin: IO[bytes], stdout: IO[bytes], prefix: bytes = b""
) -> int:
    """Serve one client over stdin/stdout; the exit status (0 after shutdown and exit).
    ``prefix``: what was read from stdin already (``--attach`` reads the first message);
    with ``ls.attach_point``, later windows can attach (``lsp/attach.py``)."""
    return asyncio.run(_stdio(ls, stdin, stdout, prefix))


async def _stdio(ls: CitelineServer, stdin: IO[bytes], stdout: IO[bytes], prefix: bytes) -> int:
    loop = asyncio.get_running_loop()
    exit_ = Exit()
    ls.exit_requested = exit_.request
    stop_on_sigterm(exit_)
    frames: asyncio.Queue[Frame | None] = asyncio.Queue()
    room = threading.Semaphore(BACKLOG_FRAMES)
    ls.protocol.set_writer(PipeWriter(stdout))
    if ls.attach_point is not None:
        try:
            await ls.attach_point.start()
        except OSError as exc:
            log.warning("other windows cannot attach to this server: %s", exc)
            ls.attach_point = None

    def read() -> None:  # its own thread: a blocking read never stalls the loop
        parser = FrameParser()
        read1: Callable[[int], bytes] = getattr(stdin, "read1", stdin.read)
        with contextlib.suppress(AttributeError, OSError, ValueError):
            fd = stdin.fileno()  # unbuffered: a daemon thread blocked in a buffered
            read1 = partial(os.read, fd)  # read would abort the interpreter at exit
        try:
            data = prefix
            while True:
                data = data or read1(READ_CHUNK)
                if not data:
                    break
                for frame in parser.feed(data):
                    room.acquire()
                    loop.call_soon_threadsafe(frames.put_nowait, frame)
                data = b""
        except (OSError, ValueError) as exc:
            log.info("stdin: %s", exc)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone
                loop.call_soon_threadsafe(frames.put_nowait, None)

    threading.Thread(target=read, name="citeline-stdin", daemon=True).start()
    waiting_exit = asyncio.ensure_future(exit_.event.wait())
    try:
        while True:
            getting = asyncio.ensure_future(frames.get())
            await asyncio.wait({getting, waiting_exit}, return_when=asyncio.FIRST_COMPLETED)
            if not getting.done():
                getting.cancel()
                break
            frame = getting.result()
            if frame is None:
                log.info("the client closed the connection")
                break
            room.release()
            handle_frame(ls.protocol, frame)
            if exit_.event.is_set():
                break
    except BrokenPipeError:
        log.error("the client is gone (stdout closed)")
    finally:
        waiting_exit.cancel()
        if ls.attach_point is not None:
            ls.attach_point.stop()
    if exit_.code is not None:
        return exit_.code
    return 0 if ls.protocol._shutdown else 1
