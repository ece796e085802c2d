"""The pygls upgrade canary: ``lsp/protocol.py`` overrides and calls pygls internals
(private methods and attributes of ``LanguageServerProtocol`` and its bases), which a
pygls release can change without notice.  This test records the source of each one as
the pinned pygls has it, and fails loudly, naming what changed, when another pygls
is installed whose internals differ, so a bump of the bound in ``pyproject.toml`` and
``constraints.txt`` is a decision made after reading those changes, not a surprise in
a user's fresh install.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.version import Version
from pygls.protocol import LanguageServerProtocol

from citeline.lsp import protocol
from citeline.lsp.protocol import CitelineProtocol
from conftest import REPO

#: pygls's internals as pygls 2.1.1 has them: name -> sha256 (first 16) of its source.
#: After reviewing ``lsp/protocol.py`` against a new pygls, update these and the bound.
TESTED_PYGLS = "2.1.1"
PYGLS_INTERNALS = {
    "__init__": "6a96fc574b528115",
    "_execute_handler": "d08c9ac9995fc571",
    "_get_handler": "ae85700c07339389",
    "_handle_cancel_notification": "fa7c59a911cd13fc",
    "_handle_notification": "d116395477c57456",
    "_handle_request": "74d28ad48dd25dbf",
    "_send_data": "40e0a5bb70951777",
    "_send_handler_result": "38d95833f8826cde",
    "_send_response": "b799bb966ca7ebb1",
    "get_message_type": "37a0eaf51a15b8bb",
    "handle_message": "d46f22474082c0cf",
    "lsp_exit": "229d16e062e3b9d4",
    "lsp_notebook_document__did_change": "93d6ae63e2b4aab2",
    "lsp_text_document__did_change": "81a0591b8fdf9793",
    "structure_message": "ac66b961a32acb07",
}
#: Attributes of a pygls protocol that ``lsp/protocol.py`` reads or resets.
PYGLS_ATTRIBUTES = (
    "_converter",
    "_ctx_msg_id",
    "_request_futures",
    "_result_types",
    "_server",
    "_shutdown",
    "fm",
    "msg_id",
)


def pygls_source(name: str) -> str:
    """The source of ``name`` in the nearest pygls class above CitelineProtocol."""
    for cls in CitelineProtocol.__mro__[1:]:
        if name in vars(cls):
            member = vars(cls)[name]
            return inspect.getsource(getattr(member, "__func__", member))
    raise AssertionError(f"pygls no longer defines {name}, which lsp/protocol.py relies on")


def source_hash(name: str) -> str:
    return hashlib.sha256(pygls_source(name).encode()).hexdigest()[:16]


def test_every_pygls_internal_protocol_py_touches_is_recorded() -> None:
    source = inspect.getsource(protocol)
    used = set(re.findall(r"(?:self|super\(\))\.(\w+)", source))
    pygls_names = {name for cls in CitelineProtocol.__mro__[1:] for name in vars(cls)}
    overridden = {
        name
        for name in vars(CitelineProtocol)
        if (name in pygls_names and not name.startswith("__")) or name == "__init__"
    }
    methods = {name for name in used & pygls_names if callable(getattr(CitelineProtocol, name))}
    assert overridden | methods == set(PYGLS_INTERNALS), (
        "lsp/protocol.py now touches other pygls internals: record them in PYGLS_INTERNALS"
    )


def test_pygls_internals_are_those_the_overrides_were_written_against() -> None:
    changed = [name for name, digest in PYGLS_INTERNALS.items() if source_hash(name) != digest]
    assert not changed, (
        f"pygls {metadata.version('pygls')} changed internals that citeline/lsp/protocol.py"
        f" overrides or calls (written against pygls {TESTED_PYGLS}): {', '.join(changed)}."
        " Review protocol.py against the new code, then update PYGLS_INTERNALS here and the"
        " pygls bound in pyproject.toml and constraints.txt."
    )


def test_pygls_attributes_protocol_py_reads_still_exist() -> None:
    from pygls.lsp.server import LanguageServer

    from citeline.app import ModelPool
    from citeline.lsp.server import build_server

    server = build_server(backends=ModelPool())
    assert isinstance(server, LanguageServer)
    instance = server.protocol
    assert isinstance(instance, CitelineProtocol) and isinstance(instance, LanguageServerProtocol)
    missing = [name for name in PYGLS_ATTRIBUTES if not hasattr(instance, name)]
    assert not missing, f"pygls no longer sets {', '.join(missing)} on its protocol"


def test_the_installed_pygls_is_within_the_declared_and_pinned_bounds() -> None:
    installed = Version(metadata.version("pygls"))
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    declared = next(
        Requirement(r) for r in project["dependencies"] if Requirement(r).name == "pygls"
    )
    upper = [s for s in declared.specifier if s.operator in ("<", "<=", "~=", "==")]
    assert upper, "pyproject.toml declares pygls without an upper bound"
    assert installed in declared.specifier
    pins = (REPO / "constraints.txt").read_text("utf-8").splitlines()
    assert f"pygls=={installed}" in pins, "constraints.txt does not pin the pygls being tested"
