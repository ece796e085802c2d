"""The protocol's stdout is a private copy: whatever else prints goes to stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import os
from citeline.stdio import protocol_streams
stdin, out = protocol_streams()
print("printed by a library")
os.write(1, b"written to fd 1 by C code\\n")
out.write(b"protocol bytes")
out.flush()
"""


def test_only_the_protocol_reaches_stdout() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, timeout=60, check=True
    )
    assert proc.stdout == b"protocol bytes"
    assert b"printed by a library" in proc.stderr and b"written to fd 1 by C code" in proc.stderr


LOGGING = """
import logging, sys
from citeline.stdio import log_to_stderr, protocol_streams
class Drop(logging.Filter):
    def filter(self, record):
        return "secret" not in record.getMessage()
stdin, out = protocol_streams()
log_to_stderr(sys.argv[1], False, "chatty", [Drop()])
logging.getLogger("citeline.x").info("an info line")
logging.getLogger("citeline.x").info("a secret line")
logging.getLogger("chatty").info("every message body")
logging.getLogger("chatty").warning("a protocol warning")
"""


def test_the_log_goes_to_stderr_and_the_file_with_the_protocol_library_quiet(
    tmp_path: Path,
) -> None:
    log = tmp_path / "citeline.log"
    proc = subprocess.run(
        [sys.executable, "-c", LOGGING, str(log)], capture_output=True, timeout=60, check=True
    )
    assert proc.stdout == b""
    for text in (proc.stderr.decode(), log.read_text("utf-8")):
        assert "citeline.x: an info line" in text and "chatty: a protocol warning" in text
        assert "secret" not in text and "every message body" not in text
