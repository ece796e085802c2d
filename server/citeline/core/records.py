"""The ask log: one JSON line per question in the index folder.

A record holds the question, the hits with their scores, the prompt, the answer,
its citations, the model names and the timings.  Everything in it comes from the
documents folder or the question: paths are relative to the folder and models
are named by file name, never by where they live.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from citeline.core.answering.results import Answer

log = logging.getLogger(__name__)

RECORDS_FILE = "asks.jsonl"


def record_ask(index_dir: Path, answer: Answer, models: dict[str, str]) -> None:
    record = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **answer.to_json(),
        "prompt": answer.prompt,
        "evidence": [e.n for e in answer.evidence],
        "dropped": answer.dropped,
        "models": models,
    }
    try:
        # A path that is not valid UTF-8 (lone surrogates) is written as a JSON \u escape.
        with open(
            index_dir / RECORDS_FILE, "a", encoding="utf-8", errors="backslashreplace"
        ) as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    except OSError as exc:  # a full disk must not turn an answer into an error
        log.warning("could not record the ask in %s: %s", index_dir, exc)
