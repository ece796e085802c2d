"""Choosing units and writing them out: what comes along, the order, the markers."""

from __future__ import annotations

import dataclasses

from citeline.core import keywords
from citeline.core.answering.extractive import MAX_UNITS, compose, renumber, select
from citeline.core.answering.fitted import ENGLISH
from citeline.core.answering.results import Evidence
from citeline.core.answering.scoring import Scored, ScoredUnit
from citeline.core.answering.units import split_units
from citeline.core.documents import Chunk, Hit


def block(
    n: int, text: str, path: str = "", heading: tuple[str, ...] = ("Doc",)
) -> list[ScoredUnit]:
    chunk = Chunk(path or f"{n}.md", "Doc", heading, text, 1, 9, None, 0)
    e = Evidence(n, Hit(n, n, 0.9, chunk))
    return [ScoredUnit(u, e, (), -5.0) for u in split_units(text)]


def scored(
    units: list[ScoredUnit],
    logits: dict[str, float],
    relative: float = 0.5,
    opening_brings_next: bool = False,
    question: str = "",
    other_blocks_add: bool = False,
) -> Scored:
    """The units with the given log-odds (by text; others stay low), best first."""
    ranked = sorted(
        (dataclasses.replace(u, logit=logits.get(u.unit.text, u.logit)) for u in units),
        key=lambda u: -u.logit,
    )
    models = dataclasses.replace(
        ENGLISH,
        relative=relative,
        opening_brings_next=opening_brings_next,
        other_blocks_add=other_blocks_add,
    )
    terms = {t: 1.0 for t in keywords.query_terms(question)}
    return Scored(ranked, 0.9, (), models, terms=terms)


def texts(units: list[ScoredUnit]) -> list[str]:
    return [u.unit.text for u in units]


def test_units_under_the_relative_cut_stay_out() -> None:
    units = block(1, "Alpha is first. Beta is second. Gamma is third.")
    result = select(scored(units, {"Gamma is third.": 2.0, "Alpha is first.": 1.9}))
    assert texts(result.units) == ["Alpha is first.", "Gamma is third."]  # reading order
    result = select(scored(units, {"Gamma is third.": 2.0, "Alpha is first.": -2.0}))
    assert texts(result.units) == ["Gamma is third."]
    # a question asking two things keeps the unit for its other part
    two = dataclasses.replace(
        scored(units, {"Gamma is third.": 2.0, "Alpha is first.": -2.0}), parts=2
    )
    assert {"Alpha is first.", "Gamma is third."} <= set(texts(select(two).units))


def test_up_to_five_units_are_chosen_on_their_own_score() -> None:
    sentences = [f"Sentence number {k} stands alone." for k in range(7)]
    units = block(1, "\n\n".join(sentences))
    logits = {text: 2.0 - 0.1 * k for k, text in enumerate(sentences)}
    result = select(scored(units, logits, relative=0.0))
    assert MAX_UNITS == 5
    assert texts(result.units) == sentences[:MAX_UNITS]


def test_a_dependent_sentence_brings_the_one_before_it() -> None:
    units = block(1, "The index lives in .citeline. It holds one database.")
    result = select(scored(units, {"It holds one database.": 2.0}))
    assert texts(result.units) == ["The index lives in .citeline.", "It holds one database."]


def test_a_colon_brings_what_follows_and_a_term_its_definition() -> None:
    units = block(1, "Use these options:\n\n- --json\n- --docs")
    result = select(scored(units, {"Use these options:": 2.0}))
    assert texts(result.units) == ["Use these options:", "- --json", "- --docs"]
    units = block(2, "gc.auto\n\nWhen there are more loose objects, gc packs them.")
    result = select(scored(units, {"When there are more loose objects, gc packs them.": 2.0}))
    assert texts(result.units)[0] == "gc.auto"


def test_a_lead_in_brings_its_whole_list_not_only_the_first_items() -> None:
    items = [f"- format {k}" for k in range(6)]
    units = block(1, "It reads these formats:\n\n" + "\n".join(items))
    result = select(scored(units, {"It reads these formats:": 2.0}))
    assert texts(result.units) == ["It reads these formats:", *items]


def test_a_default_value_after_a_chosen_sentence_comes_along() -> None:
    units = block(1, "Above this many loose objects gc packs them. The default value is 6700.")
    result = select(scored(units, {"Above this many loose objects gc packs them.": 2.0}))
    assert texts(result.units)[-1] == "The default value is 6700."


def test_a_sentence_opening_its_passage_brings_the_next_unit() -> None:
    text = "You may need to check that a repository exists. Run snapshots: it fails if not."
    units = block(1, text)
    opener = "You may need to check that a repository exists."
    result = select(scored(units, {opener: 2.0}, opening_brings_next=True))
    assert texts(result.units) == [opener, "Run snapshots: it fails if not."]
    assert texts(select(scored(units, {opener: 2.0})).units) == [opener]  # CJK: not
    later = select(scored(units, {"Run snapshots: it fails if not.": 2.0}, 0.5, True))
    assert texts(later.units) == ["Run snapshots: it fails if not."]


INDEX = "The index is stored in a folder named .citeline inside the documents folder."
HOVER = "Hovering shows the three best passages, so you can see where a topic is discussed."


def test_another_block_that_adds_nothing_the_question_asks_stays_out() -> None:
    # "Where does Citeline store its index?": the Hover section scores fairly (its
    # words are near), but the first block already holds everything asked.
    units = block(1, INDEX, heading=("Where the index lives",)) + block(2, HOVER)
    logits = {INDEX: 0.0, HOVER: -0.6}  # p 0.50 and 0.35: 0.71 of the best
    question = "Where does Citeline store its index?"
    result = select(scored(units, logits, 0.2, question=question, other_blocks_add=True))
    assert texts(result.units) == [INDEX]
    # without the rule (CJK, or before it) the relative cut alone lets it in
    assert texts(select(scored(units, logits, 0.2, question=question)).units) == [INDEX, HOVER]


def test_another_block_joins_when_near_the_best_in_the_same_section_or_adding_a_part() -> None:
    question = "Where does Citeline store its index?"
    hover = block(2, HOVER)
    index = block(1, INDEX, heading=("Where the index lives",))
    near = select(scored(index + hover, {INDEX: 0.0, HOVER: -0.1}, 0.2, False, question, True))
    assert texts(near.units) == [INDEX, HOVER]  # 0.95 of the best
    # the same file and section, cut into two passages
    rest = block(3, "Its main file is index.sqlite3.", "1.md", ("Where the index lives",))
    logits = {INDEX: 0.0, "Its main file is index.sqlite3.": -2.0}
    same = select(scored(index + rest, logits, 0.2, False, question, True))
    assert texts(same.units) == [INDEX, "Its main file is index.sqlite3."]
    # a two-part question: the other block holds the part the first lacks
    two = "Where is the index stored, and how large can a PDF be?"
    pdf = block(4, "A PDF file may be at most 20 MB.")
    both = select(
        scored(
            index + pdf,
            {INDEX: 0.0, "A PDF file may be at most 20 MB.": -1.0},
            0.2,
            False,
            two,
            True,
        )
    )
    assert texts(both.units) == [INDEX, "A PDF file may be at most 20 MB."]
    # a section whose heading names what is asked about
    moved = block(5, "Set path in the index table.", heading=("Moving the index store",))
    logits = {INDEX: 0.0, "Set path in the index table.": -1.0}
    titled = select(scored(index + moved, logits, 0.2, False, question, True))
    assert texts(titled.units) == [INDEX, "Set path in the index table."]


def test_blocks_are_numbered_in_the_order_the_answer_cites_them() -> None:
    units = block(1, "Noise here.") + block(2, "The answer is here.")
    result = select(scored(units, {"The answer is here.": 2.0}))
    result, evidence = renumber(result)
    assert [(e.n, e.hit.chunk.path) for e in evidence] == [(1, "2.md"), (2, "1.md")]
    assert compose(result) == "The answer is here. [1]"


def test_composition_keeps_paragraphs_lists_tables_and_code_readable() -> None:
    text = (
        "One. Two.\n\nOptions:\n\n- a\n- b\n\n| k | v |\n|---|---|\n| x | 1 |\n\n```sh\nmake\n```"
    )
    units = block(1, text)
    every = {u.unit.text: 2.0 for u in units}
    result = select(scored(units, every, relative=0.0), max_units=len(units))
    assert compose(result) == (
        "One. [1] Two. [1]\n"
        "Options: [1]\n"
        "- a [1]\n"
        "- b [1]\n"
        "| k | v |\n|---|---|\n| x | 1 | [1]\n"
        "```sh\nmake\n```\n[1]"
    )


def test_a_lead_in_brings_the_lines_of_a_list_written_without_markers() -> None:
    # an HTML list's items are paragraphs of their own, with no "-" before them
    text = (
        "Restic returns one of the following exit status codes:\n\n"
        "0 when the backup was successful (snapshot created)\n\n"
        "1 when there was a fatal error\n\n"
        "3 when some source files could not be read\n\n"
        "Fatal errors occur when the repository cannot be written."
    )
    units = block(1, text)
    lead = "Restic returns one of the following exit status codes:"
    result = select(scored(units, {lead: 2.0}))
    assert texts(result.units) == [lead, *(u.unit.text for u in units[1:4])]
    off = select(scored(units, {lead: 2.0}), line_lists=False)
    assert texts(off.units) == texts(result.units)[:2]


def test_a_code_block_brings_the_sentence_that_introduces_it() -> None:
    text = (
        "This can be achieved with the dump command, like this:\n\n```\n$ restic dump latest f\n```"
    )
    units = block(1, text)
    code = units[1].unit.text
    result = select(scored(units, {code: 2.0}))
    assert texts(result.units) == [units[0].unit.text, code]


def test_a_heading_line_takes_no_slot_of_its_own() -> None:
    heading = "Maximum Number Of Host Parameters"
    sentences = [f"Sentence number {k} stands alone." for k in range(6)]
    units = block(1, "\n\n".join([heading, *sentences]))
    logits = {heading: 2.1} | {text: 2.0 - 0.1 * k for k, text in enumerate(sentences)}
    result = select(scored(units, logits, relative=0.0))
    assert texts(result.units) == [heading, *sentences[:MAX_UNITS]]
    counted = select(scored(units, logits, relative=0.0), fragments_free=0)
    assert texts(counted.units) == [heading, *sentences[: MAX_UNITS - 1]]


def test_a_unit_the_rule_left_out_joins_once_its_block_is_in_the_answer() -> None:
    # CMRC 2018 dev: the unit with the answer adds no term of the question (管辖 is in
    # the best unit), the next of its block does (嘉善南站); once that one joins, the
    # answer's unit comes back, ahead of the units still queued.
    other = "广茂铁路由三茂铁路股份有限公司管辖。"
    owner, station = "属上海铁路局嘉兴车务段管辖。", "嘉善南站是沪昆客运专线的一个车站。"
    units = block(1, other) + block(2, owner + station)
    logits = {other: 0.0, owner: -3.0, station: -3.5}
    question = "嘉善南站由哪个公司管辖？"
    result = select(scored(units, logits, 0.0, question=question, other_blocks_add=True))
    assert texts(result.units) == [other, owner, station]
    first_pass = select(scored(units, logits, 0.0, question=question, other_blocks_add=True), 2)
    assert texts(first_pass.units) == [other, station]  # two slots: the deferred one is third
