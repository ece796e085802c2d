"""Markdown / MDX loading: front matter, MDX statements, comments, headings, lines."""

from __future__ import annotations

from pathlib import Path

from citeline.core.documents import Block, SourceDocument
from citeline.core.loaders import load_document


def _load(tmp_path: Path, name: str, text: str | bytes) -> SourceDocument:
    path = tmp_path / name
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8", newline="")
    else:
        path.write_bytes(text)
    return load_document(path, f"docs/{name}")


def _spans(doc: SourceDocument) -> list[tuple[tuple[str, ...], int | None, int | None, str]]:
    return [(b.heading_path, b.start_line, b.end_line, b.text) for b in doc.blocks]


def _line_of(block: Block, needle: str) -> int:
    assert block.start_line is not None
    offset = block.text.index(needle)
    return block.start_line + block.text[:offset].count("\n")


def test_front_matter_gives_title_and_metadata_and_keeps_lines(tmp_path: Path) -> None:
    doc = _load(
        tmp_path,
        "guide.md",
        "---\n"
        'title: "Deploy Guide"\n'
        "author: Ada Lovelace  # a comment\n"
        "tags: [ops, 'deploy']\n"
        "aliases:\n"
        "  - dg\n"
        "  - deploy-guide\n"
        "nested:\n"
        "  key: value\n"
        "---\n"
        "\n"
        "First paragraph.\n",
    )
    assert doc.path == "docs/guide.md"
    assert doc.kind == "markdown"
    assert doc.title == "Deploy Guide"
    assert doc.title_from_content is True
    assert dict(doc.metadata) == {
        "title": "Deploy Guide",
        "author": "Ada Lovelace",
        "tags": "ops, deploy",
        "aliases": "dg, deploy-guide",
    }
    assert _spans(doc) == [((), 12, 12, "First paragraph.")]


def test_toml_front_matter(tmp_path: Path) -> None:
    doc = _load(
        tmp_path,
        "post.md",
        '+++\ntitle = "Hugo Post"\ndraft = true\nweight = 3\ntags = ["a", "b"]\n+++\nBody.\n',
    )
    assert doc.title == "Hugo Post"
    assert dict(doc.metadata) == {
        "title": "Hugo Post",
        "draft": "true",
        "weight": "3",
        "tags": "a, b",
    }
    assert _spans(doc) == [((), 7, 7, "Body.")]


def test_mdx_statements_and_jsx_comments_are_dropped_with_exact_lines(tmp_path: Path) -> None:
    source = (
        "import { Callout } from '../components/Callout'\n"  # 1
        "import Diagram from './diagram.mdx'\n"  # 2
        "export const meta = {\n"  # 3
        "  author: 'Ada',\n"  # 4
        "}\n"  # 5
        "\n"  # 6
        "# Setup\n"  # 7
        "\n"  # 8
        "{/* TODO: rewrite\n"  # 9
        "this section */}\n"  # 10
        "\n"  # 11
        "Run the installer {/* inline note */} first.\n"  # 12
        "Then reboot.\n"  # 13
        "\n"  # 14
        "<!-- a hidden\n"  # 15
        "\n"  # 16
        "multi-paragraph comment -->\n"  # 17
        "\n"  # 18
        "export default function Layout() {}\n"  # 19
        "\n"  # 20
        "Final words about pg_hba.conf.\n"  # 21
    )
    doc = _load(tmp_path, "setup.mdx", source)
    assert doc.title == "Setup"
    assert _spans(doc) == [
        (("Setup",), 12, 13, "Run the installer  first.\nThen reboot."),
        (("Setup",), 21, 21, "Final words about pg_hba.conf."),
    ]
    assert _line_of(doc.blocks[0], "reboot") == 13
    assert "import" not in " ".join(b.text for b in doc.blocks)


def test_import_sentence_in_plain_markdown_is_text(tmp_path: Path) -> None:
    doc = _load(tmp_path, "notes.md", "import data from the old system first.\n")
    assert _spans(doc) == [((), 1, 1, "import data from the old system first.")]


def test_image_keeps_alt_text(tmp_path: Path) -> None:
    doc = _load(
        tmp_path,
        "arch.md",
        'See ![the request flow diagram](img/flow.png "Flow") below.\n'
        "And ![logo][brand] too.\n"
        "\n"
        "[brand]: img/logo.png\n",
    )
    assert _spans(doc) == [((), 1, 2, "See the request flow diagram below.\nAnd logo too.")]


def test_atx_and_setext_headings_build_nested_paths(tmp_path: Path) -> None:
    source = (
        "Preface text.\n"  # 1
        "\n"  # 2
        "Guide\n"  # 3
        "=====\n"  # 4
        "\n"  # 5
        "Welcome.\n"  # 6
        "\n"  # 7
        "Install\n"  # 8
        "-------\n"  # 9
        "\n"  # 10
        "Steps:\n"  # 11
        "\n"  # 12
        "1. download\n"  # 13
        "2. unpack\n"  # 14
        "\n"  # 15
        "### Proxies `HTTP_PROXY` *setup*\n"  # 16
        "\n"  # 17
        "> Set the proxy\n"  # 18
        "> before installing.\n"  # 19
        "\n"  # 20
        "## Usage ##\n"  # 21
        "Run it.\n"  # 22
        "# Appendix\n"  # 23
        "Extra.\n"  # 24
    )
    doc = _load(tmp_path, "guide.md", source)
    assert doc.title == "Guide"
    assert _spans(doc) == [
        ((), 1, 1, "Preface text."),
        (("Guide",), 6, 6, "Welcome."),
        (("Guide", "Install"), 11, 11, "Steps:"),
        (("Guide", "Install"), 13, 14, "1. download\n2. unpack"),
        (
            ("Guide", "Install", "Proxies HTTP_PROXY setup"),
            18,
            19,
            "> Set the proxy\n> before installing.",
        ),
        (("Guide", "Usage"), 22, 22, "Run it."),
        (("Appendix",), 24, 24, "Extra."),
    ]


def test_code_fence_is_a_block_and_comments_inside_code_stay(tmp_path: Path) -> None:
    source = (
        "# Postgres\n"  # 1
        "\n"  # 2
        "Edit the file:\n"  # 3
        "\n"  # 4
        "```conf\n"  # 5
        "# pg_hba.conf <!-- not a comment here -->\n"  # 6
        "host all all 0.0.0.0/0 md5\n"  # 7
        "```\n"  # 8
        "\n"  # 9
        "Use `<!-- x -->` in HTML.\n"  # 10
        "\n"  # 11
        "    indented_code()\n"  # 12
    )
    doc = _load(tmp_path, "pg.md", source)
    assert _spans(doc) == [
        (("Postgres",), 3, 3, "Edit the file:"),
        (
            ("Postgres",),
            5,
            8,
            "```conf\n# pg_hba.conf <!-- not a comment here -->\nhost all all 0.0.0.0/0 md5\n```",
        ),
        (("Postgres",), 10, 10, "Use `<!-- x -->` in HTML."),
        (("Postgres",), 12, 12, "    indented_code()"),
    ]


def test_table_is_one_block(tmp_path: Path) -> None:
    doc = _load(tmp_path, "t.md", "| key | value |\n|-----|-------|\n| port | 5432 |\n")
    assert _spans(doc) == [((), 1, 3, "| key | value |\n|-----|-------|\n| port | 5432 |")]


def test_crlf_and_bom_give_the_same_lines_as_lf(tmp_path: Path) -> None:
    lf = "# Title\n\nOne\ntwo\n\n## Sub\n\nThree\n"
    plain = _load(tmp_path, "lf.md", lf)
    crlf = _load(tmp_path, "crlf.md", b"\xef\xbb\xbf" + lf.replace("\n", "\r\n").encode())
    assert _spans(crlf) == _spans(plain)
    assert _spans(crlf) == [
        (("Title",), 3, 4, "One\ntwo"),
        (("Title", "Sub"), 8, 8, "Three"),
    ]
    assert crlf.title == "Title"


def test_title_falls_back_to_file_stem(tmp_path: Path) -> None:
    doc = _load(tmp_path, "release-notes.md", "## Only an h2\n\nText.\n")
    assert doc.title == "release-notes"
    assert doc.title_from_content is False
    assert _spans(doc) == [(("Only an h2",), 3, 3, "Text.")]


def test_raw_html_block_keeps_its_text(tmp_path: Path) -> None:
    doc = _load(
        tmp_path,
        "c.mdx",
        '<Callout type="warning">\nBack up first.\n</Callout>\n\n<div align="center"></div>\n',
    )
    assert _spans(doc) == [((), 2, 2, "Back up first.")]


def test_empty_and_comment_only_documents_have_no_blocks(tmp_path: Path) -> None:
    assert _load(tmp_path, "empty.md", "").blocks == ()
    only = _load(tmp_path, "c.md", "<!-- draft -->\n\n---\n")
    assert only.blocks == ()
    assert only.title == "c"


def test_rule_and_setext_heading_at_top_are_not_front_matter(tmp_path: Path) -> None:
    doc = _load(tmp_path, "rule.md", "---\nJust a heading\n---\n\nBody.\n")
    assert dict(doc.metadata) == {}
    assert doc.title == "rule"
    assert _spans(doc) == [(("Just a heading",), 5, 5, "Body.")]


def test_unclosed_comment_markers_do_not_hide_text(tmp_path: Path) -> None:
    doc = _load(tmp_path, "u.md", "Use {/* as a literal.\n\nAnd <!-- too\n")
    assert _spans(doc) == [((), 1, 1, "Use {/* as a literal."), ((), 3, 3, "And <!-- too")]
