"""When a unit of another block joins an extractive answer: what it adds."""

from __future__ import annotations

from citeline.core import keywords
from citeline.core.answering.other_blocks import adds_to, heading_holds, joins_from_another_block
from citeline.core.answering.results import Evidence
from citeline.core.answering.scoring import ScoredUnit
from citeline.core.answering.units import split_units
from citeline.core.documents import Chunk, Hit

INDEX = "The index is stored in a folder named .citeline inside the documents folder."
HOVER = "Hovering shows the three best passages, so you can see where a topic is discussed."


def unit(n: int, text: str, heading: tuple[str, ...] = ("Doc",), logit: float = 0.0) -> ScoredUnit:
    chunk = Chunk(f"{n}.md", "Doc", heading, text, 1, 9, None, 0)
    return ScoredUnit(split_units(text)[0], Evidence(n, Hit(n, n, 0.9, chunk)), (), logit)


def weights(question: str) -> dict[str, float]:
    return {t: 1.0 for t in keywords.query_terms(question)}


def test_what_another_block_adds_is_the_question_information_the_chosen_lack() -> None:
    asked = weights("where is the index stored, how large a PDF")
    index, pdf = unit(1, INDEX), unit(2, "A PDF may be as large as 20 MB.")
    # question words (where, how) are no information; index, store, larg, pdf are
    assert adds_to(pdf, [index], asked) == 0.5  # larg and pdf of the four
    assert adds_to(index, [index], asked) == 0.0
    assert adds_to(pdf, [index], weights("where is it")) == 0.0  # nothing but question words


def test_a_heading_holds_the_question_terms_it_names() -> None:
    asked = weights("Where does Citeline store its index?")
    assert heading_holds(unit(1, INDEX, ("Moving the index store",)), asked) == 2 / 3
    assert heading_holds(unit(2, HOVER, ("Hover to search",)), asked) == 0.0


def test_the_first_unit_and_its_own_block_always_join() -> None:
    asked = weights("Where does Citeline store its index?")
    index, hover = unit(1, INDEX), unit(2, HOVER, logit=-0.6)
    assert joins_from_another_block(hover, [], 0.5, asked)  # the first unit
    assert joins_from_another_block(unit(1, "Its main file is index.sqlite3."), [index], 0.5, asked)
    assert not joins_from_another_block(hover, [index], 0.5, asked)  # 0.71 of the best
    assert joins_from_another_block(hover, [index], 0.5, asked, near_best=0.7)


FORMATS = "Citeline 支持以下文件格式（按文件扩展名识别）："
IGNORED = "它的写法和 `.gitignore` 相同，`.gitignore` 中排除的文件也会被忽略。"


def test_a_cjk_question_s_question_bigrams_are_no_information() -> None:
    asked = weights("它支持哪些文件格式？")  # 它支 支持 持哪 哪些 些文 文件 件格 格式
    formats = unit(1, FORMATS, ("支持哪些文件格式？",))
    # 持哪, 哪些, 些文 hold a question character: the five others are the information
    assert heading_holds(formats, asked) == 4 / 5  # all but 它支
    assert adds_to(unit(2, "默认的嵌入模型已经转换为 GGUF 格式。"), [formats], asked) == 0.0
    assert adds_to(unit(2, "它支持 Emacs。"), [formats], asked) == 1 / 5  # 它支


def test_a_cjk_block_whose_heading_shares_one_bigram_stays_out_at_its_models_share() -> None:
    asked = weights("它支持哪些文件格式？")
    formats = unit(1, FORMATS, ("支持哪些文件格式？",))
    ignored = unit(2, IGNORED, ("怎样让 Citeline 忽略一个文件夹？",), logit=-3.0)
    # 文件 of 文件夹 is 1/5 of the question: a bigram a neighbouring heading shares
    assert heading_holds(ignored, asked) == 1 / 5
    assert joins_from_another_block(ignored, [formats], 0.5, asked, heading_joins=0.0)
    assert not joins_from_another_block(ignored, [formats], 0.5, asked, heading_joins=0.3)
    other_faq = unit(3, "Markdown 和 MDX 都会被读取。", ("还支持哪些文件格式？",), logit=-3.0)
    assert joins_from_another_block(other_faq, [formats], 0.5, asked, heading_joins=0.3)
