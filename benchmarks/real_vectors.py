"""Recall of the vector index kinds on real MiniLM vectors of a real corpus (issue 25).

``benchmarks/vectors.py`` measures recall on synthetic clustered vectors; this one
measures it where it matters: the chunks of real public documentation (e.g. Debian
manuals, unpacked with ``apt-get download PKG && dpkg -x PKG.deb DIR``), cut by
Citeline's own loaders and chunker, embedded with the folder's model (the bundled
all-MiniLM-L6-v2 by default) exactly as an index embeds them (``embedding_text``, the
document prefix), and searched with real query vectors.

Three steps, each cached in --cache so that a rerun only measures:

1. chunk: every supported file under --corpus is loaded and chunked; duplicate
   embedding texts are dropped (an index embeds each text once); the chunks are
   shuffled (seed 0) so that any prefix of them is a sample of the whole corpus, and
   the first --chunks are kept (``chunks.jsonl``);
2. embed: in that order, --batch chunks a call; ``vectors.npy`` is rewritten every
   --save-every chunks, so an interrupted or --until-limited run keeps what it embedded
   and the next run goes on from there;
3. recall: the embedded chunks are the index, less --held-out of them whose first
   sentence (up to 200 characters) becomes a query ("chunk-derived queries"); the
   questions of --questions files (e.g. eval/manuals-en/questions-tune.jsonl, whose
   documents are in the corpus) are queries too, embedded with the query prefix.  For
   each kind (flat-fp16, ivf-sq8 at the daemon's settings: its lists and probes for
   the index's size, rescoring as ``Base.search`` does) recall@10 is the share of the
   exact (float32 flat) top 10 found.

    .venv/bin/python benchmarks/real_vectors.py --corpus DIR [--cache DIR]
        [--chunks 100000] [--until HH:MM] [--held-out 300]
        [--questions eval/manuals-en/questions-tune.jsonl] [--shares 0.025 0.1] [--json]

--shares also measures ivf-sq8 probing other shares of its lists (no floor of
``IVF_MIN_PROBES``): how many probes real vectors need, which a small sample cannot
show at the daemon's own settings (the floor probes a third of the lists there).

--embed-only stops after step 2 (start it early, under ``nice``); --recall-only measures
what is embedded so far without embedding more.  --json prints one JSON object as
the last line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.backends.faiss import kinds
from citeline.core import loaders
from citeline.core.chunking import ChunkSettings, embedding_key, embedding_text, iter_chunks
from citeline.core.documents import LoadError

K = 10
KINDS = (kinds.FLAT_FP16, kinds.IVF_SQ8)
QUERY_CHARS = 200
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- 1. chunk --------------------------------------------------------------------


def chunk_corpus(corpus: Path, out: Path, limit: int) -> int:
    settings = ChunkSettings()
    seen: set[str] = set()
    rows: list[dict[str, str]] = []
    files = sorted(p for p in corpus.rglob("*") if p.is_file() and loaders.is_supported(p))
    started = time.perf_counter()
    for n, path in enumerate(files, start=1):
        rel = path.relative_to(corpus).as_posix()
        try:
            document = loaders.load_document(path, rel, max_bytes=64 * 2**20)
        except LoadError as exc:
            log(f"  skipped {rel}: {exc}")
            continue
        for chunk in iter_chunks(document, settings):
            text = embedding_text(chunk, settings)
            key = embedding_key(text)
            if key not in seen:
                seen.add(key)
                rows.append({"path": rel, "text": text, "chunk": chunk.text})
        if n % 500 == 0:
            log(f"  chunked {n}/{len(files)} files, {len(rows):,} chunks")
    random.Random(0).shuffle(rows)
    kept = rows[:limit]
    with out.open("w", encoding="utf-8") as f:
        for row in kept:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    log(
        f"chunked {len(files)} files into {len(rows):,} distinct chunks in"
        f" {time.perf_counter() - started:.0f} s; kept {len(kept):,}"
    )
    return len(kept)


def read_chunks(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# -- 2. embed --------------------------------------------------------------------


def make_model(model: str) -> Any:
    from citeline.app import make_embedder
    from citeline.settings import EmbeddingSettings

    return make_embedder(EmbeddingSettings(model=model) if model else EmbeddingSettings())


def embed(
    rows: list[dict[str, str]], vectors_path: Path, embedder: Any, batch: int, save_every: int,
    until: float | None,
) -> int:  # fmt: skip
    done: list[npt.NDArray[np.float32]] = []
    have = 0
    if vectors_path.exists():
        done.append(np.load(vectors_path))
        have = len(done[0])
    log(f"embedding from chunk {have:,} of {len(rows):,} (load {os.getloadavg()[0]:.2f})")
    started, since_save, start_have = time.perf_counter(), 0, have
    while have < len(rows):
        if until is not None and time.time() >= until:
            log("  --until reached")
            break
        part = [row["text"] for row in rows[have : have + batch]]
        done.append(np.asarray(embedder.embed_documents(part), dtype=np.float32))
        have += len(part)
        since_save += len(part)
        if since_save >= save_every or have == len(rows):
            save(vectors_path, done)
            done = [np.load(vectors_path)]
            since_save = 0
            rate = (have - start_have) / (time.perf_counter() - started)
            log(f"  {have:,} embedded, {rate:.1f} chunks/s (load {os.getloadavg()[0]:.2f})")
    if since_save:
        save(vectors_path, done)
    return have


def save(path: Path, parts: list[npt.NDArray[np.float32]]) -> None:
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, np.concatenate(parts) if len(parts) > 1 else parts[0])
    os.replace(tmp, path)


# -- 3. recall -------------------------------------------------------------------


def first_sentence(text: str) -> str:
    body = " ".join(text.split())
    return SENTENCE.split(body, maxsplit=1)[0][:QUERY_CHARS]


def question_texts(files: list[Path]) -> list[str]:
    out = []
    for path in files:
        with path.open(encoding="utf-8") as f:
            out += [json.loads(line)["question"] for line in f if line.strip()]
    return out


def exact_top(vectors: npt.NDArray[np.float32], queries: npt.NDArray[np.float32]) -> list[set[int]]:
    best = []
    for start in range(0, len(queries), 64):
        scores = queries[start : start + 64] @ vectors.T
        top = np.argpartition(-scores, K, axis=1)[:, :K]
        best += [{int(i) + 1 for i in row} for row in top]
    return best


def recall_of(
    kind: str, ids: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32],
    queries: npt.NDArray[np.float32], truth: list[set[int]], *, share: float | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Recall@10 of ``kind`` built over ``vectors``.  ``share``: ivf-sq8 probing that
    share of its lists, without the floor of ``IVF_MIN_PROBES`` (below ~26,000 vectors
    the floor probes a far larger share than the daemon does at 1M: 16 of 47 lists at
    1,848 vectors against 100 of 4,000, ``IVF_PROBE_SHARE``)."""
    started = time.perf_counter()
    base = kinds.build_base(kind, ids, vectors, vectors.shape[1])
    build_s = time.perf_counter() - started
    floor, daemon_share = kinds.IVF_MIN_PROBES, kinds.IVF_PROBE_SHARE
    if share is not None:  # both read by ivf_probes at each search
        kinds.IVF_MIN_PROBES, kinds.IVF_PROBE_SHARE = 1, share
    recalls, latencies = [], []
    try:
        for query, expected in zip(queries, truth, strict=True):
            t = time.perf_counter()
            found = base.search(query.reshape(1, -1), K, None)
            latencies.append(time.perf_counter() - t)
            recalls.append(len({i for i, _ in found} & expected) / K)
        probes = kinds.ivf_probes(kinds.ivf_lists(len(ids)))
    finally:
        kinds.IVF_MIN_PROBES, kinds.IVF_PROBE_SHARE = floor, daemon_share
    row: dict[str, Any] = {
        "kind": kind + (f" (probes {share:.1%} of lists)" if share is not None else ""),
        "recall_at_10": round(statistics.fmean(recalls), 4),
        "recall_at_10_min": round(min(recalls), 2),
        "search_p50_ms": round(statistics.median(latencies) * 1000, 2),
        "build_s": round(build_s, 1),
    }
    if kind == kinds.IVF_SQ8:
        row.update(lists=kinds.ivf_lists(len(ids)), probes=probes)
    return row


def measure(
    rows: list[dict[str, str]], vectors: npt.NDArray[np.float32], embedder: Any,
    held_out: int, questions: list[str], shares: list[float],
) -> dict[str, Any]:  # fmt: skip
    n = len(vectors) - held_out
    index_vectors = np.ascontiguousarray(vectors[:n])
    ids = np.arange(1, n + 1, dtype=np.int64)
    sets: dict[str, list[str]] = {
        "chunk_queries": [first_sentence(row["chunk"]) for row in rows[n : len(vectors)]],
        "questions": questions,
    }
    out: dict[str, Any] = {"index_vectors": n, "load_average": round(os.getloadavg()[0], 2)}
    for name, texts in sets.items():
        if not texts:
            continue
        queries = np.vstack([np.asarray(embedder.embed_query(t), np.float32) for t in texts])
        truth = exact_top(index_vectors, queries)
        results = [recall_of(kind, ids, index_vectors, queries, truth) for kind in KINDS]
        for share in shares:
            results.append(
                recall_of(kinds.IVF_SQ8, ids, index_vectors, queries, truth, share=share)
            )
        out[name] = {"queries": len(texts), "kinds": results}
        for r in results:
            extra = f" lists {r['lists']} probes {r['probes']}" if "lists" in r else ""
            log(
                f"{n:>8,} vectors, {len(texts)} {name}: {r['kind']:<28} recall@10"
                f" {r['recall_at_10']:.3f} (worst query {r['recall_at_10_min']:.1f})"
                f" search p50 {r['search_p50_ms']:.2f} ms build {r['build_s']} s{extra}"
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="the folder of documents (step 1)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/citeline-real-vectors"))
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--model", default="", help="an embedding model name (default MiniLM)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--save-every", type=int, default=2048)
    parser.add_argument("--until", help="stop embedding at this UTC time, HH:MM")
    parser.add_argument("--held-out", type=int, default=300)
    parser.add_argument("--questions", type=Path, nargs="*", default=[])
    parser.add_argument(
        "--shares",
        type=float,
        nargs="*",
        default=[kinds.IVF_PROBE_SHARE, 0.05, 0.1, 0.2],
        help="ivf-sq8 again probing these shares of its lists (no floor)",
    )
    parser.add_argument("--embed-only", action="store_true")
    parser.add_argument("--recall-only", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    chunks_path = args.cache / "chunks.jsonl"
    vectors_path = args.cache / "vectors.npy"
    if not chunks_path.exists():
        if args.corpus is None:
            parser.error("--corpus is needed to build the chunks")
        chunk_corpus(args.corpus, chunks_path, args.chunks)
    rows = read_chunks(chunks_path)
    embedder = make_model(args.model)
    if not args.recall_only:
        until = None
        if args.until:
            hour, minute = (int(x) for x in args.until.split(":"))
            now = dt.datetime.now(dt.UTC)
            until = now.replace(hour=hour, minute=minute, second=0).timestamp()
        embed(rows, vectors_path, embedder, args.batch, args.save_every, until)
    if args.embed_only:
        return 0
    vectors = np.load(vectors_path)
    log(f"{len(vectors):,} of {len(rows):,} chunks embedded (load {os.getloadavg()[0]:.2f})")
    questions = question_texts(args.questions)
    result = measure(rows, vectors, embedder, args.held_out, questions, args.shares)
    result.update(embedded=len(vectors), chunked=len(rows), k=K)
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
