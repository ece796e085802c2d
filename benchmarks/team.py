"""The team index at scale: fill a collection with N synthetic chunks and measure it.

    .venv/bin/python benchmarks/team.py [--sizes 100000,1000000] [--queries 50] [--json]
                                        [--store URL] [--keep] [--existing] [--keyword-only]
    .venv/bin/python benchmarks/team.py --store URL --recall COLLECTION --dataset KIND PATH

The second form measures an existing collection (one ``citeline eval … --store URL
--collection COLLECTION`` wrote): HNSW's recall@10 against exact search for the
dataset's questions, embedded by the real model.

For each size: a fresh collection is bulk-loaded (COPY, then the HNSW, postings and
b-tree indexes built once, then the keyword index's packed lists, as a first full index
of a big checkout would end), then searched
by a reader through the ordinary retriever: dense (pgvector HNSW, and exact on the
smaller sizes), keyword (BM25 over Citeline's terms) and hybrid (both, fused), with
p50/p95 latency.  Reported: load, index build and total build time, the database size
(per table and index), the writer's commit rate through the real write path
(``replace_file``, one transaction per file), and HNSW's recall@10 against exact search.

With ``--keyword-only`` only the keyword tables are loaded (from SciFact's abstracts,
``common.synthetic_texts``; the postings table unlogged) and only the reader's keyword
search is timed.  ``--keep`` keeps the collections and
``--existing`` measures kept ones again without loading.

The chunks are synthetic but anchored in real text and real vectors: each is a copy
of a chunk of an existing embedded index (SciFact's, made by ``citeline eval beir``;
else the samples, embedded here) with a fifth of its words dropped, and its vector that
chunk's real embedding moved by noise (cosine ≈ 0.9 to it).  The queries are real
questions (SciFact's claims) embedded by the real model.  Without ``--store`` a
throwaway server (pgserver) is started in a temporary folder and removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from citeline.app import make_embedder
from citeline.backends.postgres import packed
from citeline.backends.postgres.connection import schema_for
from citeline.backends.postgres.index import PostgresIndex
from citeline.backends.postgres.keywords import PostgresKeywordIndex, fold
from citeline.core.chunking import ChunkSettings
from citeline.core.documents import Chunk
from citeline.core.index import FileUpdate, IndexIdentity, NewChunk
from citeline.core.keywords import bm25_weight, query_terms, terms
from citeline.core.retrieval import Retriever
from citeline.settings import BUNDLED_MODEL_RETRIEVAL, EmbeddingSettings
from common import abstract_pieces, load_average, synthetic_texts

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("CITELINE_CACHE_DIR", "~/.cache/citeline")).expanduser()
SCIFACT_QUERIES = REPO.parent / "shared" / "eval" / "scifact" / "queries.jsonl"
CHUNKS_PER_FILE = 10
NOISE = 0.45  # |noise| relative to a unit vector: cosine to the source ≈ 0.91
EXACT_UP_TO = 200_000  # exact dense search (a full scan) is timed up to this size


def log(message: str) -> None:
    print(f"[team] {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


# -- sources -----------------------------------------------------------------------


def source_chunks(dimension: int) -> tuple[list[str], np.ndarray, str]:
    """Real (text, vector) pairs from an embedded index already on this machine."""
    for index in sorted((CACHE / "eval").glob("scifact-*/docs/.citeline/index.sqlite3")):
        db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
        rows = db.execute(
            "SELECT chunks.text, vectors.vector FROM chunks"
            " JOIN vectors ON vectors.key = chunks.vector_key"
        ).fetchall()
        db.close()
        if len(rows) > 1000:
            texts = [str(r[0]) for r in rows]
            vectors = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
            return texts, vectors, f"SciFact's embedded index ({len(rows)} chunks)"
    log("no SciFact index in the cache: embedding the samples' paragraphs instead")
    texts = [
        p.strip()
        for path in sorted((REPO / "samples").rglob("*.md"))
        for p in path.read_text("utf-8").split("\n\n")
        if len(p.split()) > 12
    ]
    embedder = make_embedder(EmbeddingSettings())
    return texts, np.asarray(embedder.embed_documents(texts)), f"the samples ({len(texts)})"


def questions(limit: int) -> list[str]:
    if SCIFACT_QUERIES.is_file():
        rows = [json.loads(line) for line in SCIFACT_QUERIES.read_text("utf-8").splitlines()]
        return [str(r["text"]) for r in rows[:limit]]
    return [f"How does Citeline handle {w}?" for w in ("indexing", "citations", "PDF", "models")]


# -- bulk loading --------------------------------------------------------------------


def vector_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in v.tolist()) + "]"


def bulk_load(
    conn: psycopg.Connection[Any],
    schema: str,
    size: int,
    texts: list[str],
    vectors: np.ndarray,
    seed: int = 1,
) -> dict[str, float]:
    """Fill the collection's tables with ``size`` synthetic chunks; timings in seconds."""
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    s = sql.Identifier(schema)
    dimension = vectors.shape[1]
    timings: dict[str, float] = {}
    for index in ("chunks_embedding", "chunks_file", "chunks_vector_key"):
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}.{}").format(s, sql.Identifier(index)))
    conn.execute(sql.SQL("ALTER TABLE {}.postings DROP CONSTRAINT postings_pkey").format(s))
    conn.execute(sql.SQL("DROP INDEX {}.postings_impact").format(s))
    reference = 0.0  # the impacts' average length: the first batch's, as a writer's first write
    started = time.perf_counter()
    files = (size + CHUNKS_PER_FILE - 1) // CHUNKS_PER_FILE
    now = time.time()
    with conn.cursor() as cur:
        with cur.copy(
            sql.SQL(
                "COPY {}.files (id, path, kind, title, content_hash, size, mtime_ns, indexed_at)"
                " FROM STDIN"
            ).format(s)
        ) as copy:
            for f in range(files):
                copy.write_row(
                    (
                        f + 1,
                        f"synthetic/{f:07}.md",
                        "markdown",
                        f"File {f}",
                        f"{f:064x}",
                        1000,
                        1,
                        now,
                    )
                )
        chunk_copy = sql.SQL(
            "COPY {}.chunks (id, file_id, ordinal, title, title_from_content, heading_path,"
            " text, start_line, end_line, page, vector_key, embedding) FROM STDIN"
        ).format(s)
        terms_copy = sql.SQL("COPY {}.chunk_terms (chunk_id, terms, length) FROM STDIN").format(s)
        postings_copy = sql.SQL(
            "COPY {}.postings (term, chunk_id, tf, length, impact) FROM STDIN"
        ).format(s)
        batch = 20_000
        for start in range(0, size, batch):
            rows: list[tuple[Any, ...]] = []
            term_rows: list[tuple[Any, ...]] = []
            posting_rows: list[tuple[Any, ...]] = []
            n = min(batch, size - start)
            sources = rng.integers(0, len(texts), n)
            noise = rng.normal(0.0, NOISE / np.sqrt(dimension), (n, dimension)).astype(np.float32)
            moved = vectors[sources] + noise
            moved /= np.linalg.norm(moved, axis=1, keepdims=True)
            for j in range(n):
                cid = start + j + 1
                words = texts[sources[j]].split()
                kept = " ".join(w for w in words if pick.random() > 0.2) or words[0]
                counts = Counter(fold(t) for t in terms(kept))
                rows.append(
                    (
                        cid,
                        (cid - 1) // CHUNKS_PER_FILE + 1,
                        (cid - 1) % CHUNKS_PER_FILE,
                        "Synthetic",
                        True,
                        '["Synthetic"]',
                        kept,
                        1,
                        2,
                        None,
                        f"s{cid:09}",
                        vector_text(moved[j]),
                    )
                )
                length = sum(counts.values())
                term_rows.append((cid, sorted(counts), length))
                posting_rows.extend((t, cid, c, length) for t, c in counts.items())
            if not reference:
                reference = max(1.0, sum(r[2] for r in term_rows) / len(term_rows))
                set_impact_average(cur, s, reference)
            with cur.copy(chunk_copy) as copy:
                for row in rows:
                    copy.write_row(row)
            with cur.copy(terms_copy) as copy:
                for row in term_rows:
                    copy.write_row(row)
            with cur.copy(postings_copy) as copy:
                for t, cid, c, length in posting_rows:
                    copy.write_row((t, cid, c, length, bm25_weight(c, length, reference)))
            log(f"  loaded {start + n:,} / {size:,}")
        cur.execute(
            sql.SQL("SELECT setval(pg_get_serial_sequence('{}.chunks', 'id'), %s)").format(
                sql.SQL(schema)
            ),
            (size,),
        )
        cur.execute(
            sql.SQL("SELECT setval(pg_get_serial_sequence('{}.files', 'id'), %s)").format(
                sql.SQL(schema)
            ),
            (files,),
        )
        total = cur.execute(sql.SQL("SELECT sum(length) FROM {}.chunk_terms").format(s))
        keyword_statistics(cur, s, size, int((total.fetchone() or (0,))[0]))
    timings["load_seconds"] = time.perf_counter() - started
    conn.execute("SET maintenance_work_mem = '6GB'")
    conn.execute("SET max_parallel_maintenance_workers = 1")
    for name, ddl in (
        (
            "btree_seconds",
            "CREATE INDEX chunks_file ON {0}.chunks(file_id);"
            " CREATE INDEX chunks_vector_key ON {0}.chunks(vector_key)",
        ),
        (
            "postings_seconds",
            "ALTER TABLE {0}.postings ADD PRIMARY KEY (term, chunk_id) INCLUDE (tf, length)",
        ),
        ("impact_seconds", IMPACT_INDEX),
        (
            "hnsw_seconds",
            "CREATE INDEX chunks_embedding ON {0}.chunks USING hnsw (embedding vector_cosine_ops)",
        ),
    ):
        started = time.perf_counter()
        for statement in ddl.split(";"):
            conn.execute(sql.SQL(statement.strip()).format(s))
        timings[name] = time.perf_counter() - started
        log(f"  {name.replace('_seconds', '')} index: {timings[name]:.0f}s")
    started = time.perf_counter()
    conn.execute(sql.SQL("VACUUM ANALYZE {}.chunks").format(s))
    conn.execute(sql.SQL("VACUUM ANALYZE {}.chunk_terms").format(s))
    conn.execute(sql.SQL("VACUUM ANALYZE {}.postings").format(s))
    timings["analyze_seconds"] = time.perf_counter() - started
    timings["pack_seconds"] = pack(conn, schema)
    timings["build_seconds"] = sum(timings.values())
    return timings


IMPACT_INDEX = (
    "CREATE INDEX postings_impact ON {0}.postings (term, impact DESC, chunk_id DESC)"
    " INCLUDE (tf, length)"
)


def set_impact_average(cur: psycopg.Cursor[Any], s: sql.Identifier, average: float) -> None:
    cur.execute(sql.SQL("UPDATE {}.keyword_stats SET impact_average = %s").format(s), (average,))


def keyword_statistics(cur: psycopg.Cursor[Any], s: sql.Identifier, rows: int, terms: int) -> None:
    """What the writer keeps beside the postings: each term's document frequency, the
    number of rows and terms; and a new generation."""
    cur.execute(
        sql.SQL(
            "INSERT INTO {0}.term_df SELECT term, count(*) FROM {0}.postings GROUP BY term"
        ).format(s)
    )
    cur.execute(
        sql.SQL("UPDATE {}.keyword_stats SET rows = %s, terms = %s").format(s), (rows, terms)
    )
    cur.execute(sql.SQL("UPDATE {}.state SET generation = generation + 1").format(s))


def bulk_load_keywords(conn: psycopg.Connection[Any], schema: str, size: int) -> dict[str, float]:
    """Only the keyword tables, for ``size`` synthetic chunks of SciFact's text
    (``common.synthetic_texts``); timings in seconds."""
    s = sql.Identifier(schema)
    conn.execute(sql.SQL("ALTER TABLE {}.postings DROP CONSTRAINT postings_pkey").format(s))
    conn.execute(sql.SQL("DROP INDEX {}.postings_impact").format(s))
    conn.execute(sql.SQL("ALTER TABLE {}.postings SET UNLOGGED").format(s))  # no WAL to write
    timings: dict[str, float] = {}
    started = time.perf_counter()
    postings_copy = sql.SQL(
        "COPY {}.postings (term, chunk_id, tf, length, impact) FROM STDIN"
    ).format(s)
    texts = synthetic_texts(abstract_pieces(), size)
    batch = 50_000
    total = 0
    reference = 0.0  # the impacts' average length: the first batch's, as a writer's first write
    with conn.cursor() as cur:
        for start in range(0, size, batch):
            rows = []
            for cid in range(start + 1, min(size, start + batch) + 1):
                counts = Counter(fold(t) for t in terms(next(texts)))
                rows.append((cid, counts, sum(counts.values())))
            if not reference:
                reference = max(1.0, sum(r[2] for r in rows) / len(rows))
                set_impact_average(cur, s, reference)
            with cur.copy(postings_copy) as copy:
                for cid, counts, length in rows:
                    total += length
                    for t, c in counts.items():
                        copy.write_row((t, cid, c, length, bm25_weight(c, length, reference)))
            log(f"  loaded {min(size, start + batch):,} / {size:,}")
        keyword_statistics(cur, s, size, total)
    timings["load_seconds"] = time.perf_counter() - started
    conn.execute("SET maintenance_work_mem = '6GB'")
    conn.execute("SET max_parallel_maintenance_workers = 1")
    started = time.perf_counter()
    conn.execute(
        sql.SQL(
            "ALTER TABLE {0}.postings ADD PRIMARY KEY (term, chunk_id) INCLUDE (tf, length)"
        ).format(s)
    )
    timings["postings_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    conn.execute(sql.SQL(IMPACT_INDEX).format(s))
    timings["impact_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    for table in ("postings", "term_df"):
        conn.execute(sql.SQL("VACUUM ANALYZE {}.{}").format(s, sql.Identifier(table)))
    timings["analyze_seconds"] = time.perf_counter() - started
    timings["pack_seconds"] = pack(conn, schema)
    timings["build_seconds"] = sum(timings.values())
    return timings


def pack(conn: psycopg.Connection[Any], schema: str) -> float:
    """The keyword index's packed lists, as a writer makes them at the end of its
    first index run (``PostgresKeywordIndex.pack``); seconds."""
    started = time.perf_counter()
    conn.execute("SET work_mem = '1GB'")
    with conn.transaction():
        PostgresKeywordIndex(conn, schema).pack()
    conn.execute(sql.SQL("VACUUM ANALYZE {}.keyword_packed").format(sql.Identifier(schema)))
    return time.perf_counter() - started


def measure_keywords(
    url: str, collection: str, identity: IndexIdentity, queries: list[str]
) -> dict[str, Any]:
    """The reader's keyword search alone: the search the daemon runs (``keyword_db``:
    the packed lists summed in numpy once the writer packed them, the lists of the
    terms searched kept between searches; else the threshold algorithm), the same with
    nothing kept (``keyword_db_cold``: one statement reads every list), the same in
    three statements and a transaction as before the one statement
    (``keyword_db_three_statements``, nothing kept), and the SQL sum of every posting
    (``keyword_exhaustive_db``), query by query in turn; how often the reader and the
    SQL sum agree: the same top 10 ids in the same order, and the same whole ranking
    (scores to 9 digits); and what the reader keeps at the end."""
    reader, cold, three = (
        PostgresIndex(url, collection, identity, read_only=True) for _ in range(3)
    )
    pool = BUNDLED_MODEL_RETRIEVAL.candidates
    keywords = reader._kw  # the one index class measured here

    def search_cold(q: str) -> list[tuple[int, float]]:
        cold._kw._lists.clear()
        return cold.keyword_search(query_terms(q), pool)

    def search_three(q: str) -> list[tuple[int, float]]:
        three._kw._versioned = False  # (the statements of a collection without the version)
        return three.keyword_search(query_terms(q), pool)

    for q in queries[:3]:  # warm the server's caches
        reader.keyword_search(query_terms(q), pool)
        search_cold(q)
        search_three(q)
        keywords.search_exhaustive(query_terms(q), pool)
    names = ("keyword_db", "keyword_db_cold", "keyword_db_three_statements")
    times: dict[str, list[float]] = {name: [] for name in (*names, "keyword_exhaustive_db")}
    top10 = whole = 0
    for q in queries:
        found: list[list[tuple[int, float]]] = []
        for name, search in zip(
            names,
            (lambda q: reader.keyword_search(query_terms(q), pool), search_cold, search_three),
            strict=True,
        ):
            started = time.perf_counter()
            found.append(search(q))
            times[name].append(time.perf_counter() - started)
        started = time.perf_counter()
        every = keywords.search_exhaustive(query_terms(q), pool)
        times["keyword_exhaustive_db"].append(time.perf_counter() - started)
        if found[1] != found[0] or found[2] != found[0]:
            log(f"the three packed searches differ for {q!r}")
        top10 += [i for i, _ in found[0][:10]] == [i for i, _ in every[:10]]
        whole += found[0] == every or [(i, round(s, 9)) for i, s in found[0]] == [
            (i, round(s, 9)) for i, s in every
        ]
    kept = {"terms": len(keywords._lists), "postings": keywords._lists.postings}
    times.update(split_keyword_time(reader, queries[:60], pool, "keyword_db_again"))
    times.update(split_keyword_time(cold, queries[:60], pool, "keyword_db_cold", cold=True))
    for index in (reader, cold, three):
        index.close()
    out: dict[str, Any] = {name: percentiles(t) for name, t in times.items()}
    out["same_top10"] = f"{top10}/{len(queries)}"
    out["same_ranking"] = f"{whole}/{len(queries)}"
    out["kept_after"] = kept
    return out


def split_keyword_time(
    reader: PostgresIndex, queries: list[str], pool: int, name: str, cold: bool = False
) -> dict[str, list[float]]:
    """Where the reader's keyword search spends its time, query by query: in the
    database's statements (``cursor.execute``, results received) and the rest (numpy,
    Python, the transaction's begin and commit); with ``cold``, nothing kept from one
    search to the next."""
    spent = [0.0]
    execute = psycopg.Cursor.execute

    def timed(self: psycopg.Cursor[Any], *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(self, *args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    out: dict[str, list[float]] = {f"{name}_statements": [], f"{name}_rest": []}
    psycopg.Cursor.execute = timed  # type: ignore[method-assign]
    try:
        for q in queries:
            if cold:
                reader._kw._lists.clear()
            spent[0] = 0.0
            started = time.perf_counter()
            reader.keyword_search(query_terms(q), pool)
            total = time.perf_counter() - started
            out[f"{name}_statements"].append(spent[0])
            out[f"{name}_rest"].append(total - spent[0])
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    return out


def sizes_of(conn: psycopg.Connection[Any], schema: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'i') ORDER BY 2 DESC",
        (schema,),
    ).fetchall()
    out = {str(name): int(size) for name, size in rows}
    tables = conn.execute(
        "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
        (schema,),
    ).fetchone()
    out["total"] = int(tables[0] or 0) if tables else 0
    return out


# -- measuring ---------------------------------------------------------------------


def percentiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"p50_ms": round(1000 * statistics.median(ordered), 2), "p95_ms": round(1000 * p95, 2)}


def write_rate(url: str, identity: IndexIdentity, texts: list[str], vectors: np.ndarray) -> float:
    """Chunks per second through the writer's real path: one transaction per file."""
    index = PostgresIndex(url, f"writes_{os.getpid()}", identity, read_only=False)
    count = 0
    started = time.perf_counter()
    with index.writing():
        for f in range(200):
            chunks, rows = [], []
            for i in range(CHUNKS_PER_FILE):
                k = (f * CHUNKS_PER_FILE + i) % len(texts)
                chunk = Chunk(f"w/{f}.md", "T", ("T",), texts[k], i + 1, i + 1, None, i)
                chunks.append(NewChunk(chunk, f"w{f}-{i}", " ".join(terms(texts[k]))))
                rows.append(vectors[k])
            matrix = np.stack(rows)
            index.replace_file(
                FileUpdate(
                    path=f"w/{f}.md",
                    kind="markdown",
                    title="T",
                    content_hash="h",
                    size=1,
                    mtime_ns=1,
                    chunks=chunks,
                    chunk_vectors=matrix,
                    new_vectors={c.vector_key: v for c, v in zip(chunks, matrix, strict=True)},
                )
            )
            count += len(chunks)
    seconds = time.perf_counter() - started
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP SCHEMA {} CASCADE").format(
                sql.Identifier(f"citeline_writes_{os.getpid()}")
            )
        )
    index.close()
    return count / seconds


def measure(
    url: str, collection: str, identity: IndexIdentity, embedder: Any, queries: list[str], size: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    vectors = [embedder.embed_query(q) for q in queries]
    reader = PostgresIndex(url, collection, identity, read_only=True)
    exact = PostgresIndex(url, collection, identity, read_only=True, exact=True)
    retriever = Retriever(reader, embedder, BUNDLED_MODEL_RETRIEVAL)
    pool = BUNDLED_MODEL_RETRIEVAL.candidates
    for q in queries[:3]:  # warm the caches
        retriever.search(q, 10)
    timing: dict[str, list[float]] = {
        "dense_db": [],
        "keyword_db": [],
        "exact_db": [],
        "dense": [],
        "keyword": [],
        "hybrid": [],
        "embed": [],
    }
    recall = []
    for q, v in zip(queries, vectors, strict=True):
        started = time.perf_counter()
        embedder.embed_query(q)
        timing["embed"].append(time.perf_counter() - started)
        started = time.perf_counter()
        hnsw = reader.dense_search(v, pool)
        timing["dense_db"].append(time.perf_counter() - started)
        started = time.perf_counter()
        reader.keyword_search(list(dict.fromkeys(terms(q))), pool)
        timing["keyword_db"].append(time.perf_counter() - started)
        if size <= EXACT_UP_TO:
            started = time.perf_counter()
            truth = exact.dense_search(v, 10)
            timing["exact_db"].append(time.perf_counter() - started)
            recall.append(len({i for i, _ in truth} & {i for i, _ in hnsw[:10]}) / 10)
        for mode in ("dense", "keyword", "hybrid"):
            started = time.perf_counter()
            retriever.search(q, 10, mode=mode)
            timing[mode].append(time.perf_counter() - started)
    for name, times in timing.items():
        if times:
            out[name] = percentiles(times)
    if recall:
        out["hnsw_recall@10"] = round(statistics.fmean(recall), 4)
    reader.close()
    exact.close()
    return out


def recall_of(url: str, collection: str, kind: str, path: Path, k: int = 10) -> dict[str, Any]:
    """HNSW's recall@k against exact search on a collection, for a dataset's questions."""
    from citeline.evaluation.datasets import load

    embedder = make_embedder(EmbeddingSettings())
    identity = IndexIdentity(
        embedder.fingerprint, embedder.name, embedder.dimension, ChunkSettings()
    )
    queries = [q.text for q in load(kind, path).queries]
    hnsw = PostgresIndex(url, collection, identity, read_only=True)
    exact = PostgresIndex(url, collection, identity, read_only=True, exact=True)
    recall = []
    for q in queries:
        v = embedder.embed_query(q)
        truth = {i for i, _ in exact.dense_search(v, k)}
        found = {i for i, _ in hnsw.dense_search(v, k)}
        recall.append(len(truth & found) / max(1, len(truth)))
    hnsw.close()
    exact.close()
    return {
        "collection": collection,
        "queries": len(queries),
        f"hnsw_recall@{k}": round(statistics.fmean(recall), 4),
        "queries_below_1": sum(r < 1 for r in recall),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--recall", metavar="COLLECTION", help="measure this collection")
    parser.add_argument("--dataset", nargs=2, metavar=("KIND", "PATH"), help="beir|squad PATH")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--store", help="a server to use (default: a throwaway pgserver)")
    parser.add_argument("--keep", action="store_true", help="keep the collections")
    parser.add_argument(
        "--keyword-only",
        action="store_true",
        help="only the keyword tables (no vectors, no HNSW): the keyword search alone, at"
        " sizes a full build takes too long for",
    )
    parser.add_argument(
        "--existing", action="store_true", help="measure the collections --keep kept (no load)"
    )
    parser.add_argument(
        "--kept-postings",
        type=int,
        help="the postings a reader keeps between searches (default: packed.CACHE_POSTINGS)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.kept_postings is not None:
        packed.CACHE_POSTINGS = args.kept_postings
    if args.recall:
        if not (args.store and args.dataset):
            parser.error("--recall needs --store and --dataset")
        print(
            json.dumps(recall_of(args.store, args.recall, args.dataset[0], Path(args.dataset[1])))
        )
        return 0
    server = None
    folder = Path()
    url = args.store
    if not url:
        import pgserver

        folder = Path(tempfile.mkdtemp(prefix="citeline-team-bench-"))
        folder.chmod(0o755)
        server = pgserver.get_server(  # type: ignore[attr-defined]
            folder / "pgdata", cleanup_mode="delete"
        )
        url = server.get_uri()
    try:
        run(args, url)
    finally:
        if server is not None:
            server.cleanup()
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def run(args: argparse.Namespace, url: str) -> None:
    """Every size of ``--sizes`` on the server at ``url``; the report on stdout."""
    embedder = make_embedder(EmbeddingSettings())
    identity = IndexIdentity(
        embedder.fingerprint, embedder.name, embedder.dimension, ChunkSettings()
    )
    queries = questions(args.queries)
    report: dict[str, Any] = {
        "machine": {"cores": os.cpu_count(), "load_before": load_average()},
        "queries": len(queries),
        "kept_postings_limit": packed.CACHE_POSTINGS,
        "sizes": {},
    }
    if args.keyword_only:
        report["source"] = "SciFact's abstracts (common.synthetic_texts), keyword tables only"
    else:
        texts, vectors, report["source"] = source_chunks(embedder.dimension)
        report["writer_chunks_per_second"] = round(write_rate(url, identity, texts, vectors), 1)
        log(f"writer (replace_file, no embedding): {report['writer_chunks_per_second']} chunks/s")
    log(f"source: {report['source']}; {len(queries)} queries")
    for size in (int(s) for s in args.sizes.split(",") if s):
        prefix = "bench_keywords" if args.keyword_only else "bench"
        collection = f"{prefix}_{size}"
        schema = schema_for(collection)
        entry: dict[str, Any] = {}
        if not args.existing:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )
            PostgresIndex(url, collection, identity, read_only=False).close()  # the schema
            log(f"{size:,} chunks: loading")
            with psycopg.connect(url, autocommit=True) as conn:
                if args.keyword_only:
                    timings = bulk_load_keywords(conn, schema, size)
                else:
                    timings = bulk_load(conn, schema, size, texts, vectors)
            entry["build"] = {k: round(v, 1) for k, v in timings.items()}
            log(f"{size:,} chunks: built in {timings['build_seconds']:.0f}s; searching")
        with psycopg.connect(url, autocommit=True) as conn:
            entry["bytes"] = sizes_of(conn, schema)
        entry["load_before"] = load_average()
        if args.keyword_only:
            entry["search"] = measure_keywords(url, collection, identity, queries)
        else:
            entry["search"] = measure(url, collection, identity, embedder, queries, size)
        entry["load_during"] = load_average()
        report["sizes"][str(size)] = entry
        if not args.keep:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        if not args.json:
            print_size(size, entry)
    if args.json:
        print(json.dumps(report, indent=1))


def print_size(size: int, entry: dict[str, Any]) -> None:
    b, s = entry.get("build", {}), entry["search"]
    print(
        f"\n{size:,} chunks (load avg {entry['load_before'][0]:.1f} before,"
        f" {entry['load_during'][0]:.1f} after, on {os.cpu_count()} cores)"
    )
    if b:
        print(
            "  build: " + ", ".join(f"{k.removesuffix('_seconds')} {v:.0f}s" for k, v in b.items())
        )
    big = sorted(((v, k) for k, v in entry["bytes"].items() if k != "total"), reverse=True)[:5]
    print(
        f"  size: {entry['bytes']['total'] / 2**30:.2f} GiB ("
        + ", ".join(f"{k} {v / 2**20:.0f} MiB" for v, k in big)
        + ")"
    )
    names = (
        "dense_db",
        "exact_db",
        "keyword_db",
        "keyword_db_cold",
        "keyword_db_three_statements",
        "keyword_db_again_statements",
        "keyword_db_again_rest",
        "keyword_db_cold_statements",
        "keyword_db_cold_rest",
        "keyword_exhaustive_db",
        "embed",
        "dense",
    )
    for name in (*names, "keyword", "hybrid"):
        if name in s:
            print(f"  {name:27} p50 {s[name]['p50_ms']:8.1f} ms   p95 {s[name]['p95_ms']:8.1f} ms")
    if "same_ranking" in s:
        print(
            f"  same ranking as the exhaustive SQL: {s['same_ranking']} (top 10: {s['same_top10']})"
        )
    if "kept_after" in s:
        kept = s["kept_after"]
        print(
            f"  kept by the reader at the end: {kept['terms']} terms, {kept['postings']:,} postings"
        )
    if "hnsw_recall@10" in s:
        print(f"  HNSW recall@10 against exact: {s['hnsw_recall@10']}")


if __name__ == "__main__":
    raise SystemExit(main())
