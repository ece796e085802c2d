"""The features answer units are scored by, and the rules behind them.

Every unit of every evidence block (``units``) gets lexical features, cheap to
compute for all of them:

- ``lexical``: the share of the question's information (keyword terms: stemmed
  English words, identifiers, CJK bigrams, weighted by their IDF in the index)
  found in the unit;
- ``context``: the same over the unit with its title, section heading and
  lead-in, which often name what the unit is about;
- ``local``: the same with terms weighted by how rare they are among the
  candidate units themselves: a term every unit shares (the topic, often named
  only in the first sentence) says little about which unit answers;
- ``local_characters``: for Chinese, Japanese and Korean, the same over the
  question's content characters (the CMRC 2018 scorer's unit);
- ``previous``: ``local`` of the unit just before it in its block (a unit
  after a matching one often holds the value: "The default is 6700.");
- ``rank``: the retrieval rank of the unit's block;
- ``length``: the unit's length (short units say little);
- ``code``: the unit is a code block (its terms leave out string literals that
  read as prose: ``citeline ask "Where is the index?"`` is an example of asking,
  not an answer);
- ``how_code``: a code block, and the question asks how to do something or for
  a command (``asks_how``: code answers those);
- ``fragment``: the unit does not end like a sentence (a term being defined, a
  heading or caption in a PDF's text layer);
- ``number``: the question asks for a quantity or a time and the unit holds one;
- ``heading``: the share of the question's information in the unit's own
  section heading (a section titled "Ignoring files" answers "how do I make it
  ignore a folder");
- ``first``: ``heading`` for the first unit under it (what a section says first
  is what it is about), 0 for the others;
- ``kind``: the unit has the shape the question's kind wants (``kind_fits``):
  "how do I" (or a task typed without a question word, ``asks_how``) a command,
  setting or code, "what is the default" a default, "why" a reason, "what is X"
  a definition.

The question as a whole is judged by whether it names an identifier the
documents never mention (``core.sshCommand``, ``SHA-256``) and how many of its
words are jargon the evidence never uses (a word the embedder's tokenizer does
not know whole, such as ``deborphan`` or ``checkbashisms``, is not everyday
English: a question about it wants that very thing), beside the scores in
``scoring``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from citeline.core import keywords
from citeline.core.answering.results import Evidence
from citeline.core.answering.units import Unit
from citeline.core.documents import SECTION_SEPARATOR
from citeline.core.scripts import CJK_RUN

CountTokens = Callable[[str], int]
Placed = tuple[Unit, Evidence]  # a unit and the evidence block it is in

_CJK_QUESTION_CHARS = frozenset("什么哪里谁多少几吗呢是的了在有为何怎样如请问一个这那些")
LENGTH_NORM = 200.0
ASKS_NUMBER = re.compile(
    r"\b(?:how (?:many|much|long|often|old|large|big)|when|what (?:year|date|time|size)|"
    r"which (?:year|version|port|number))\b|多少|几|哪一?年|何时|什么时候|多大|多高|多长|多久",
    re.IGNORECASE,
)
NUMBER = re.compile(r"\d|[一二三四五六七八九十百千万亿两]")
ASKS_HOW = re.compile(
    r"\b(?:how (?:do|can|should|would|to)|which (?:command|option|flag|setting|pragma)|"
    r"what command|command)\b|如何|怎么|怎样|命令",
    re.IGNORECASE,
)


# The kinds of question that want a unit of a particular shape, and those shapes.
ASKS_WHY = re.compile(
    r"^\W*why\b|\bwhy (?:do|does|did|is|are|would|should|can)\b|为什么|为何", re.I
)
ASKS_DEFAULT = re.compile(r"\bdefaults?\b|默认|缺省", re.I)
ASKS_WHAT_IS = re.compile(
    r"^\W*what(?:'s| is| are) (?:an? |the )?[\w.\-`' ]{1,40}\?*$|什么是|是什么[？?]?$", re.I
)
_REASON = re.compile(
    r"\b(?:because|since|so that|in order to|to avoid|to keep|otherwise|the reason)\b"
    r"|因为|为了|以免|以便|由于|因此|所以",
    re.I,
)
_DEFAULT = re.compile(r"\bdefaults?\b|\bby default\b|默认|缺省", re.I)
_ACTION = re.compile(r"`[^`]+`|(?:^|\s)--?[a-z][\w-]*|\b[\w.]+ ?= ?\S|^\s*(?:\$|#) ", re.I)
_DEFINES = re.compile(
    r"^(?:an? |the )?[\w`.\-' ]{1,50}? "
    r"(?:(?:is|are) (?:an?|the|one|any)\b|means|refers to|stands for)|是(?:一个|一种|指)",
    re.I,
)


# Words every question is made of: they ask, they name no part of what is asked.
FUNCTION_TERMS = frozenset(
    keywords.query_terms(
        "why how what where when which who whom whose does do did can could should would "
        "will may must shall is are was were be been has have had i me my we our you your "
        "it its they them there here get make use"
    )
)


def is_function_term(term: str) -> bool:
    """A keyword term that asks rather than names: an English question word
    (``FUNCTION_TERMS``), or a CJK bigram holding a question character (``哪些``, and
    ``持哪`` of "支持哪些": ``cjk_terms`` cuts the question's runs there)."""
    if term in FUNCTION_TERMS:
        return True
    return bool(CJK_RUN.match(term)) and any(c in _CJK_QUESTION_CHARS for c in term)


_WH_WORD = re.compile(
    r"\b(?:why|how|what|where|when|which|who)\b|为什么|为何|怎么|怎样|如何|哪|什么|多少", re.I
)
# A question asking yes or no ("can it read .env files", "是否支持…", "…吗").
_YES_NO = re.compile(
    r"^\W*(?:is|are|was|were|can|could|does|do|did|should|will|would|has|have|may|must)\b"
    r"|是否|能否|可否|吗[？?]?\s*$|么[？?]?\s*$",
    re.I,
)


def asks_how(question: str) -> bool:
    """Whether the question asks how to do something: "how do I …", "which command",
    and a task typed without a question word, as into a command palette ("skip
    files bigger than 1 GB", "add a new changelog entry"): commands, settings and
    code answer those."""
    if ASKS_HOW.search(question):
        return True
    return not _WH_WORD.search(question) and not _YES_NO.search(question.strip())


def identifiers(question: str) -> set[str]:
    """The keyword terms of the identifiers a question names (``core.sshCommand``,
    ``SHA-256``), less CJK runs (one token to ``identifier_terms``: "1998年世界杯…"
    is no identifier) and two capitals (a unit or short form the documents may
    spell out: "GB")."""
    return {
        t
        for t in keywords.identifier_terms(question)
        if not CJK_RUN.search(t) and not (len(t) <= 2 and t.isalpha())
    }


def question_parts(question: str) -> int:
    """How many questions a question asks: two for "why, and how do I change it"
    (two question words, or two question marks)."""
    words = {w.lower() for w in _WH_WORD.findall(question)}
    marks = len(re.findall(r"[?？]", question.rstrip("?？ "))) + 1
    return max(len(words), marks, 1)


def kind_fits(question: str, unit: Unit) -> bool:
    """Whether the unit has the shape the question's kind wants (``ASKS_*``)."""
    text = unit.text
    if ASKS_WHY.search(question):
        return bool(_REASON.search(text))
    if ASKS_DEFAULT.search(question):
        return bool(_DEFAULT.search(text))
    if asks_how(question):
        return unit.kind == "code" or bool(_ACTION.search(text))
    if ASKS_WHAT_IS.search(question.strip()):
        return bool(_DEFINES.search(text))
    return False


def own_heading(evidence: Evidence) -> str:
    """The heading of the section a passage is in (its title for a section-less one)."""
    chunk = evidence.hit.chunk
    return chunk.heading_path[-1] if chunk.heading_path else chunk.title


# A string literal that reads as prose: words, spaces and sentence punctuation only
# ("Where is the index?"), not code inside quotes ("$(direnv hook bash)").
_QUOTED_PROSE = re.compile(r"\"[\w ,.?!'-]*\"|'[\w ,.?!-]*'")


def meaning(unit: Unit) -> str:
    """The text a unit's terms are taken from: a code block without its string
    literals that read as prose, which are data (an example question, a message),
    not what it does; code inside quotes (``eval "$(direnv hook bash)"``) stays."""
    return _QUOTED_PROSE.sub(" ", unit.text) if unit.kind == "code" else unit.text


def coverage(weights: dict[str, float], present: set[str]) -> float:
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in present) / total


def local_weights(question: set[str], units: Sequence[set[str]]) -> dict[str, float]:
    """Question items weighted by their rarity among the candidate units."""
    n = len(units)
    return {item: math.log((n + 1) / (sum(item in u for u in units) + 0.5)) for item in question}


def cjk_terms(question: str) -> list[str]:
    """A CJK question's content terms: its CJK runs cut at question characters
    (``什么``, ``的``, ``是``…), those of two characters or more ("板球的规则是什么？":
    ``板球``, ``规则``)."""
    out: list[str] = []
    for run in CJK_RUN.findall(question):
        term = ""
        for ch in run + "的":  # a question character ends the last term too
            if ch in _CJK_QUESTION_CHARS:
                if len(term) >= 2:
                    out.append(term)
                term = ""
            else:
                term += ch
    return list(dict.fromkeys(out))


def content_characters(question: str) -> set[str]:
    chars = {c for run in CJK_RUN.findall(question) for c in run}
    return chars - _CJK_QUESTION_CHARS


def _folded(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def repeats_heading(unit: Unit, evidence: Evidence) -> bool:
    chunk = evidence.hit.chunk
    text = _folded(unit.text)
    return bool(text) and any(text == _folded(h) for h in (*chunk.heading_path, chunk.title))


def unit_context(unit: Unit, evidence: Evidence) -> str:
    """The title, section and lead-in that tell what a unit is about."""
    chunk = evidence.hit.chunk
    parts = list(chunk.heading_path)
    if chunk.title_from_content and chunk.title and (not parts or parts[0] != chunk.title):
        parts.insert(0, chunk.title)
    head = SECTION_SEPARATOR.join(parts)
    return "\n".join(p for p in (head, unit.lead) if p)


def embedding_input(unit: Unit, evidence: Evidence) -> str:
    """What the embedder reads for a unit: its heading, then the unit (a code block
    without its string literals: ``citeline ask "How do I …?"`` quotes a question,
    it does not answer it)."""
    context = unit_context(unit, evidence)
    text = meaning(unit)
    return f"{context}\n\n{text}" if context else text


def evidence_terms(units: Sequence[Placed]) -> set[str]:
    """Every keyword term of the units and their headings."""
    out: set[str] = set()
    for unit, evidence in units:
        out |= set(keywords.terms(unit.text))
        out |= set(keywords.terms(unit_context(unit, evidence)))
    return out


_WORD = re.compile(r"[A-Za-z][\w.]*[A-Za-z0-9]|[A-Za-z]")


def question_words(question: str) -> list[str]:
    """The question's Latin-script words, a hyphenated word as its parts."""
    return list(dict.fromkeys(w for part in question.split("-") for w in _WORD.findall(part)))


def missing_jargon(question: str, units: Sequence[Placed], count_tokens: CountTokens) -> int:
    """How many of the question's words are jargon (not one token to the embedder's
    tokenizer) that no unit uses; a hyphenated word counts by its parts."""
    present = evidence_terms(units)
    found = 0
    for word in question_words(question):
        terms = keywords.terms(word)
        if not terms or all(t in present for t in terms):
            continue
        if count_tokens(word.lower()) > 1:
            found += 1
    return found
