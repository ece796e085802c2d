"""The protocol's stdout is a private copy: whatever else prints goes to stderr."""

from __future__ import annotations

import subprocess
import sys

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
