"""The rules answer units are scored by."""

from __future__ import annotations

import math

from citeline.core.answering.features import (
    ASKS_HOW,
    ASKS_NUMBER,
    asks_how,
    cjk_terms,
    content_characters,
    coverage,
    identifiers,
    is_function_term,
    local_weights,
    meaning,
    missing_jargon,
    question_words,
    repeats_heading,
    unit_context,
)
from citeline.core.answering.results import Evidence
from citeline.core.answering.units import Unit
from citeline.core.documents import Chunk, Hit


def evidence(text: str, heading: tuple[str, ...] = ("Guide", "Index")) -> Evidence:
    chunk = Chunk("g.md", "Guide", heading, text, 1, 2, None, 0)
    return Evidence(1, Hit(1, 1, 0.9, chunk))


def test_coverage_is_the_weighted_share_of_items_present() -> None:
    assert coverage({"index": 3.0, "store": 1.0}, {"index"}) == 0.75
    assert coverage({}, {"index"}) == 0.0


def test_items_every_unit_has_weigh_less_than_rare_ones() -> None:
    weights = local_weights({"git", "stash"}, [{"git", "stash"}, {"git"}, {"git"}])
    assert weights["stash"] > weights["git"] > 0
    assert math.isclose(weights["git"], math.log(4 / 3.5))


def test_a_code_block_means_what_it_does_not_its_string_literals() -> None:
    code = Unit('```bash\nciteline ask "Where is the index?" --docs ~/notes\n```', "code", 0, 0)
    assert "index" not in meaning(code) and "--docs" in meaning(code)
    prose = Unit('He said "index".', "sentence", 0, 0)
    assert meaning(prose) == prose.text
    # code inside quotes is what the block does
    hook = Unit('eval "$(direnv hook bash)"', "code", 0, 0)
    assert meaning(hook) == hook.text


def test_identifiers_leave_out_cjk_runs_and_two_capitals() -> None:
    assert identifiers("Where is core.sshCommand? SHA-256 and ARG_MAX") == {
        "coresshcommand",
        "sha256",
        "argmax",
    }
    assert identifiers("skip files bigger than 1 GB") == {"1"}
    assert identifiers("1998年世界杯的冠军是哪支球队？") == set()


def test_question_words_and_characters() -> None:
    assert question_words("Which BSD-style lpr? (core.sshCommand)") == [
        "Which",
        "BSD",
        "style",
        "lpr",
        "core.sshCommand",
    ]
    assert content_characters("索引保存在哪里？") == set("索引保存")
    assert cjk_terms("板球的规则是什么？") == ["板球", "规则"]
    assert cjk_terms("怎么排除一个文件夹不备份") == ["排除", "文件夹不备份"]
    assert cjk_terms("restic 能备份吗 S3") == ["能备份"] and cjk_terms("What is it?") == []
    assert ASKS_NUMBER.search("How many moons?") and ASKS_NUMBER.search("索引有多大？")
    assert ASKS_HOW.search("How do I rotate keys?") and not ASKS_HOW.search("Why is it slow?")
    # a task typed without a question word asks how, a yes/no question does not
    assert asks_how("skip files bigger than 1 GB") and asks_how("自动检查上游新版本")
    assert not asks_how("can it read .env files too") and not asks_how("它支持 zsh 吗")
    assert not asks_how("exit code 3 means what") and not asks_how("支持哪些 shell？")


def test_a_unit_repeating_its_heading_is_not_an_answer() -> None:
    e = evidence("Index\nThe index lives in .citeline.")
    assert repeats_heading(Unit("Index", "sentence", 0, 0), e)
    assert not repeats_heading(Unit("The index lives in .citeline.", "sentence", 0, 1), e)
    assert unit_context(Unit("- a", "item", 0, 0, lead="Options:"), e) == (
        "Guide > Index\nOptions:"
    )


def test_jargon_the_evidence_never_uses() -> None:
    e = evidence("Use git stash to put work aside.")
    units = [(Unit("Use git stash to put work aside.", "sentence", 0, 0), e)]
    pieces = {"deborphan": 3, "stash": 1, "remove": 1, "orphaned": 2, "libraries": 1}

    def count(word: str) -> int:
        return pieces.get(word, 1)

    # "orphaned" and "deborphan" are not one token each, and the evidence lacks both
    assert missing_jargon("Remove orphaned libraries with deborphan?", units, count) == 2
    assert missing_jargon("How do I stash work?", units, count) == 0


def test_the_unit_shape_each_kind_of_question_wants() -> None:
    from citeline.core.answering.features import kind_fits

    def unit(text: str, kind: str = "sentence") -> Unit:
        return Unit(text, kind, 0, 0)  # type: ignore[arg-type]

    how = "How do I make it ignore a folder?"
    assert kind_fits(how, unit("Add the folder to `.citelineignore`."))
    assert kind_fits(how, unit("citeline index --docs ~/notes", "code"))
    assert not kind_fits(how, unit("Ignoring files keeps the index small."))
    default = "What is the default port?"
    assert kind_fits(default, unit("The port defaults to 6700."))
    assert not kind_fits(default, unit("The port can be changed."))
    why = "Why are citations always included?"
    assert kind_fits(
        why, unit("They are built by the program, because a model can invent sources.")
    )
    assert not kind_fits(why, unit("Citations name a file and lines."))
    what = "What is a chunk?"
    assert kind_fits(what, unit("A chunk is a window of a document."))
    assert not kind_fits(what, unit("Chunks are embedded once."))
    assert kind_fits("为什么回答里总是带有引用？", unit("因为引用来自检索到的段落。"))
    assert not kind_fits("Where is the index stored?", unit("The index is stored in `.citeline`."))


def test_a_passage_s_own_heading_is_its_last() -> None:
    from citeline.core.answering.features import own_heading

    assert own_heading(evidence("text", ("Configuration", "Ignoring files"))) == "Ignoring files"
    assert own_heading(evidence("text", ())) == "Guide"


def test_a_question_asking_two_things_has_two_parts() -> None:
    from citeline.core.answering.features import question_parts

    assert question_parts("Where is the index stored?") == 1
    assert question_parts("search ignores two-letter words, why and how to change it") == 2
    assert question_parts("What is a chunk? How big is it?") == 2
    assert question_parts("为什么会重新嵌入，怎么避免？") == 2
    assert question_parts("default port") == 1


def test_a_code_block_is_embedded_without_its_string_literals() -> None:
    from citeline.core.answering.features import embedding_input

    code = Unit('citeline ask "How do I make it ignore a folder?"', "code", 0, 0)
    text = embedding_input(code, evidence(code.text, ("Guide", "Your first question")))
    assert text.startswith("Guide > Your first question") and "ignore" not in text
    assert "citeline ask" in text


def test_question_words_and_cjk_bigrams_with_a_question_character_ask_rather_than_name() -> None:
    assert is_function_term("how") and is_function_term("哪些") and is_function_term("持哪")
    assert not is_function_term("格式") and not is_function_term("index")
