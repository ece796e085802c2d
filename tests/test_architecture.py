"""The architecture invariants, checked: they fail when broken (like the VS Code
client's purity test).

- ``citeline.core`` is pure Python and numpy: no LSP, no llama.cpp, no FAISS, no
  SQLite, no file watching, and nothing of Citeline outside the core;
- only the composition root (``citeline.app``) names a concrete backend;
- the service knows nothing of LSP or MCP, the LSP layer and the MCP server nothing
  of the core (they go through the service); only the CLI prints (ruff T201);
- tests mirror modules: each product module has a test module of its own.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "server" / "citeline"


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it (relative imports resolved)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def offending(prefix: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{name} imports {imported}"
        for name, path in modules()
        if name == prefix or name.startswith(prefix + ".")
        for imported in sorted(imports(path))
        if any(imported == f or imported.startswith(f + ".") for f in forbidden)
    ]


def test_the_core_is_pure_python_and_numpy() -> None:
    third_party = (
        "pygls",
        "lsprotocol",
        "llama_cpp",
        "faiss",
        "sqlite3",
        "psycopg",
        "watchdog",
        "cattrs",
    )
    citeline_outside_core = (
        "citeline.app",
        "citeline.backends",
        "citeline.cli",
        "citeline.evaluation",
        "citeline.lsp",
        "citeline.mcp",
        "citeline.models",
        "citeline.service",
        "citeline.settings",
    )
    assert offending("citeline.core", third_party + citeline_outside_core) == []


def test_only_the_composition_root_names_a_concrete_backend() -> None:
    users = {
        name
        for name, path in modules()
        if not name.startswith("citeline.backends")
        and any(
            i == "citeline.backends" or i.startswith("citeline.backends.") for i in imports(path)
        )
    }
    assert users == {"citeline.app"}
    assert offending("citeline.core", ("llama_cpp", "faiss", "sqlite3")) == []
    # the PostgreSQL driver is an optional dependency (citeline[team]): only its backend
    drivers = {
        name for name, path in modules() if any(i.startswith("psycopg") for i in imports(path))
    }
    assert {n for n in drivers if not n.startswith("citeline.backends.postgres")} == set()


def test_the_service_knows_no_lsp_and_the_lsp_layer_no_core() -> None:
    front_ends = ("pygls", "lsprotocol", "mcp", "citeline.lsp", "citeline.mcp", "citeline.cli")
    assert offending("citeline.service", front_ends) == []
    # handlers translate: retrieval, ingest, indexes and answering are the service's
    assert offending("citeline.lsp", ("citeline.core", "citeline.backends", "citeline.mcp")) == []
    # the MCP server too, beside the LSP layer and knowing nothing of it
    assert offending("citeline.mcp", ("citeline.core", "citeline.backends", "citeline.lsp")) == []
    # the command line parses and prints; the service does the rest
    assert offending("citeline.cli", ("citeline.core", "citeline.backends")) == []
    # only the MCP front end uses the MCP SDK
    users = {
        name for name, path in modules() if any(i.split(".")[0] == "mcp" for i in imports(path))
    }
    assert users == {"citeline.mcp.server"}


# Modules whose tests live elsewhere, and why.
TESTED_ELSEWHERE = {
    # protocols: one contract test each, run against every implementation
    "core/embedding.py": "contracts/test_embedder.py",
    "core/generation.py": "contracts/test_generator.py",
    "core/reranking.py": "contracts/test_reranker.py",
    "core/vectors.py": "contracts/test_vector_index.py",
    "service/events.py": "service/test_scheduler.py",  # protocols the tests implement
    # one exception class; the vocabulary that uses it is tested
    "core/errors.py": "service/test_errors.py",
    # a list of questions (data), used by the evaluation report
    "evaluation/off_topic.py": "evaluation/test_report.py",
}


def test_every_module_has_a_test_module_of_its_own() -> None:
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if path.name in ("__init__.py", "__main__.py") or path.name == "py.typed":
            continue
        if rel in TESTED_ELSEWHERE:
            expected = [REPO / "tests" / TESTED_ELSEWHERE[rel]]
        else:
            expected = [REPO / "tests" / Path(rel).parent / f"test_{path.name}"]
        if not all(e.is_file() for e in expected):
            missing.append(f"{rel}: {', '.join(str(e.relative_to(REPO)) for e in expected)}")
    assert missing == []
