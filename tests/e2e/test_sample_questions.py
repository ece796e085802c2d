"""Plain questions a new user asks the bundled samples, through the real server.

Each is answered from the documents (graded ``answer``, never refused) and
cites the section that holds the answer; the grade's label is the
one clients show verbatim (docs/lsp-extensions.md).  Real model, real index.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from answer_checks import cited_units, flat, sentences
from lsp_harness import ASK_TIMEOUT, CitelineClient, request, start, stop, wait_ready

from conftest import copy_samples

pytestmark = pytest.mark.asyncio(loop_scope="module")

LABELS = {
    "en": {
        "answer": "Answer",
        "closest": "Closest passages — they may not answer the question",
        "refused": "Not found in the documents",
    },
    "zh": {"answer": "答案", "closest": "最接近的段落——可能没有回答这个问题"},
}

# question -> the (file, section) pairs that hold its answer (any one cited is right)
TABLE = {
    "What file types are supported?": {
        ("how-indexing-works.md", "Loading a file"),
        ("getting-started.md", "What it reads"),
    },
    "How do I make it ignore a folder?": {("configuration.md", "Ignoring files")},
    "Can I use it from Neovim?": {("citeline-manual.html", "Neovim")},
    "What happens when I rename a file?": {
        ("how-indexing-works.md", "Content-addressed vectors"),
        ("how-indexing-works.md", "Noticing changes"),
    },
    "how do I install it": {("getting-started.md", "Installing")},
    "How do I change the embedding model?": {("configuration.md", "Choosing a model")},
    "它支持哪些文件格式？": {("zh/常见问题.md", "支持哪些文件格式？")},
    "Where does Citeline store its index?": {("getting-started.md", "Where the index lives")},
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_samples(tmp_path_factory.mktemp("samples") / "samples")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(samples: Path) -> AsyncIterator[CitelineClient]:
    client = await start("visual-studio-code", [], extra_args=("--docs", str(samples)))
    try:
        await wait_ready(client, samples)
        yield client
    finally:
        await stop(client)


@pytest.mark.parametrize("question", list(TABLE))
async def test_each_plain_question_is_answered_from_the_section_that_holds_it(
    client: CitelineClient, samples: Path, question: str
) -> None:
    answer = await asyncio.wait_for(
        request(client, "citeline/ask", {"question": question}), ASK_TIMEOUT
    )
    text = answer["answer"]
    # each is answered by the section cited: graded ``answer`` (the heading, the
    # retrieval rank and the embedder agree with the best unit, scoring.section_features)
    assert answer["grade"] == "answer", (answer["confidence"], text)
    assert answer["refused"] is False and answer["mode"] == "extractive", text
    assert answer["grade_label"] == LABELS[answer["language"]][answer["grade"]]
    cited = {(c["path"], c["section"].split(" > ")[-1]) for c in answer["citations"]}
    assert cited & TABLE[question], (question, sorted(cited), text)
    # the answer quotes the lines its citations point at (a PDF's by page: not read here)
    by_n = {c["n"]: c for c in answer["citations"]}

    def lines(c: dict[str, object]) -> str:
        text = (samples / str(c["path"])).read_text("utf-8").splitlines()
        return flat("\n".join(text[int(str(c["start_line"])) - 1 : int(str(c["end_line"]))]))

    quoted = [
        sentence in lines(by_n[n])
        for n, unit in cited_units(text)
        if by_n[n]["page"] is None
        for sentence in sentences(unit)
    ]
    assert quoted and any(quoted), text


async def test_an_off_topic_question_is_refused_with_its_label(client: CitelineClient) -> None:
    answer = await asyncio.wait_for(
        request(client, "citeline/ask", {"question": "How long should I boil an egg?"}),
        ASK_TIMEOUT,
    )
    assert (answer["grade"], answer["refused"], answer["citations"]) == ("refused", True, [])
    assert answer["grade_label"] == LABELS["en"]["refused"]


async def test_a_question_the_first_section_answers_whole_cites_only_that_section(
    client: CitelineClient,
) -> None:
    # The Hover and content-addressed sections score fairly on its words, but they
    # add nothing the index section lacks (extractive.joins_from_another_block).
    answer = await asyncio.wait_for(
        request(client, "citeline/ask", {"question": "Where does Citeline store its index?"}),
        ASK_TIMEOUT,
    )
    cited = {(c["path"], c["section"].split(" > ")[-1]) for c in answer["citations"]}
    assert cited == {("getting-started.md", "Where the index lives")}, answer["answer"]
    assert ".citeline/" in answer["answer"]


# Chinese questions whose section answers them whole: the FAQ's other sections share
# a bigram or two of each (文件 of 文件夹, 格式 of "GGUF 格式") and add nothing
# (other_blocks.joins_from_another_block, the CJK models' heading share).
ZH_WHOLE = {
    "它支持哪些文件格式？": ("支持哪些文件格式？", ".rst"),
    "如何更换嵌入模型？": ("如何更换嵌入模型？", "citeline.toml"),
}


@pytest.mark.parametrize("question", list(ZH_WHOLE))
async def test_a_chinese_question_its_section_answers_whole_cites_only_that_section(
    client: CitelineClient, question: str
) -> None:
    section, fact = ZH_WHOLE[question]
    answer = await asyncio.wait_for(
        request(client, "citeline/ask", {"question": question}), ASK_TIMEOUT
    )
    cited = {(c["path"], c["section"].split(" > ")[-1]) for c in answer["citations"]}
    assert cited == {("zh/常见问题.md", section)}, answer["answer"]
    assert fact in answer["answer"] and answer["grade"] == "answer", answer["answer"]
