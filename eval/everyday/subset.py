#!/usr/bin/env python3
"""Write a part of the everyday question set, to measure it on its own.

    python3 eval/everyday/subset.py report --cross > /tmp/cross.jsonl
    .venv/bin/citeline eval questions /tmp/cross.jsonl --docs eval/everyday/docs

Filters (all optional, combined with "and"): --lang en|zh, --kind
answerable|unanswerable|off_topic, --cross (only cross-language questions),
--same (only questions in their documents' language).  Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("split", choices=["tune", "report"])
    parser.add_argument("--lang", choices=["en", "zh"])
    parser.add_argument("--kind", choices=["answerable", "unanswerable", "off_topic"])
    language = parser.add_mutually_exclusive_group()
    language.add_argument("--cross", action="store_true", help="cross-language questions only")
    language.add_argument("--same", action="store_true", help="same-language questions only")
    args = parser.parse_args()
    lines = (HERE / f"questions-{args.split}.jsonl").read_text("utf-8").splitlines()
    kept = 0
    for line in lines:
        if not line.strip():
            continue
        row = json.loads(line)
        if args.lang and row["lang"] != args.lang:
            continue
        if args.kind and row["kind"] != args.kind:
            continue
        if args.cross and not row.get("cross_language"):
            continue
        if args.same and (row.get("cross_language") or row["kind"] != "answerable"):
            continue
        sys.stdout.write(line + "\n")
        kept += 1
    print(f"{kept} questions", file=sys.stderr)
    return 0 if kept else 1


if __name__ == "__main__":
    sys.exit(main())
