"""Speed levers of the llama.cpp models, one configuration per fresh process.

Each configuration runs in its own Python process, so environment variables that
llama.cpp's OpenMP runtime reads once at load (``OMP_WAIT_POLICY``,
``GOMP_SPINCOUNT``) take effect, and ``--python`` can point at another virtualenv
(another build of llama-cpp-python).  ``--busy N`` starts N external busy processes
(``python -c 'while True: pass'``) for the duration of each measurement, the way an
editor, a browser and a compiler share the cores.

    # embedding: threads x decode packing x external load
    .venv/bin/python benchmarks/levers.py embed --threads 1,2 --budget 64,256 --busy 0,1
    # the Q8_0 copy of the default model (converted once into the model cache)
    .venv/bin/python benchmarks/levers.py embed --model q8_0
    # search's part: one short query per call, p50/p90 latency
    .venv/bin/python benchmarks/levers.py query --threads 1,2 --env '' --env OMP_WAIT_POLICY=PASSIVE
    # generation (SmolLM2): time to first token and tokens/s
    .venv/bin/python benchmarks/levers.py generate --threads 1,2 --threads-batch 2 --busy 0,1
    # OpenMP waiting policy, set before llama_cpp is imported
    .venv/bin/python benchmarks/levers.py embed --env OMP_WAIT_POLICY=PASSIVE --env ''
    # what this build is: instruction sets, OpenMP
    .venv/bin/python benchmarks/levers.py info
    # can /proc/stat tell other processes' load within a few hundred ms?
    .venv/bin/python benchmarks/levers.py probe-load --busy 0,1,2

Every configuration prints one line; ``--jsonl FILE`` appends one JSON object per
configuration (with the load average before and after it).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import other_busy_cores

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# Realistic ask: the evidence a question brings is a few hundred tokens of documentation.
_SAMPLE_PROMPT_CHARS = 1800


# --------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------


def q8_0_model_path() -> Path:
    """A Q8_0 copy of the default all-MiniLM-L6-v2 GGUF, converted once into the cache.

    It is the F16 conversion of ``citeline.models.minilm`` with every 2-D weight matrix
    (the ones it stores as F16) quantized to Q8_0 by the ``gguf`` package in numpy.
    """
    import gguf
    import numpy as np

    from citeline.models import minilm
    from citeline.models.bert_gguf import convert_bert_to_gguf

    f16 = minilm.default_embedding_model_path()
    target = f16.with_name(f16.name.replace(".f16.gguf", ".q8_0.gguf"))
    if target.is_file():
        return target
    add_tensor = gguf.GGUFWriter.add_tensor
    add_file_type = gguf.GGUFWriter.add_file_type

    def quantizing_add_tensor(self: Any, name: str, tensor: Any, *args: Any, **kw: Any) -> None:
        if tensor.dtype == np.float16 and tensor.ndim == 2 and tensor.shape[1] % 32 == 0:
            data = gguf.quants.quantize(tensor.astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
            add_tensor(self, name, data, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            add_tensor(self, name, tensor, *args, **kw)

    def q8_file_type(self: Any, _ftype: int) -> None:
        add_file_type(self, int(gguf.LlamaFileType.MOSTLY_Q8_0))

    gguf.GGUFWriter.add_tensor = quantizing_add_tensor  # type: ignore[method-assign]
    gguf.GGUFWriter.add_file_type = q8_file_type  # type: ignore[method-assign]
    try:
        convert_bert_to_gguf(minilm.minilm_source_dir(), target, model_name=minilm.MODEL_NAME)
    finally:
        gguf.GGUFWriter.add_tensor = add_tensor  # type: ignore[method-assign]
        gguf.GGUFWriter.add_file_type = add_file_type  # type: ignore[method-assign]
    return target


def f32_model_path() -> Path:
    """An F32 copy of the default all-MiniLM-L6-v2 GGUF (the converter with f16=False)."""
    from citeline.models import minilm
    from citeline.models.bert_gguf import convert_bert_to_gguf

    f16 = minilm.default_embedding_model_path()
    target = f16.with_name(f16.name.replace(".f16.gguf", ".f32.gguf"))
    if not target.is_file():
        source = minilm.minilm_source_dir()
        convert_bert_to_gguf(source, target, f16=False, model_name=minilm.MODEL_NAME)
    return target


def embedding_model_path(name: str) -> Path:
    if name == "f16":
        from citeline.models.minilm import default_embedding_model_path

        return default_embedding_model_path()
    if name == "q8_0":
        return q8_0_model_path()
    if name == "f32":
        return f32_model_path()
    return Path(name).expanduser()


def sample_texts(limit: int = 256) -> list[str]:
    """The embedding texts of the ingest benchmark's corpus (first files, in order)."""
    from citeline.core.chunking import chunk_document, embedding_text
    from citeline.core.loaders import load_document
    from citeline.settings import load_settings
    from common import scientific_abstracts, write_corpus

    docs = write_corpus(Path("/tmp/citeline-bench-levers") / "docs", scientific_abstracts(400))
    settings, _ = load_settings(docs)
    texts: list[str] = []
    for path in sorted(docs.glob("papers-*.md"))[:40]:
        document = load_document(path, path.name)
        texts += [
            embedding_text(c, settings.chunking)
            for c in chunk_document(document, settings.chunking)
        ]
    return texts[:limit]


def build_info() -> dict[str, Any]:
    import llama_cpp

    lib = Path(llama_cpp.__file__).parent / "lib"
    cpu_libs = sorted(p.name for p in lib.glob("libggml-cpu*.so"))
    openmp = False
    for name in cpu_libs:
        out = subprocess.run(["ldd", str(lib / name)], capture_output=True, text=True).stdout
        openmp = openmp or "libgomp" in out
    return {
        "llama_cpp": llama_cpp.__version__,
        "system_info": llama_cpp.llama_print_system_info().decode().strip(),
        "cpu_libs": cpu_libs,
        "openmp": openmp,
        "venv": sys.prefix,
    }


# --------------------------------------------------------------------------------------
# Workers: one measurement in this process
# --------------------------------------------------------------------------------------


def pad_decodes(multiple: int) -> None:
    """Patch the encoder so each decode's token count is a multiple of ``multiple``.

    A filler sequence (its own sequence id, output discarded) tops the packed batch
    up.  llama.cpp's attention over a packed batch has the batch's token count as a
    matmul dimension; its tinyBLAS path needs that dimension to be a multiple of the
    vector width (8 floats with AVX2, 16 with AVX-512) and otherwise falls back to
    ``ggml_vec_dot_f32`` row by row.
    """
    import numpy as np

    from citeline.backends.llama import encoder as llama_encoder

    decode = llama_encoder.LlamaEncoder._decode

    def padded(self: Any, group: list[int], token_lists: list[list[int]], out: Any) -> None:
        n = sum(len(token_lists[i]) for i in group)
        pad = -n % multiple
        if pad == 0 or n + pad > self._n_ctx or len(group) >= self._batch.n_seq_max:
            decode(self, group, token_lists, out)
            return
        filler = [self._tokenizer.fallback_token] * pad
        rows = np.empty((len(group) + 1, out.shape[1]), dtype=out.dtype)
        local = [token_lists[i] for i in group] + [filler]
        decode(self, list(range(len(local))), local, rows)
        out[group] = rows[: len(group)]

    llama_encoder.LlamaEncoder._decode = padded  # type: ignore[method-assign]


def work_embed(config: dict[str, Any]) -> dict[str, Any]:
    from citeline.backends.llama.embedder import LlamaEmbedder

    if config.get("pad"):
        pad_decodes(int(config["pad"]))

    path = embedding_model_path(config["model"])
    texts = sample_texts(config.get("chunks", 256))
    started = time.perf_counter()
    embedder = LlamaEmbedder(
        path,
        max_tokens=256,
        n_threads=config["threads"],
        decode_token_budget=config.get("budget"),
        max_sequences_per_decode=config.get("max_seqs"),
    )
    load_s = time.perf_counter() - started
    tokens = sum(min(len(embedder.tokenize(t)), 256) for t in texts)
    embedder.embed_documents(texts[:16])  # warm up
    times, cpu_times = [], []
    for _ in range(config.get("rounds", 3)):
        started, cpu_started = time.perf_counter(), time.process_time()
        embedder.embed_documents(texts)
        times.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - cpu_started)
    seconds = statistics.median(times)
    cpu_seconds = statistics.median(cpu_times)
    return {
        "chunks": len(texts),
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "chunks_s": round(len(texts) / seconds, 1),
        "tokens_s": round(tokens / seconds),
        "best_chunks_s": round(len(texts) / min(times), 1),
        "spread": round((max(times) - min(times)) / seconds, 3),
        # CPU time of all this process's threads: with one thread, a load-robust cost
        "cpu_s": round(cpu_seconds, 3),
        "tokens_per_cpu_s": round(tokens / cpu_seconds),
        "load_s": round(load_s, 2),
        "model_file": path.name,
    }


def work_query(config: dict[str, Any]) -> dict[str, Any]:
    """Search's share of the model: one short query embedded per call (latency)."""
    from citeline.backends.llama.embedder import LlamaEmbedder

    queries = [t.split(".")[0][:80] for t in sample_texts(64)]
    embedder = LlamaEmbedder(
        embedding_model_path(config["model"]), max_tokens=256, n_threads=config["threads"]
    )
    embedder.embed_query(queries[0])
    times = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query)
        times.append(time.perf_counter() - started)
    times.sort()
    return {
        "queries": len(times),
        "query_p50_ms": round(1000 * times[len(times) // 2], 1),
        "query_p90_ms": round(1000 * times[int(len(times) * 0.9)], 1),
    }


def _prompt_messages(round_no: int) -> list[dict[str, str]]:
    evidence = ""
    for path in sorted((REPO / "samples").rglob("*.md")):
        evidence += path.read_text(encoding="utf-8")
        if len(evidence) >= _SAMPLE_PROMPT_CHARS:
            break
    return [
        # the round number first, so llama-cpp-python cannot reuse the last prompt's cache
        {"role": "system", "content": f"[{round_no}] Answer from the evidence, briefly."},
        {"role": "user", "content": evidence[:_SAMPLE_PROMPT_CHARS] + "\n\nWhere is the index?"},
    ]


def work_generate(config: dict[str, Any]) -> dict[str, Any]:
    import llama_cpp

    from citeline.backends.llama.generator import LlamaGenerator
    from citeline.models.smollm import default_generator_model_path

    path = Path(config["model"]) if config["model"] not in ("f16", "default") else None
    path = path or default_generator_model_path()
    threads, threads_batch = config["threads"], config.get("threads_batch") or config["threads"]
    generator = LlamaGenerator(path, n_threads=max(threads, threads_batch))
    llama_cpp.llama_set_n_threads(generator._llm._ctx.ctx, threads, threads_batch)
    generator._thread_limit.maximum = generator._thread_limit.current = threads
    ttfts, rates, prompt_tokens = [], [], 0
    for round_no in range(config.get("rounds", 3) + 1):
        messages = _prompt_messages(round_no)
        stamps: list[float] = []
        started = time.perf_counter()
        for _ in generator.stream_chat(
            messages, max_tokens=64, temperature=0.0, should_stop=lambda: False
        ):
            stamps.append(time.perf_counter())
        if round_no == 0:
            prompt_tokens = generator.count_tokens(messages[0]["content"] + messages[1]["content"])
            continue  # warm up
        ttfts.append(stamps[0] - started)
        if len(stamps) > 1:
            rates.append((len(stamps) - 1) / (stamps[-1] - stamps[0]))
    return {
        "prompt_tokens": prompt_tokens,
        "ttft_s": round(statistics.median(ttfts), 3),
        "gen_tok_s": round(statistics.median(rates), 1) if rates else None,
        "model_file": path.name,
    }


def runnable_others() -> int:
    """Runnable tasks on the machine now, this process excluded (/proc/stat procs_running)."""
    with open("/proc/stat") as handle:
        for line in handle:
            if line.startswith("procs_running"):
                return max(int(line.split()[1]) - 1, 0)
    return 0


def work_probe_load(config: dict[str, Any]) -> dict[str, Any]:
    readings = [round(other_busy_cores(config["window"]), 2) for _ in range(5)]
    running = [runnable_others() for _ in range(5)]
    return {"window_s": config["window"], "other_busy_cores": readings, "runnable_others": running}


WORKERS = {
    "embed": work_embed,
    "query": work_query,
    "generate": work_generate,
    "probe-load": work_probe_load,
}


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def busy_processes(n: int) -> Iterator[None]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        if procs:
            time.sleep(0.5)
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _csv_ints(text: str) -> list[int | None]:
    return [None if x in ("", "default", "none") else int(x) for x in text.split(",")]


def _env_sets(values: list[str] | None) -> list[dict[str, str]]:
    """Each --env is one set: 'A=1 B=2', or '' for none."""
    sets = []
    for value in values or [""]:
        pairs = [p.split("=", 1) for p in value.split() if "=" in p]
        sets.append({k: v for k, v in pairs})
    return sets


def run_one(python: str, kind: str, config: dict[str, Any], env_set: dict[str, str]) -> Any:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(env_set)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "server"), str(HERE)])
    out = subprocess.run(
        [python, str(Path(__file__)), "_worker", kind, json.dumps(config)],
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        return {
            "error": (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1],
            "returncode": out.returncode,
        }
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        result = WORKERS[sys.argv[2]](json.loads(sys.argv[3]))
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["embed", "query", "generate", "info", "probe-load"])
    parser.add_argument("--python", default=sys.executable, help="interpreter (a venv's build)")
    parser.add_argument("--model", default="f16", help="f16, f32, q8_0 or a GGUF path")
    parser.add_argument("--threads", default="2")
    parser.add_argument("--threads-batch", default="default")
    parser.add_argument("--budget", default="default", help="decode token budgets")
    parser.add_argument("--max-seqs", default="default")
    parser.add_argument(
        "--pad", default="default", help="pad each decode to a multiple of these tokens"
    )
    parser.add_argument("--busy", default="0", help="external busy processes")
    parser.add_argument("--env", action="append", help="'VAR=VALUE ...' set per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=256, help="embedding texts per round")
    parser.add_argument("--window", type=float, default=0.25)
    parser.add_argument("--label", default="")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0,
        help="before each configuration, wait up to this many seconds for other processes"
        " to use under 0.15 cores (the reading is recorded as others_before)",
    )
    parser.add_argument("--jsonl", help="append one JSON object per configuration")
    args = parser.parse_args()

    if args.kind == "info":
        env = dict(os.environ, PYTHONPATH=str(HERE))
        code = "import json, levers; print(json.dumps(levers.build_info()))"
        print(
            subprocess.run(
                [args.python, "-c", code], env=env, text=True, capture_output=True
            ).stdout.strip()
        )
        return

    grid = itertools.product(
        _csv_ints(args.busy),
        _env_sets(args.env),
        _csv_ints(args.threads),
        _csv_ints(args.threads_batch),
        _csv_ints(args.budget),
        _csv_ints(args.max_seqs),
        _csv_ints(args.pad),
    )
    for busy, env_set, threads, threads_batch, budget, max_seqs, pad in grid:
        config = {
            "model": args.model,
            "threads": threads,
            "threads_batch": threads_batch,
            "budget": budget,
            "max_seqs": max_seqs,
            "pad": pad,
            "rounds": args.rounds,
            "chunks": args.chunks,
            "window": args.window,
        }
        others = other_busy_cores(1.0)
        deadline = time.monotonic() + args.wait_quiet
        while others > 0.15 and time.monotonic() < deadline:
            others = other_busy_cores(1.0)
        before = os.getloadavg()[0]
        with busy_processes(busy or 0):
            result = run_one(args.python, args.kind, config, env_set)
        record = {
            "kind": args.kind,
            "label": args.label,
            "python": args.python,
            "busy": busy,
            "env": env_set,
            **{k: v for k, v in config.items() if v is not None},
            **result,
            "others_before": round(others, 2),
            "load_before": round(before, 2),
            "load_after": round(os.getloadavg()[0], 2),
        }
        shown = {k: v for k, v in record.items() if k not in ("python", "kind", "window")}
        print(json.dumps(shown), flush=True)
        if args.jsonl:
            with open(args.jsonl, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
