"""Time from starting ``citeline mcp`` to its first answered tool call, on the samples.

Drives ``citeline mcp --docs <a copy of samples/>`` with the MCP SDK's own stdio
client, as an agent's client would: the process is started, initialized, and
sent one tool call; the clock runs from just before the process is started.
``cold``: the folder has no index yet (the first call waits for it to be built);
``warm``: the index exists (every later start).  For each start: until
``initialize`` is answered, until the first tool call (``search``, or ``ask``
with ``--tool ask``) is answered, and the call alone.  Warm figures are medians
over ``--runs`` starts.  The load average is printed with the figures: on a busy
machine they are upper bounds.

    .venv/bin/python benchmarks/mcp_start.py [--runs 3] [--tool search|ask] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from common import REPO

QUESTION = "Where does Citeline store its index?"


async def one_start(docs: Path, tool: str) -> dict[str, float]:
    """Start ``citeline mcp``, initialize, call ``tool`` once; seconds to each step."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline.cli", "mcp", "--docs", str(docs)],
        env=dict(os.environ),
    )
    arguments = {"query": QUESTION} if tool == "search" else {"question": QUESTION}
    with open(os.devnull, "w") as errlog:
        started = time.perf_counter()
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            initialized = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            answered = time.perf_counter()
    if result.isError:
        raise SystemExit(f"{tool} failed: {result.content}")
    return {
        "initialize_s": round(initialized - started, 3),
        "first_call_s": round(answered - started, 3),
        "call_s": round(answered - initialized, 3),
    }


async def measure(runs: int, tool: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="citeline-mcp-bench-") as work:
        docs = Path(work) / "samples"
        shutil.copytree(REPO / "samples", docs, ignore=shutil.ignore_patterns(".citeline"))
        cold = await one_start(docs, tool)
        warm = [await one_start(docs, tool) for _ in range(runs)]
    return {
        "tool": tool,
        "runs": runs,
        "cold": cold,
        "warm": {key: round(statistics.median(w[key] for w in warm), 3) for key in cold},
        "warm_all": warm,
        "loadavg": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="warm starts (default 3)")
    parser.add_argument("--tool", choices=["search", "ask"], default="search")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    out = asyncio.run(measure(max(args.runs, 1), args.tool))
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"citeline mcp on samples/, first call: {out['tool']} (load {out['loadavg']:.2f})")
    for name in ("cold", "warm"):
        figures = out[name]
        print(
            f"  {name:5} start → initialize {figures['initialize_s']:.2f} s,"
            f" → first {out['tool']} answered {figures['first_call_s']:.2f} s"
            f" (the call alone {figures['call_s']:.2f} s)"
        )
    print(f"  warm: median of {out['runs']} starts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
