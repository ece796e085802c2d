"""Ingest speed and memory with the default embedding model.

Prints: raw model embedding throughput (chunks/s, tokens/s), for all-MiniLM-L6-v2
and then for multilingual-e5-small on the same chunks (``--no-e5`` skips it; its
tokens are its own SentencePiece pieces, truncated at its 512-token window);
``--mixed N`` also cold-indexes a folder of N English abstracts and N Chinese
paragraphs (CMRC 2018 trial paragraphs, from ../shared/eval when present, else the
samples' Chinese page), which chooses multilingual-e5-small; end-to-end cold
indexing throughput on a realistic corpus and its ratio to the raw figure; time
to re-index after a one-paragraph edit; time for a no-change re-index; peak
memory.  The corpus is scientific abstracts (BEIR SciFact from ../shared/eval
when present, else the slice in tests/fixtures) grouped into Markdown files,
plus Citeline's own sample documents.

``--peer`` also embeds the same chunks with sentence-transformers (PyTorch) in a
separate virtualenv the benchmark creates once under ~/.cache/citeline/bench-peer
(see ``peer.py``) and prints Citeline's tokens/s divided by the peer's.  Tokens are
the model's WordPiece tokens per chunk, special tokens included, truncated at 256,
the window both run with.  ``--json`` prints one JSON object instead of lines.

``--busy N`` runs everything beside N external processes that each keep a core busy
(``python -c 'while True: pass'``, each in a session of its own, as from another
terminal): the loaded figure, reproducibly.  Every run records what other processes
asked of the CPU before it started (``others_before``: busy cores over half a second
and runnable tasks, before the busy processes start) and the lanes the embedder chose
for its last batch (``lanes``).

    .venv/bin/python benchmarks/ingest.py [--peer] [--json] [--abstracts 800]
        [--rounds 3] [--work /tmp/citeline-bench-ingest] [--no-e5] [--mixed 20] [--busy 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from citeline.app import ModelPool, open_workspace
from citeline.core.chunking import chunk_document, embedding_text
from citeline.core.loaders import load_document
from citeline.settings import load_settings
from common import busy_processes, others_now, peak_rss_mb, scientific_abstracts, write_corpus

WINDOW = 256  # all-MiniLM-L6-v2's max_seq_length, in Citeline and sentence-transformers
CMRC_TRIAL = Path(__file__).resolve().parents[1] / "../shared/eval/cmrc2018/cmrc2018_trial.json"


def _model_tokens(embedder: Any, text: str, window: int = WINDOW) -> int:
    """Tokens the model evaluates for ``text`` (special tokens included, truncated)."""
    tokenize = getattr(embedder, "tokenize", None)
    n = len(tokenize(text)) if tokenize else embedder.count_tokens(text) + 2
    return min(n, window)


def _raw(embedder: Any, texts: list[str], rounds: int, window: int) -> dict[str, Any]:
    """Embedding ``texts`` straight into the model: the median of ``rounds``."""
    tokens = sum(_model_tokens(embedder, t, window) for t in texts)
    embedder.embed_documents(texts[:16])  # warm up
    times, cpu_times = [], []
    for _ in range(max(rounds, 1)):
        started, cpu_started = time.perf_counter(), time.process_time()
        embedder.embed_documents(texts)
        times.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - cpu_started)
    seconds, cpu_seconds = statistics.median(times), statistics.median(cpu_times)
    return {
        "model": embedder.name,
        "chunks": len(texts),
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "times": [round(t, 3) for t in times],
        "chunks_per_s": round(len(texts) / seconds, 2),
        "tokens_per_s": round(tokens / seconds, 1),
        "cpu_seconds": round(cpu_seconds, 3),
        "tokens_per_cpu_s": round(tokens / cpu_seconds, 1),
        "threads": getattr(embedder, "threads", None),
        "lanes": getattr(embedder, "last_lanes", None),
    }


def _chinese_paragraphs(n: int) -> list[str]:
    if CMRC_TRIAL.is_file():
        data = json.loads(CMRC_TRIAL.read_text("utf-8"))
        paragraphs = [p["context"] for a in data["data"] for p in a["paragraphs"]]
        return paragraphs[:n]
    samples = Path(__file__).resolve().parents[1] / "samples" / "zh"
    return [p.read_text("utf-8") for p in sorted(samples.glob("*.md"))][:n]


def _build() -> str:
    try:
        import llama_cpp

        return str(llama_cpp.llama_print_system_info().decode().strip())
    except Exception as exc:  # pragma: no cover - informational only
        return f"unknown ({exc})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--abstracts", type=int, default=800)
    parser.add_argument("--work", default="/tmp/citeline-bench-ingest")
    parser.add_argument("--peer", action="store_true", help="compare with sentence-transformers")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rounds", type=int, default=3, help="raw timings (median)")
    parser.add_argument(
        "--threads", type=int, default=0, help="threads for Citeline and the peer (0: default)"
    )
    parser.add_argument("--no-e5", action="store_true", help="skip multilingual-e5-small")
    parser.add_argument(
        "--mixed", type=int, default=0, help="cold-index N English + N Chinese files"
    )
    parser.add_argument("--busy", type=int, default=0, help="run beside N external busy processes")
    parser.add_argument(
        "--lanes-beyond",
        type=int,
        default=None,
        help="lanes beyond the free cores (cpu_free.lanes_for; default: its BEYOND)",
    )
    args = parser.parse_args()
    result: dict[str, Any] = {
        "load_average_before": list(os.getloadavg()),
        "others_before": others_now(),
        "busy": args.busy,
        "cpus": os.cpu_count(),
    }
    with busy_processes(args.busy) if args.busy else contextlib.nullcontext():
        measure(args, result)
    if args.json:
        print(json.dumps(result))


def measure(args: argparse.Namespace, result: dict[str, Any]) -> None:
    say = (lambda *_: None) if args.json else print
    if args.busy:
        say(f"beside {args.busy} busy process(es); others before: {result['others_before']}")

    docs = write_corpus(Path(args.work) / "docs", scientific_abstracts(args.abstracts))
    settings, _ = load_settings(docs)
    if args.threads:
        settings = replace(settings, embedding=replace(settings.embedding, threads=args.threads))
    models = ModelPool()
    started = time.perf_counter()
    embedder = models.embedder(settings.embedding)
    load_seconds = time.perf_counter() - started
    if args.lanes_beyond is not None:
        embedder._lanes_beyond = args.lanes_beyond  # type: ignore[attr-defined]
    result["lanes_beyond"] = getattr(embedder, "_lanes_beyond", None)
    if args.lanes_beyond is not None:
        embedder._lanes_beyond = args.lanes_beyond  # type: ignore[attr-defined]
    result["lanes_beyond"] = getattr(embedder, "_lanes_beyond", None)
    say(f"model load: {load_seconds:.2f} s ({embedder.name})")

    # Raw: the embedding texts of the first files, straight into the model.
    texts: list[str] = []
    for path in sorted(docs.glob("papers-*.md"))[:40]:
        document = load_document(path, path.name)
        texts += [
            embedding_text(c, settings.chunking)
            for c in chunk_document(document, settings.chunking)
        ]
    texts = texts[:256]
    raw = _raw(embedder, texts, args.rounds, WINDOW)
    tokens, raw_seconds, cpu_seconds = raw["tokens"], raw["seconds"], raw["cpu_seconds"]
    raw_rate = len(texts) / raw_seconds
    say(
        f"raw embedding: {len(texts)} chunks, {tokens} tokens in {raw_seconds:.2f} s ="
        f" {raw_rate:.1f} chunks/s, {tokens / raw_seconds:.0f} tokens/s"
        f" ({raw['threads']} threads, {raw['lanes']} lanes in the last batch)"
    )
    result["citeline"] = {
        **raw,
        "load_seconds": round(load_seconds, 3),
        "build": _build(),
        "omp_env": {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "GOMP_"))},
    }

    if not args.no_e5:
        from citeline.models.e5 import MAX_TOKENS

        e5_settings = replace(settings.embedding, model="multilingual-e5-small")
        started = time.perf_counter()
        e5 = models.embedder(e5_settings)
        e5_load = time.perf_counter() - started
        multilingual = _raw(e5, texts, args.rounds, MAX_TOKENS)
        say(
            f"raw embedding, {e5.name}: {len(texts)} chunks, {multilingual['tokens']} tokens"
            f" in {multilingual['seconds']:.2f} s = {multilingual['chunks_per_s']:.1f}"
            f" chunks/s, {multilingual['tokens_per_s']:.0f} tokens/s"
            f" ({multilingual['seconds'] / raw_seconds:.2f}x MiniLM's time)"
        )
        result["e5"] = {**multilingual, "load_seconds": round(e5_load, 3)}

    if args.peer:
        from citeline.models.minilm import minilm_source_dir
        from peer import run_peer

        peer = run_peer(
            minilm_source_dir(), texts, rounds=max(args.rounds, 1), threads=args.threads
        )
        ratio = (tokens / raw_seconds) / peer["tokens_s"]
        cpu_ratio = (tokens / cpu_seconds) / peer["tokens_per_cpu_s"]
        say(
            f"peer (sentence-transformers {peer['sentence_transformers']}, torch {peer['torch']},"
            f" {peer['torch_threads']} threads): {peer['tokens']} tokens in"
            f" {peer['seconds']:.2f} s = {peer['chunks_s']:.1f} chunks/s,"
            f" {peer['tokens_s']:.0f} tokens/s"
        )
        say(
            f"peer ratio (Citeline tokens/s / peer tokens/s): {ratio:.2f}x;"
            f" per CPU-second: {cpu_ratio:.2f}x"
        )
        result["peer"] = {
            "chunks": peer["chunks"],
            "tokens": peer["tokens"],
            "seconds": round(peer["seconds"], 3),
            "times": [round(t, 3) for t in peer["times"]],
            "chunks_per_s": round(peer["chunks_s"], 2),
            "tokens_per_s": round(peer["tokens_s"], 1),
            "torch": peer["torch"],
            "torch_threads": peer["torch_threads"],
            "sentence_transformers": peer["sentence_transformers"],
            "batch_size": peer["batch_size"],
            "cpu_seconds": round(peer["cpu_seconds"], 3),
            "tokens_per_cpu_s": round(peer["tokens_per_cpu_s"], 1),
        }
        result["peer_ratio"] = round(ratio, 3)
        # Tokens per CPU-second of all threads: robust to other processes' load when
        # neither side spins; with spinning threads it counts the spinning too.
        result["peer_ratio_per_cpu_second"] = round(cpu_ratio, 3)
        result["tokens_match"] = peer["tokens"] == tokens

    workspace = open_workspace(docs, settings, models)
    cold = workspace.update()
    rate = cold.embedded / cold.seconds
    say(
        f"cold index: {cold.files} files, {cold.chunks} chunks in {cold.seconds:.2f} s ="
        f" {rate:.1f} chunks/s ({rate / raw_rate:.0%} of raw)"
    )
    result["cold_index"] = {
        "files": cold.files,
        "chunks": cold.chunks,
        "embedded": cold.embedded,
        "seconds": round(cold.seconds, 3),
        "chunks_per_s": round(rate, 2),
    }
    result["raw_chunks_per_s"] = round(raw_rate, 2)
    result["end_to_end_chunks_per_s"] = round(rate, 2)
    result["end_to_end_vs_raw"] = round(rate / raw_rate, 3)

    noop = workspace.update()
    say(f"no-change re-index: {noop.seconds * 1000:.0f} ms (embedded {noop.embedded})")
    result["no_change"] = {"ms": round(noop.seconds * 1000, 1), "embedded": noop.embedded}

    target = sorted(docs.glob("papers-*.md"))[len(list(docs.glob("papers-*.md"))) // 2]
    text = target.read_text()
    first_section = text.index("## ")
    paragraph_end = text.index("\n", text.index("\n\n", first_section) + 2)
    edited = (
        text[:paragraph_end] + " This sentence was added by the benchmark." + text[paragraph_end:]
    )
    target.write_text(edited)
    started = time.perf_counter()
    edit = workspace.update()
    edit_ms = (time.perf_counter() - started) * 1000
    say(f"one-paragraph edit: {edit_ms:.0f} ms (embedded {edit.embedded}, reused {edit.reused})")
    result["edit"] = {"ms": round(edit_ms, 1), "embedded": edit.embedded, "reused": edit.reused}
    target.write_text(text)
    workspace.update()
    workspace.close()
    if args.mixed:
        result["mixed"] = _mixed(Path(args.work) / "mixed", args.mixed, models, say)
    say(f"peak memory: {peak_rss_mb():.0f} MiB")
    result["peak_memory_mib"] = round(peak_rss_mb())
    result["load_average_after"] = list(os.getloadavg())


def _mixed(folder: Path, n: int, models: ModelPool, say: Any) -> dict[str, Any]:
    """Cold index of a folder of ``n`` English abstracts and ``n`` Chinese paragraphs."""
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    docs = folder / "docs"
    docs.mkdir(parents=True)
    for i, (title, text) in enumerate(scientific_abstracts(n)):
        (docs / f"en-{i:03d}.md").write_text(f"# {title}\n\n{text}\n", "utf-8")
    for i, text in enumerate(_chinese_paragraphs(n)):
        (docs / f"zh-{i:03d}.txt").write_text(text, "utf-8")
    started = time.perf_counter()
    settings, _ = load_settings(docs)
    choose_seconds = time.perf_counter() - started
    workspace = open_workspace(docs, settings, models)
    cold = workspace.update()
    workspace.close()
    say(
        f"mixed folder ({n} English + {n} Chinese documents, {settings.embedding.reason}):"
        f" {cold.files} files, {cold.chunks} chunks in {cold.seconds:.2f} s"
        f" (+{choose_seconds:.2f} s choosing the model) with {workspace.embedder.name}"
    )
    return {
        "files": cold.files,
        "chunks": cold.chunks,
        "seconds": round(cold.seconds, 3),
        "choose_seconds": round(choose_seconds, 3),
        "model": workspace.embedder.name,
        "reason": settings.embedding.reason,
    }


if __name__ == "__main__":
    main()
