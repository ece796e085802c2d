"""Ingest speed and memory with the default embedding model.

Prints: raw model embedding throughput (chunks/s, tokens/s); end-to-end cold
indexing throughput on a realistic corpus and its ratio to the raw figure; time
to re-index after a one-paragraph edit; time for a no-change re-index; peak
memory.  The corpus is scientific abstracts (BEIR SciFact from ../shared/eval
when present, else the slice in tests/fixtures) grouped into Markdown files,
plus Citeline's own sample documents.

    .venv/bin/python benchmarks/ingest.py [--abstracts 800] [--work /tmp/citeline-bench-ingest]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.core.chunking import chunk_document, embedding_text
from citeline.core.loaders import load_document
from citeline.settings import load_settings
from common import peak_rss_mb, scientific_abstracts, write_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--abstracts", type=int, default=800)
    parser.add_argument("--work", default="/tmp/citeline-bench-ingest")
    args = parser.parse_args()

    docs = write_corpus(Path(args.work) / "docs", scientific_abstracts(args.abstracts))
    settings, _ = load_settings(docs)
    models = ModelPool()
    started = time.perf_counter()
    embedder = models.embedder(settings.embedding)
    print(f"model load: {time.perf_counter() - started:.2f} s ({embedder.name})")

    # Raw: the embedding texts of the first files, straight into the model.
    texts: list[str] = []
    for path in sorted(docs.glob("papers-*.md"))[:40]:
        document = load_document(path, path.name)
        texts += [
            embedding_text(c, settings.chunking)
            for c in chunk_document(document, settings.chunking)
        ]
    texts = texts[:256]
    tokens = sum(min(embedder.count_tokens(t), 256) for t in texts)
    embedder.embed_documents(texts[:8])  # warm up
    started = time.perf_counter()
    embedder.embed_documents(texts)
    raw_seconds = time.perf_counter() - started
    raw_rate = len(texts) / raw_seconds
    print(
        f"raw embedding: {len(texts)} chunks, {tokens} tokens in {raw_seconds:.2f} s ="
        f" {raw_rate:.1f} chunks/s, {tokens / raw_seconds:.0f} tokens/s"
    )

    workspace = open_workspace(docs, settings, models)
    cold = workspace.update()
    rate = cold.embedded / cold.seconds
    print(
        f"cold index: {cold.files} files, {cold.chunks} chunks in {cold.seconds:.2f} s ="
        f" {rate:.1f} chunks/s ({rate / raw_rate:.0%} of raw)"
    )

    noop = workspace.update()
    print(f"no-change re-index: {noop.seconds * 1000:.0f} ms (embedded {noop.embedded})")

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
    print(
        f"one-paragraph edit: {(time.perf_counter() - started) * 1000:.0f} ms"
        f" (embedded {edit.embedded}, reused {edit.reused})"
    )
    target.write_text(text)
    workspace.update()
    workspace.close()
    print(f"peak memory: {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
