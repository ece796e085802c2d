"""Checks of an answer's shape that every editor's end-to-end test makes.

An extractive answer is the documents' own units, each followed by the ``[n]`` of
its source (docs/lsp-extensions.md); the text since the previous marker is the
unit that ``[n]`` cites.  These helpers read the cited lines from disk.
"""

from __future__ import annotations

import re
from typing import Any

from lsp_harness import lines_of

MARKER = re.compile(r"\[(\d{1,3})\]")
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")

QUOTED_LABEL = "Quoted from your documents"


def flat(text: str) -> str:
    """Whitespace collapsed (a quoted sentence may span wrapped lines in its file)."""
    return " ".join(text.split())


def cited_units(text: str) -> list[tuple[int, str]]:
    """``(n, unit)`` for each ``[n]`` of an answer: the text since the previous marker."""
    units: list[tuple[int, str]] = []
    last = 0
    for match in MARKER.finditer(text):
        units.append((int(match.group(1)), text[last : match.start()]))
        last = match.end()
    return units


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(flat(text)) if len(s) >= 12]


def quoted_sentence(answer: dict[str, Any], quoting: str = "") -> tuple[str, dict[str, Any]]:
    """A sentence of the answer (holding ``quoting``) found in the lines its marker
    cites, and that citation.

    Also checks that every marker names a listed citation.
    """
    by_n = {c["n"]: c for c in answer["citations"]}
    units = cited_units(answer["answer"])
    assert units, f"no [n] marker in the answer: {answer['answer']!r}"
    assert {n for n, _ in units} <= set(by_n), (units, sorted(by_n))
    for n, unit in units:
        cited = flat(lines_of(by_n[n]["uri"], by_n[n]["range"]))
        for sentence in sentences(unit):
            if quoting in sentence and sentence in cited:
                return sentence, by_n[n]
    raise AssertionError(
        f"no sentence of the answer{f' with {quoting!r}' if quoting else ''}"
        f" is in its cited lines: {answer['answer']!r}"
    )


def assert_extractive(answer: dict[str, Any], quoting: str = "") -> tuple[str, dict[str, Any]]:
    """The answer is extractive and quotes its sources: a quoted sentence (holding
    ``quoting``) and its citation.

    (A JSON null may arrive as a missing key: Neovim's LSP client drops them.)
    """
    assert answer["refused"] is False, answer["answer"]
    assert answer["mode"] == "extractive", answer
    assert answer.get("fallback") is None
    assert answer["generator_called"] is False
    assert answer.get("degraded") is None
    assert isinstance(answer["confidence"], float) and 0.0 <= answer["confidence"] <= 1.0
    assert all(c["cited"] for c in answer["citations"])
    return quoted_sentence(answer, quoting)


def _place(c: dict[str, Any]) -> str:
    if c.get("page") is not None:
        return f"{c['path']}, page {c['page']}"
    if c.get("start_line") is not None:
        end = c.get("end_line") or c["start_line"]
        return f"{c['path']}:{c['start_line']}" + (f"-{end}" if end > c["start_line"] else "")
    return str(c["path"])


def _link(c: dict[str, Any]) -> str:
    base = c["uri"].split("#")[0]
    if c.get("page") is not None:
        return f"{base}#page={c['page']}"
    if c.get("start_line") is not None:
        end = c.get("end_line") or c["start_line"]
        return f"{base}#L{c['start_line']}" + (f"-L{end}" if end > c["start_line"] else "")
    return base


def _source(prefix: str, c: dict[str, Any]) -> str:
    label = re.sub(r"([\\\[\]])", r"\\\1", _place(c))
    target = _link(c).replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    section = f" — {c['section']}" if c.get("section") else ""
    return f"{prefix}[{label}]({target}){section}" + (" (changed since)" * bool(c.get("changed")))


GRADE_LABELS = {
    "answer": "Answer",
    "closest": "Closest passages — they may not answer the question",
    "refused": "Not found in the documents",
}


def copied_markdown(answer: dict[str, Any]) -> str:
    """The Markdown every client's "copy answer" makes of an answer (the VS Code
    panel's, `:CiteCopy` in Neovim, `citeline-copy-answer` in Emacs): the question,
    when it was asked (a history entry), the grade when it is not a plain answer, the
    text with its ``[n]`` markers, the sources as file:line / page links."""
    out = [f"## {' '.join(answer['question'].split())}", ""]
    grade = answer.get("grade_label") or GRADE_LABELS.get(answer.get("grade") or "")
    if answer.get("time"):
        stale = "; its sources changed since" if answer.get("stale") else ""
        out += [f"*From Citeline's history, asked {answer['time']}{stale}.*", ""]
    if answer.get("refused"):
        out += [f"**{grade or GRADE_LABELS['refused']}.**".replace("..**", ".**"), ""]
        hits = answer.get("hits") or []
        if hits:
            out += ["Nearest passages:", "", *(_source("- ", h) for h in hits[:3])]
    else:
        if grade and answer.get("grade") != "answer":
            out += [f"> **{grade}**", ""]
        out += [answer["answer"].rstrip(), ""]
        if answer["citations"]:
            out += ["Sources:", "", *(_source(f"- [{c['n']}] ", c) for c in answer["citations"])]
    return "\n".join(out).rstrip() + "\n"
