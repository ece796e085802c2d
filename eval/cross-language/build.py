"""Write the cross-language check's documents folder from ../shared/eval.

30 Chinese paragraphs of CMRC 2018 trial (Wikipedia, CC BY-SA 4.0) as text files and
30 English abstracts of SciFact (CC BY-NC 2.0) as Markdown; ``questions.jsonl`` asks
about ten of each in the other language.

    .venv/bin/python eval/cross-language/build.py /tmp/cross-language-docs
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "eval"
CHINESE = range(30, 60)  # CMRC 2018 trial paragraphs, in file order
ENGLISH_EVERY = 20  # every 20th SciFact abstract of the first 600


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/cross-language-docs")
    shutil.rmtree(target, ignore_errors=True)
    (target / "zh").mkdir(parents=True)
    (target / "en").mkdir(parents=True)
    data = json.loads((SHARED / "cmrc2018" / "cmrc2018_trial.json").read_text("utf-8"))
    paragraphs = [p["context"] for a in data["data"] for p in a["paragraphs"]]
    for i in CHINESE:
        (target / "zh" / f"cmrc-trial-{i:03d}.txt").write_text(paragraphs[i] + "\n", "utf-8")
    with open(SHARED / "scifact" / "corpus.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for _, line in zip(range(600), handle, strict=False)]
    for row in rows[::ENGLISH_EVERY]:
        text = f"# {row['title']}\n\n{row['text']}\n"
        (target / "en" / f"scifact-{row['_id']}.md").write_text(text, "utf-8")



if __name__ == "__main__":
    main()
