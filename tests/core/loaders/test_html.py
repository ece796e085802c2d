"""HTML loading: title, chrome removal, headings, main/article, line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.core.documents import LoadError, SourceDocument
from citeline.core.loaders import load_document


def _load(tmp_path: Path, name: str, text: str) -> SourceDocument:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return load_document(path, name)


def _spans(doc: SourceDocument) -> list[tuple[tuple[str, ...], int | None, int | None, str]]:
    return [(b.heading_path, b.start_line, b.end_line, b.text) for b in doc.blocks]


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <title>Proxy   Setup &amp; Tips</title>
  <meta name="description" content="How to set a proxy">
  <style>p { color: red }</style>
  <script>var notText = "<p>fake</p>";</script>
</head>
<body>
<header><a href="/">Site name</a></header>
<nav><ul><li>Home</li><li>Docs</li></ul></nav>
<h1>Proxies</h1>
<p>Set <code>HTTP_PROXY</code> before
   running the <em>installer</em>&nbsp;&mdash; always.</p>
<div hidden>secret hidden text</div>
<span aria-hidden="true">decorative</span>
<h2>Corporate networks</h2>
<ul>
  <li>Ask IT for the PAC file.</li>
  <li>Check &lt;no_proxy&gt;.</li>
</ul>
<h3>Certificates</h3>
<p>Import the root CA.</p>
<h2>Home</h2>
<p>Nothing to do.</p>
<noscript>Enable JS</noscript>
<button>Click me</button>
<form><label>Search</label><input name="q"></form>
<aside>Related links</aside>
<footer>Copyright 2024</footer>
</body>
</html>
"""


def test_title_chrome_headings_and_lines(tmp_path: Path) -> None:
    doc = _load(tmp_path, "proxy.html", PAGE)
    assert doc.kind == "html"
    assert doc.title == "Proxy Setup & Tips"
    assert doc.title_from_content is True
    assert dict(doc.metadata) == {"lang": "en", "description": "How to set a proxy"}
    assert _spans(doc) == [
        (
            ("Proxies",),
            13,
            14,
            "Set HTTP_PROXY before\nrunning the installer — always.",
        ),
        (("Proxies", "Corporate networks"), 19, 19, "Ask IT for the PAC file."),
        (("Proxies", "Corporate networks"), 20, 20, "Check <no_proxy>."),
        (("Proxies", "Corporate networks", "Certificates"), 23, 23, "Import the root CA."),
        (("Proxies", "Home"), 25, 25, "Nothing to do."),
    ]
    text = " ".join(b.text for b in doc.blocks)
    for chrome in ("Site name", "Docs", "secret", "decorative", "Enable JS", "Click me"):
        assert chrome not in text
    for chrome in ("Search", "Related", "Copyright", "fake", "color"):
        assert chrome not in text


def test_offsets_map_to_source_lines(tmp_path: Path) -> None:
    source = '<p>alpha\n<a\n  href="x">beta</a>\n\ngamma</p>\n'
    doc = _load(tmp_path, "p.html", source)
    assert _spans(doc) == [((), 1, 5, "alpha\n\nbeta\n\ngamma")]
    block = doc.blocks[0]
    assert block.start_line is not None
    lines = source.split("\n")
    for word in ("alpha", "beta", "gamma"):
        offset = block.text.index(word)
        line = block.start_line + block.text[:offset].count("\n")
        assert word in lines[line - 1]


def test_main_content_is_preferred(tmp_path: Path) -> None:
    source = (
        "<body>\n"  # 1
        "<div class='banner'><h1>Site</h1><p>Sign up now</p></div>\n"  # 2
        "<main>\n"  # 3
        "<article>\n"  # 4
        "<header><h1>Release 2.0</h1></header>\n"  # 5
        "<p>What changed.</p>\n"  # 6
        "<footer>Tags: release</footer>\n"  # 7
        "</article>\n"  # 8
        "</main>\n"  # 9
        "<div><p>Unrelated sidebar text</p></div>\n"  # 10
        "</body>\n"
    )
    doc = _load(tmp_path, "release.html", source)
    assert doc.title == "Release 2.0"
    assert _spans(doc) == [(("Release 2.0",), 6, 6, "What changed.")]


def test_tables_pre_and_title_fallback(tmp_path: Path) -> None:
    source = (
        "<h2>Ports</h2>\n"  # 1
        "<table>\n"  # 2
        "<tr><th>Service</th><th>Port</th></tr>\n"  # 3
        "<tr><td>postgres</td><td>5432</td></tr>\n"  # 4
        "</table>\n"  # 5
        "<pre><code>\n"  # 6
        "    listen_addresses = '*'\n"  # 7
        "      port = 5432\n"  # 8
        "</code></pre>\n"  # 9
        "<img src='a.png' alt='network diagram'>\n"  # 10
    )
    doc = _load(tmp_path, "ports.html", source)
    assert doc.title == "Ports"
    assert _spans(doc) == [
        (("Ports",), 3, 3, "Service Port"),
        (("Ports",), 4, 4, "postgres 5432"),
        (("Ports",), 7, 8, "listen_addresses = '*'\n  port = 5432"),
        (("Ports",), 10, 10, "network diagram"),
    ]


def test_title_falls_back_to_stem(tmp_path: Path) -> None:
    doc = _load(tmp_path, "plain-page.htm", "<p>Just text &#x41;&#66;C</p>")
    assert doc.title == "plain-page"
    assert doc.title_from_content is False
    assert _spans(doc) == [((), 1, 1, "Just text ABC")]


def test_crlf_html_lines(tmp_path: Path) -> None:
    doc = _load(tmp_path, "w.html", "<h1>T</h1>\r\n<p>one\r\ntwo</p>\r\n")
    assert _spans(doc) == [(("T",), 2, 3, "one\ntwo")]


def test_binary_html_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "blob.html"
    path.write_bytes(b"<html>\x00\x01\x02\x03" * 50)
    with pytest.raises(LoadError, match=r"^looks like a binary file, not HTML$"):
        load_document(path, "blob.html")


def test_unclosed_title_and_unknown_marked_section(tmp_path: Path) -> None:
    source = "<title>Broken title\n<body>\n<![if !IE]><![foo bar]>\n<p>Still read.</p>\n"
    doc = _load(tmp_path, "old.html", source)
    assert doc.title == "Broken title"
    assert _spans(doc) == [((), 4, 4, "Still read.")]
