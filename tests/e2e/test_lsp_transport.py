"""How `citeline serve` talks: only framed JSON-RPC on stdout; TCP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from lsp_harness import READY_TIMEOUT, make_client, server_command
from lsprotocol import types
from pytest_lsp import client_capabilities


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_frame(stream: asyncio.StreamReader) -> dict[str, Any]:
    """One message; anything on stdout that is not a framed JSON message fails the test."""
    header = await stream.readline()
    match = re.fullmatch(rb"Content-Length: (\d+)\r\n", header)
    assert match, f"stdout carried something that is not a JSON-RPC header: {header!r}"
    while (line := await stream.readline()) != b"\r\n":
        assert line.lower().startswith(b"content-type:"), f"unexpected header {line!r}"
    body = await stream.readexactly(int(match.group(1)))
    return dict(json.loads(body))


async def test_stdout_carries_only_json_rpc_while_models_load_and_index(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe quick brown fox jumps over the lazy dog.\n")
    process = await asyncio.create_subprocess_exec(
        *server_command("--docs", str(docs)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    stdin.write(
        frame(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": None, "capabilities": {}},
            }
        )
    )
    stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    await stdin.drain()

    async def until_ready() -> None:
        while True:
            message = await read_frame(stdout)
            if message.get("method") == "citeline/status":
                folders = message["params"]["folders"]
                if folders and folders[0]["state"] == "ready":
                    return

    await asyncio.wait_for(until_ready(), READY_TIMEOUT)
    # A malformed body is answered with a framed ParseError (id null), nothing else.
    garbage = b"{not json"
    stdin.write(b"Content-Length: %d\r\n\r\n" % len(garbage) + garbage)
    stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "citeline/status", "params": {}}))
    stdin.write(frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
    await stdin.drain()
    answered: set[int | None] = set()
    while answered != {None, 2, 3}:
        message = await asyncio.wait_for(read_frame(stdout), 60)
        if "id" in message and "method" not in message:
            if message["id"] is None:
                assert message["error"]["code"] == -32700, message
            else:
                assert "error" not in message, message
            answered.add(message["id"])
    stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
    await stdin.drain()
    assert await asyncio.wait_for(process.wait(), 60) == 0
    assert await stdout.read() == b""


async def test_tcp_binds_to_localhost_and_serves_a_client_with_the_token(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "run" / "tcp-{port}.token"
    process = await asyncio.create_subprocess_exec(
        *server_command("--tcp", "0", "--token-file", str(token_file)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    try:

        async def address() -> tuple[str, int]:
            assert process.stderr is not None
            while line := await process.stderr.readline():
                match = re.search(rb"Serving on \('([\d.]+)', (\d+)\)", line)
                if match:
                    return match.group(1).decode(), int(match.group(2))
            raise AssertionError("the server ended without listening")

        host, port = await asyncio.wait_for(address(), 120)
        assert host == "127.0.0.1"
        written = Path(str(token_file).replace("{port}", str(port)))
        assert written.stat().st_mode & 0o077 == 0  # the user's alone
        client = make_client()
        await client.start_tcp(host, port)
        client.capabilities = client_capabilities("visual-studio-code")
        await client.initialize_async(
            types.InitializeParams(
                capabilities=client.capabilities,
                process_id=None,
                initialization_options={"token": written.read_text().strip()},
            )
        )
        client.initialized(types.InitializedParams())
        status = await client.protocol.send_request_async("citeline/status", {})
        assert status["folders"] == []
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        assert await asyncio.wait_for(process.wait(), 60) == 0
        assert not written.exists()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_a_bad_tcp_address_is_a_one_line_error() -> None:
    result = subprocess.run(
        server_command("--tcp", "localhost:http"), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "port must be a number" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
