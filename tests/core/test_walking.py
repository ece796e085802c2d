import os
from collections.abc import Sequence
from pathlib import Path

from citeline.core.walking import DocumentFilter


def supported(name: str) -> bool:
    return Path(name).suffix in {".md", ".txt", ".pdf"}


def write(root: Path, rel: str, text: str = "x") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def found(root: Path, index_dir: Path | None = None) -> list[str]:
    return [rel for rel, _ in DocumentFilter(root, index_dir, supported).walk()]


def test_skips_hidden_unsupported_and_index_folder(tmp_path: Path) -> None:
    for rel in ["a.md", "sub/b.txt", ".hidden/c.md", ".d.md", "e.png", "idx/f.md", "sub/.git/g.md"]:
        write(tmp_path, rel)
    assert found(tmp_path, tmp_path / "idx") == ["a.md", "sub/b.txt"]


IGNORING_TREE = [
    "keep.md",
    "drafts/one.md",
    "notes/build/out.md",
    "notes/keep.txt",
    "notes/secret.md",
    "logs/x.txt",
    "logs/important.txt",
    "deep/a/b/tmp.md",
    "root-only.md",
    "sub/root-only.md",
]


def ignoring_tree(root: Path, extra: Sequence[str] = ()) -> None:
    """IGNORING_TREE (and ``extra``) with .gitignore and .citelineignore files in it."""
    for rel in [*IGNORING_TREE, *extra]:
        write(root, rel)
    write(
        root,
        ".gitignore",
        "drafts/\nbuild\n# comment\nlogs/*\n!logs/important.txt\n/root-only.md\n",
    )
    write(root, ".citelineignore", "**/tmp.md\n")
    write(root, "notes/.gitignore", "secret.md\n")


def test_gitignore_and_citelineignore_rules(tmp_path: Path) -> None:
    ignoring_tree(tmp_path)
    assert found(tmp_path) == [
        "keep.md",
        "logs/important.txt",
        "notes/keep.txt",
        "sub/root-only.md",
    ]


def test_symlinks_inside_followed_outside_not(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    outside = tmp_path / "outside"
    write(docs, "real/a.md")
    write(outside, "secret.md")
    os.symlink(docs / "real", docs / "alias")
    os.symlink(outside, docs / "escape")
    os.symlink(outside / "secret.md", docs / "escape.md")
    os.symlink(docs, docs / "real" / "loop")  # a cycle must not hang the walk
    result = found(docs)
    assert "real/a.md" in result
    assert not any("secret" in r for r in result)
    assert len(result) == len(set(result)) <= 3


def test_one_path_is_judged_as_the_walk_would_without_walking(tmp_path: Path) -> None:
    paths = [*IGNORING_TREE, ".hidden/c.md", "idx/f.md", "e.png"]
    ignoring_tree(tmp_path, extra=paths[len(IGNORING_TREE) :])
    documents = DocumentFilter(tmp_path, tmp_path / "idx", supported)
    walked = {rel for rel, _ in documents.walk()}
    for rel in [*paths, "missing.md", "notes/gone.md"]:
        assert documents.check(rel) is (rel in walked), rel
    assert not documents.candidate("e.png") and not documents.candidate("idx/f.md")
    assert documents.visible("notes/keep.txt") and not documents.visible(".hidden/c.md")


def test_a_path_through_a_symlinked_folder_needs_a_walk(tmp_path: Path) -> None:
    write(tmp_path, "real/a.md")
    os.symlink(tmp_path / "real", tmp_path / "alias")
    documents = DocumentFilter(tmp_path, None, supported)
    assert documents.check("real/a.md") is True
    assert documents.check("alias/a.md") is None


def test_entries_are_the_walk_s_documents_with_their_stat(tmp_path: Path) -> None:
    for rel in ["a.md", "sub/b.txt", ".d.md", "e.png"]:
        write(tmp_path, rel, "hello")
    documents = DocumentFilter(tmp_path, None, supported)
    entries = list(documents.entries())
    assert [(rel, Path(e.path)) for rel, e in entries] == list(documents.walk())
    assert [e.stat().st_size for _, e in entries] == [5, 5]
