"""The architecture invariants, checked as allow lists: they fail when broken (like
the VS Code client's purity test), and each check is shown failing on a deliberate
violation built in a temporary package.

- per layer, the Citeline packages and the third-party libraries it may import
  (``LAYERS``); nothing else, not even through ``importlib.import_module`` with a
  name the check cannot read;
- what a layer must never reach, through any chain of imports (``NEVER_REACHES``:
  the LSP layer importing ``citeline.app``, which imports every backend, is a
  violation); only ``app.py`` (and the command line that runs it) reaches a backend;
- every implementation of a protocol under ``backends/`` is named in its contract
  test's fixtures, and every protocol of the core has a contract test (or says why not);
- tests mirror modules: each product module has a test module of its own, and each
  test module holds at least one test;
- ARCHITECTURE.md's "Modules over 300 lines" names every module over 300 lines, and
  only those, each with its line count roughly right.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "server" / "citeline"
TESTS = REPO / "tests"

# -- the rules -------------------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    citeline: frozenset[str]  # the Citeline packages (or top-level modules) it may import
    libraries: frozenset[str] = frozenset()  # third-party top-level packages


def layer(citeline: str, libraries: str = "") -> Layer:
    return Layer(frozenset(citeline.split()), frozenset(libraries.split()))


# Each layer is a package or a top-level module of ``citeline`` (``citeline`` itself
# is the package's __init__: the version).  A layer may always import itself.
LAYERS: dict[str, Layer] = {
    # pure: numpy and the three libraries its loaders and terms need
    "citeline.core": layer("", "numpy markdown_it pymupdf snowballstemmer"),
    "citeline.backends": layer("citeline.core", "numpy faiss llama_cpp psycopg"),
    "citeline.models": layer("citeline citeline.cache citeline.core", "numpy gguf safetensors"),
    "citeline.settings": layer("citeline.core citeline.models"),
    # the wire's shapes are what the service's values become as JSON
    "citeline.service": layer("citeline.core citeline.settings citeline.wire", "watchdog"),
    "citeline.wire": layer("citeline.core"),
    # measures the core's own rules on datasets, through the workspace
    "citeline.evaluation": layer("citeline.core citeline.service"),
    "citeline.app": layer(
        "citeline.backends citeline.core citeline.models citeline.service citeline.settings"
    ),
    # front ends: the service and the wire, never the core or a backend
    "citeline.lsp": layer(
        "citeline citeline.cache citeline.service citeline.stdio citeline.wire",
        "pygls lsprotocol cattrs",
    ),
    "citeline.mcp": layer("citeline citeline.service citeline.stdio", "mcp anyio"),
    "citeline.cli": layer(
        "citeline citeline.app citeline.cache citeline.demo citeline.doctor citeline.evaluation"
        " citeline.lsp citeline.mcp citeline.platforms citeline.service citeline.settings"
        " citeline.stdio citeline.wire"
    ),
    "citeline.doctor": layer(
        "citeline citeline.app citeline.models citeline.platforms citeline.service"
        " citeline.settings"
    ),
    "citeline.demo": layer("citeline citeline.cache citeline.service"),
    "citeline": layer(""),
    "citeline.cache": layer(""),
    "citeline.platforms": layer(""),
    "citeline.stdio": layer(""),
}

# What a layer never reaches, through any chain of imports.
BACKENDS = ("citeline.app", "citeline.backends")
FRONT_ENDS = ("citeline.lsp", "citeline.mcp", "citeline.cli")
NEVER_REACHES: dict[str, tuple[str, ...]] = {
    "citeline.core": (*BACKENDS, *FRONT_ENDS, "citeline.service", "citeline.settings"),
    "citeline.service": (*BACKENDS, *FRONT_ENDS),
    "citeline.wire": (*BACKENDS, *FRONT_ENDS, "citeline.service"),
    "citeline.evaluation": (*BACKENDS, *FRONT_ENDS),
    "citeline.lsp": (*BACKENDS, "citeline.mcp", "citeline.cli"),
    "citeline.mcp": (*BACKENDS, "citeline.lsp", "citeline.cli"),
}

# Where a library may be imported within its layer: optional dependencies.
ONLY_IN = {
    "psycopg": "citeline.backends.postgres",  # citeline[team]
    "mcp": "citeline.mcp.server",  # the MCP SDK
}

# Each protocol of the core, and the contract test every implementation runs.
CONTRACTS = {
    "Embedder": "contracts/test_embedder.py",
    "Reranker": "contracts/test_reranker.py",
    "Generator": "contracts/test_generator.py",
    "VectorIndex": "contracts/test_vector_index.py",
    "VectorIndexType": "contracts/test_vector_index.py",
    "KeywordIndex": "contracts/test_keyword_index.py",
    "DocumentIndex": "contracts/test_document_index.py",
    # DocumentIndex's parts: its contract runs each through the whole
    "IndexReader": "contracts/test_document_index.py",
    "IndexRecords": "contracts/test_document_index.py",
    "IndexWriter": "contracts/test_document_index.py",
    "SharedIndex": "contracts/test_document_index.py",
}
# Protocols without a contract of their own, and why.
NO_CONTRACT = {
    # the store part reconcile_identity uses: every DocumentIndex's store implements
    # it, and the DocumentIndex contract runs it (identity changes)
    "IndexMeta": "contracts/test_document_index.py",
    # a thread for a search's keyword half: the service's Worker, no backend's class;
    # test_retrieval runs a search with and without one, test_workers the Worker
    "Beside": "core/test_retrieval.py",
}

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

# -- reading the code ------------------------------------------------------------------


def modules(package: Path = PACKAGE) -> Iterator[tuple[str, Path]]:
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def imports(path: Path, package: Path = PACKAGE) -> set[str]:
    """Every module ``path`` imports, anywhere in it (relative imports resolved, and
    ``importlib.import_module`` with a constant name or one under ``__name__``); a
    name the check cannot read is ``<dynamic>``."""
    here = ".".join(path.relative_to(package.parent).with_suffix("").parts)
    own = here.removesuffix(".__init__") if path.name == "__init__.py" else here
    parent = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = parent.split(".")[: len(parent.split(".")) - node.level + 1]
                base = ".".join(up) + (f".{node.module}" if node.module else "")
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and _is_import_call(node.func) and node.args:
            found.add(_imported_name(node.args[0], own))
    return found


def _is_import_call(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def _imported_name(arg: ast.expr, own: str) -> str:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:  # f"{__name__}.{module}"
        first = arg.values[0]
        if (
            isinstance(first, ast.FormattedValue)
            and isinstance(first.value, ast.Name)
            and first.value.id == "__name__"
        ):
            return own
    return "<dynamic>"


def _layer_of(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else name


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _resolver(paths: dict[str, Path]) -> Callable[[str], str | None]:
    """An imported name → the module it names: the longest module it starts with
    (``from x import y`` names ``x.y`` when that is a module, else ``x``)."""

    def resolve(name: str) -> str | None:
        parts = name.split(".")
        for k in range(len(parts), 0, -1):
            if ".".join(parts[:k]) in paths:
                return ".".join(parts[:k])
        return None

    return resolve


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module → the package's modules it imports."""
    paths = dict(modules(package))
    root = package.name
    resolve = _resolver(paths)
    return {
        name: {r for i in imports(path, package) if i.split(".")[0] == root and (r := resolve(i))}
        - {name}
        for name, path in paths.items()
    }


# -- the checks (each a function of a package, so a test can show it failing) ------------


def layer_violations(package: Path = PACKAGE, layers: dict[str, Layer] = LAYERS) -> list[str]:
    """Imports a layer's allow list does not name (and modules of no layer)."""
    root = package.name
    paths = dict(modules(package))
    resolve = _resolver(paths)
    out = []
    for name, path in paths.items():
        rule = layers.get(_layer_of(name))
        if rule is None:
            out.append(f"{name} belongs to no layer: add it to LAYERS")
            continue
        for imported in sorted(imports(path, package)):
            top = imported.split(".")[0]
            if imported == "<dynamic>":
                out.append(f"{name} imports a module by a name the check cannot read")
            elif top == root:
                target = _layer_of(resolve(imported) or imported)
                if target != _layer_of(name) and target not in rule.citeline:
                    out.append(f"{name} imports {imported}")
            elif top and top not in sys.stdlib_module_names and top != "__future__":
                if top not in rule.libraries:
                    out.append(f"{name} imports {imported}")
                elif top in ONLY_IN and not _within(name, ONLY_IN[top]):
                    out.append(f"{name} imports {top} (only {ONLY_IN[top]} may)")
    return out


def reach_violations(
    package: Path = PACKAGE, never: dict[str, tuple[str, ...]] = NEVER_REACHES
) -> list[str]:
    """A module reaching, through any chain of imports, what its layer never reaches."""
    graph = import_graph(package)
    out = []
    for name in sorted(graph):
        forbidden = never.get(_layer_of(name), ())
        if not forbidden:
            continue
        seen: dict[str, str | None] = {name: None}
        stack = [name]
        while stack:
            current = stack.pop()
            for nxt in sorted(graph.get(current, ())):
                if nxt in seen:
                    continue
                seen[nxt] = current
                if any(_within(nxt, f) for f in forbidden):
                    chain = [nxt]
                    while (step := seen[chain[-1]]) is not None:
                        chain.append(step)
                    out.append(" → ".join(reversed(chain)))
                    continue
                stack.append(nxt)
    return out


def _class_members(node: ast.ClassDef) -> set[str]:
    """Its public methods, properties and attributes (declared, or set in __init__)."""
    members = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(item.name)
            if item.name == "__init__":
                for sub in ast.walk(item):
                    targets = sub.targets if isinstance(sub, ast.Assign) else []
                    if isinstance(sub, ast.AnnAssign):
                        targets = [sub.target]
                    members.update(
                        t.attr
                        for t in targets
                        if isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                    )
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            members.add(item.target.id)
        elif isinstance(item, ast.Assign):
            members.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return {m for m in members if not m.startswith("_")}


def _classes(package: Path) -> dict[str, ast.ClassDef]:
    return {
        node.name: node
        for _, path in modules(package)
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.ClassDef)
    }


def protocols(core: Path) -> dict[str, set[str]]:
    """Each ``Protocol`` class of the core and the members an implementation has
    (with those of the protocols it extends: ``DocumentIndex`` is its parts)."""
    classes = _classes(core)

    def members(node: ast.ClassDef) -> set[str]:
        bases = [b.id for b in node.bases if isinstance(b, ast.Name) and b.id in classes]
        return _class_members(node).union(*(members(classes[b]) for b in bases))

    return {
        name: members(node)
        for name, node in classes.items()
        if any(isinstance(b, ast.Name) and b.id == "Protocol" for b in node.bases)
    }


def implementations(backends: Path, protocol: set[str]) -> list[str]:
    """The classes under ``backends`` with every member of ``protocol`` (their own or
    inherited from a class of ``backends``, named ``Base`` or ``module.Base``)."""
    classes = _classes(backends)

    def members(name: str) -> set[str]:
        node = classes[name]
        bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
        inherited = [members(b) for b in bases if b in classes]
        return _class_members(node).union(*inherited)

    return sorted(name for name in classes if protocol and protocol <= members(name))


def contract_violations(core: Path, backends: Path, tests: Path) -> list[str]:
    """Protocols without a contract test, implementations their contract does not run."""
    out = []
    for name, members in sorted(protocols(core).items()):
        if name in NO_CONTRACT:
            continue
        contract = CONTRACTS.get(name)
        if contract is None or not (tests / contract).is_file():
            out.append(f"protocol {name} has no contract test (CONTRACTS)")
            continue
        text = (tests / contract).read_text("utf-8")
        for impl in implementations(backends, members):
            if not re.search(rf"\b{impl}\b", text):
                out.append(f"{impl} implements {name}: {contract} does not run it")
    return out


def _is_test(node: ast.stmt) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
        "test"
    )


def _has_a_test(path: Path) -> bool:
    """Whether the module defines a test function (or a ``Test`` class with one)."""
    return any(
        _is_test(node)
        or (
            isinstance(node, ast.ClassDef)
            and node.name.startswith("Test")
            and any(_is_test(m) for m in node.body)
        )
        for node in ast.parse(path.read_text("utf-8")).body
    )


def mirror_violations(package: Path = PACKAGE, tests: Path = TESTS) -> list[str]:
    """Product modules without their test module, and test modules without a test."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if path.name in ("__init__.py", "__main__.py"):
            continue
        expected = tests / (TESTED_ELSEWHERE.get(rel) or Path(rel).parent / f"test_{path.name}")
        if not expected.is_file():
            out.append(f"{rel}: {expected.relative_to(tests)} is missing")
    for path in sorted(tests.rglob("test_*.py")):
        if not _has_a_test(path):
            out.append(f"{path.relative_to(tests)} holds no test")
    return out


LONG = 300  # a module over this many lines is named, with why, in ARCHITECTURE.md
LONG_SECTION = "## Modules over 300 lines"
COUNT_SLACK = 0.2  # how far "~N" may be from the module's line count


def listed_long_modules(doc: str) -> dict[str, list[int]]:
    """The modules the section names (path under the package → the ``~N`` counts of
    its bullet). A bare name (``markdown.py``) is in the folder of the bullet's
    previous path; ``~340-470`` gives the range's ends."""
    body = doc.split(LONG_SECTION, 1)[1].split("\n## ", 1)[0]
    bullets = re.split(r"^- ", body, flags=re.M)[1:]
    out: dict[str, list[int]] = {}
    for bullet in bullets:
        head = bullet.split("):", 1)[0]  # the names and counts, not the why
        counts = [int(n) for n in re.findall(r"(?:~|-)(\d{3,})", head)]
        folder = ""
        for name in re.findall(r"`([\w/]+\.py)`", head):
            if "/" in name:
                folder = name.rpartition("/")[0]
            elif folder:
                name = f"{folder}/{name}"
            out[name] = counts
    return out


def long_module_violations(doc: str, package: Path = PACKAGE) -> list[str]:
    """Modules over :data:`LONG` lines the section leaves out, names it lists that are
    not (or are no modules), and counts that are off by more than :data:`COUNT_SLACK`."""
    if LONG_SECTION not in doc:
        return [f"no section {LONG_SECTION!r}"]
    lines = {
        path.relative_to(package).as_posix(): len(path.read_text("utf-8").splitlines())
        for path in sorted(package.rglob("*.py"))
    }
    listed = listed_long_modules(doc)
    out = [
        f"{rel} ({n} lines) is over {LONG} lines: name it in {LONG_SECTION!r}"
        for rel, n in lines.items()
        if n > LONG and rel not in listed
    ]
    for rel, counts in sorted(listed.items()):
        n = lines.get(rel)
        if n is None:
            out.append(f"{rel} is listed but is no module")
        elif n <= LONG:
            out.append(f"{rel} ({n} lines) is listed but not over {LONG} lines")
        elif counts and not any(abs(n - c) <= COUNT_SLACK * n for c in counts):
            out.append(f"{rel} has {n} lines; the section says ~{counts}")
    return out


# -- on the real tree ------------------------------------------------------------------------


def test_each_layer_imports_only_what_its_allow_list_names() -> None:
    assert layer_violations() == []


def test_no_layer_reaches_what_it_must_not_through_any_chain() -> None:
    assert reach_violations() == []


def test_every_backend_implementation_runs_its_protocols_contract() -> None:
    assert contract_violations(PACKAGE / "core", PACKAGE / "backends", TESTS) == []
    found = implementations(PACKAGE / "backends", protocols(PACKAGE / "core")["VectorIndex"])
    assert found == ["FaissVectorIndex"]  # the check finds implementations


def test_every_module_has_a_test_module_holding_tests() -> None:
    assert mirror_violations() == []


def test_architecture_md_names_every_module_over_300_lines() -> None:
    doc = (REPO / "ARCHITECTURE.md").read_text("utf-8")
    assert long_module_violations(doc) == []
    listed = listed_long_modules(doc)  # the bullets' shorthand is read
    assert "core/loaders/markdown.py" in listed and "backends/postings/index.py" in listed


# -- each check, failing on a deliberate violation -------------------------------------------


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return root


def tmp_package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package named ``citeline`` in ``tmp_path`` with ``files`` (each layer a package)."""
    base = {"citeline/__init__.py": "", "citeline/core/__init__.py": ""}
    return write(tmp_path, {**base, **files}) / "citeline"


def test_an_import_off_the_allow_list_fails(tmp_path: Path) -> None:
    package = tmp_package(
        tmp_path,
        {
            "citeline/core/rank.py": "import torch\nfrom citeline.cache import cache_dir\n",
            "citeline/core/load.py": "import importlib\nimportlib.import_module(name)\n",
            "citeline/core/ok.py": "import numpy\nimport json\nfrom . import rank\n",
            "citeline/cache.py": "",
            "citeline/extra.py": "",
        },
    )
    assert layer_violations(package) == [
        "citeline.core.load imports a module by a name the check cannot read",
        "citeline.core.rank imports citeline.cache",
        "citeline.core.rank imports citeline.cache.cache_dir",
        "citeline.core.rank imports torch",
        "citeline.extra belongs to no layer: add it to LAYERS",
    ]


def test_an_optional_library_outside_its_module_fails(tmp_path: Path) -> None:
    package = tmp_package(
        tmp_path,
        {
            "citeline/backends/__init__.py": "",
            "citeline/backends/embedded.py": "import psycopg\n",
            "citeline/backends/postgres/__init__.py": "import psycopg\n",
        },
    )
    assert layer_violations(package) == [
        "citeline.backends.embedded imports psycopg (only citeline.backends.postgres may)"
    ]


def test_a_chain_to_a_backend_fails(tmp_path: Path) -> None:
    package = tmp_package(
        tmp_path,
        {
            "citeline/lsp/__init__.py": "",
            "citeline/lsp/server.py": "from citeline.app import ModelPool\n",
            "citeline/app.py": "from citeline.backends.faiss import FaissVectorIndex\n",
            "citeline/backends/__init__.py": "",
            "citeline/backends/faiss.py": "",
        },
    )
    assert reach_violations(package) == ["citeline.lsp.server → citeline.app"]
    # the LSP layer's allow list does not name the composition root either
    assert "citeline.lsp.server imports citeline.app" in layer_violations(package)


def test_a_longer_chain_is_named_whole(tmp_path: Path) -> None:
    package = tmp_package(
        tmp_path,
        {
            "citeline/service/__init__.py": "",
            "citeline/service/workspace.py": "from citeline.core import index\n",
            "citeline/core/index.py": "from citeline.evaluation import runner\n",
            "citeline/evaluation/__init__.py": "",
            "citeline/evaluation/runner.py": "import citeline.lsp.convert\n",
            "citeline/lsp/__init__.py": "",
            "citeline/lsp/convert.py": "",
        },
    )
    found = reach_violations(package)
    assert (
        "citeline.service.workspace → citeline.core.index → citeline.evaluation.runner"
        " → citeline.lsp.convert" in found
    )
    assert "citeline.evaluation.runner → citeline.lsp.convert" in found


def test_an_implementation_its_contract_does_not_run_fails(tmp_path: Path) -> None:
    core = write(
        tmp_path / "citeline" / "core",
        {
            "__init__.py": "",
            "vectors.py": (
                "from typing import Protocol\n"
                "class VectorIndex(Protocol):\n"
                "    dimension: int\n"
                "    def add(self, ids, vectors) -> None: ...\n"
                "    def search(self, query, k): ...\n"
                "class Sorter(Protocol):\n"
                "    def sort(self, items): ...\n"
            ),
        },
    )
    backends = write(
        tmp_path / "citeline" / "backends",
        {
            "__init__.py": "",
            "hnsw.py": (
                "class Base:\n"
                "    dimension: int\n"
                "    def add(self, ids, vectors): ...\n"
                "class HnswIndex(Base):\n"
                "    def search(self, query, k): ...\n"
                "class Helper:\n"
                "    def add(self, ids, vectors): ...\n"
            ),
        },
    )
    tests = write(
        tmp_path / "tests", {"contracts/test_vector_index.py": "TYPES = {'flat': FlatIndex}\n"}
    )
    assert contract_violations(core, backends, tests) == [
        "protocol Sorter has no contract test (CONTRACTS)",
        "HnswIndex implements VectorIndex: contracts/test_vector_index.py does not run it",
    ]
    write(tests, {"contracts/test_vector_index.py": "TYPES = {'hnsw': HnswIndex}\n"})
    assert contract_violations(core, backends, tests) == [
        "protocol Sorter has no contract test (CONTRACTS)"
    ]


def test_a_missing_or_empty_test_module_fails(tmp_path: Path) -> None:
    package = tmp_package(
        tmp_path,
        {
            "citeline/core/chunking.py": "",
            "citeline/core/ranking.py": "",
            "citeline/core/keys.py": "",
        },
    )
    tests = write(
        tmp_path / "tests",
        {
            "core/test_chunking.py": "import pytest\n\ndef helper():\n    pass\n",
            "core/test_keys.py": "class TestKeys:\n    def test_sorted(self):\n        assert 1\n",
            "core/test_orphan.py": '"""Nothing here yet."""\n',
        },
    )
    assert mirror_violations(package, tests) == [
        "core/ranking.py: core/test_ranking.py is missing",
        "core/test_chunking.py holds no test",
        "core/test_orphan.py holds no test",
    ]


def test_a_long_module_the_section_leaves_out_fails(tmp_path: Path) -> None:
    package = tmp_package(
        tmp_path,
        {
            "citeline/core/big.py": "x = 1\n" * 320,
            "citeline/core/loaders/a.py": "x = 1\n" * 350,
            "citeline/core/loaders/b.py": "x = 1\n" * 450,
            "citeline/core/small.py": "x = 1\n" * 20,
        },
    )
    doc = f"# A\n\n{LONG_SECTION}\n\n- `core/loaders/a.py`, `b.py` (~340-470): parsers.\n"
    assert long_module_violations(doc, package) == [
        f"core/big.py (320 lines) is over 300 lines: name it in {LONG_SECTION!r}"
    ]
    doc += "- `core/big.py` (~320): one thing.\n- `core/small.py` (~20): not long.\n\n## Next\n"
    assert long_module_violations(doc, package) == [
        "core/small.py (20 lines) is listed but not over 300 lines"
    ]
    doc = doc.replace("(~320)", "(~900)").replace("- `core/small.py` (~20): not long.\n", "")
    assert long_module_violations(doc, package) == [
        "core/big.py has 320 lines; the section says ~[900]"
    ]
