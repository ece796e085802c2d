"""The wire contract between ``citeline serve`` and its clients, in one place.

- :data:`METHODS`: every custom request the server answers, with its params and
  result types; :data:`COMMANDS`: the ``workspace/executeCommand`` twins, made from it.
- The params and results as ``TypedDict`` s whose keys are the JSON names.
- The answer's vocabulary (``AnswerMode``, ``Grade``, ``Fallback``, ``Refusal``:
  the core's enums, each value its JSON) and ``LocalCopy``.
- The fields a hit, a citation and a folder's status have before they are located
  are their producers' (``documents.HitJson``, ``results.CitationJson``,
  :class:`FolderStatusFields`): each shape is built in one place, which the command
  line and MCP print and the language server locates (``lsp/convert.py``).
- The human texts clients show as they are sent (``mode_label``, ``fallback_note``,
  ``local_copy_note``; ``grade_label`` comes with the core's answer, in the
  question's language): clients show them instead of rebuilding them.

docs/lsp-extensions.md documents it and editor-clients/vscode/src/protocol.ts
mirrors it; ``tests/test_wire.py`` holds both (and the Neovim and Emacs clients'
method names) to this module, and the docs to its hash.
"""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, Literal, NotRequired, Required, TypedDict, TypeVar

from citeline.core import documents
from citeline.core.answering import results
from citeline.core.answering.results import AnswerMode, Fallback, Grade, Refusal

__all__ = ["AnswerMode", "Fallback", "Grade", "Refusal"]


class LocalCopy(StrEnum):
    """Whether the folder's own copy of a cited file is the one the index holds."""

    SAME = "same"
    DIFFERS = "differs"
    MISSING = "missing"


# -- values -----------------------------------------------------------------------


class Position(TypedDict):
    line: int
    character: int


class Range(TypedDict):
    start: Position
    end: Position


class Hit(documents.HitJson):
    """A retrieved passage (``Hit.to_json``'s fields) located: ``uri``, ``range``,
    ``folder``, and whether the local copy is the indexed one."""

    uri: str
    range: Range
    folder: str
    local_copy: LocalCopy
    local_copy_note: str | None


class Citation(results.CitationJson):
    """A citation (``Citation.to_json``'s fields) located, as :class:`Hit` is."""

    uri: str
    range: Range
    folder: str
    local_copy: LocalCopy
    local_copy_note: str | None
    text: NotRequired[str]  # the indexed passage, when local_copy is not "same"
    changed: NotRequired[bool]  # history entries: the source changed since


class Answer(TypedDict):
    question: str
    language: str
    answer: str
    mode: AnswerMode | None
    mode_label: str | None
    model: str | None
    fallback: Fallback | None
    fallback_note: str | None
    refused: bool
    grade: Grade
    grade_label: str
    refusal: Refusal | None
    generator_called: bool
    degraded: str | None
    confidence: float | None
    folder: str
    citations: list[Citation]
    hits: list[Hit]
    timings: dict[str, float | None]


class FileError(TypedDict):
    path: str
    message: str


class ModelNames(TypedDict):
    embedding: str | None
    embedding_reason: str | None
    generation: str | None
    reranking: str | None


class FolderStatusFields(TypedDict):
    """A folder's status as ``citeline status --json`` prints it and MCP's
    ``citeline_status`` lists it (``service.status.FolderStatus.to_json``)."""

    docs: str
    index: str
    state: Literal["indexing", "ready", "error"]
    files: int
    chunks: int
    pending: int
    errors: list[FileError]
    notes: list[FileError]
    models: ModelNames
    dimension: int | None
    chunking: str
    last_update: str | None
    collection: str | None
    generation: int | None
    read_only: bool
    paused: bool
    message: NotRequired[str]


class FolderStatus(FolderStatusFields):
    """A folder's status as ``citeline/status`` lists it: with its URI."""

    uri: str


class UnservedFolder(TypedDict):
    uri: str
    docs: str
    reason: str


class ReindexFolderReport(TypedDict):
    uri: str
    files: int
    chunks: int
    embedded: int
    reused: int
    removed: int
    files_changed: int
    files_removed: int
    cancelled: bool
    seconds: float
    errors: list[FileError]
    notes: list[FileError]


class HistoryItem(TypedDict):
    id: str
    time: str
    folder: str
    question: str
    grade: str
    grade_label: str
    mode: str | None
    preview: str
    sources: int


class HistoryEntry(Answer):
    id: str
    time: str
    stale: bool


# -- params and results -------------------------------------------------------------


class AskParams(TypedDict, total=False):
    question: Required[str]
    folder: str
    partialResultToken: str | int


class SearchParams(TypedDict, total=False):
    query: Required[str]
    k: int
    folder: str


class IndexFolderParams(TypedDict):
    folder: str


class ReindexParams(TypedDict, total=False):
    folder: str


class PauseIndexingParams(TypedDict, total=False):
    folder: str


class HistoryParams(TypedDict, total=False):
    folder: str
    query: str
    limit: int
    offset: int


class HistoryEntryParams(TypedDict):
    id: str


class HistoryDeleteParams(TypedDict, total=False):
    id: str
    folder: str


class SearchResult(TypedDict):
    hits: list[Hit]


class StatusResult(TypedDict):
    folders: list[FolderStatus]
    models: ModelNames
    unserved: list[UnservedFolder]


class ReindexResult(TypedDict):
    folders: list[ReindexFolderReport]


class PauseIndexingResult(TypedDict):
    """The folders paused (or resumed), each as ``citeline/status`` lists it."""

    folders: list[FolderStatus]


class HistoryResult(TypedDict):
    entries: list[HistoryItem]
    total: int


class HistoryDeleteResult(TypedDict):
    deleted: int


class AskDelta(TypedDict):
    """``$/progress`` value for an ask's ``partialResultToken``."""

    delta: str


P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Method(Generic[P, R]):
    """A custom request: its name, params (``None``: it takes none) and result, and
    its ``workspace/executeCommand`` twin for clients that only speak commands (the
    command's name and which params its positional arguments are, in order)."""

    name: str
    params: type[P] | None
    result: type[R]
    command: str | None = None
    arguments: tuple[str, ...] = ()

    def param_names(self) -> frozenset[str]:
        if self.params is None:
            return frozenset()
        return frozenset(self.params.__required_keys__ | self.params.__optional_keys__)  # type: ignore[attr-defined]


ASK = Method("citeline/ask", AskParams, Answer, "citeline.ask", ("question", "folder"))
SEARCH = Method("citeline/search", SearchParams, SearchResult, "citeline.search", ("query", "k"))
STATUS: Method[None, StatusResult] = Method(  # also a notification
    "citeline/status", None, StatusResult, "citeline.status"
)
INDEX_FOLDER = Method("citeline/indexFolder", IndexFolderParams, FolderStatus)
REINDEX = Method("citeline/reindex", ReindexParams, ReindexResult, "citeline.reindex", ("folder",))
PAUSE_INDEXING = Method("citeline/pauseIndexing", PauseIndexingParams, PauseIndexingResult)
RESUME_INDEXING = Method("citeline/resumeIndexing", PauseIndexingParams, PauseIndexingResult)
HISTORY = Method("citeline/history", HistoryParams, HistoryResult)
HISTORY_ENTRY = Method("citeline/historyEntry", HistoryEntryParams, HistoryEntry)
HISTORY_DELETE = Method("citeline/historyDelete", HistoryDeleteParams, HistoryDeleteResult)

METHODS: dict[str, Method[Any, Any]] = {
    m.name: m
    for m in (
        ASK,
        SEARCH,
        STATUS,
        INDEX_FOLDER,
        REINDEX,
        PAUSE_INDEXING,
        RESUME_INDEXING,
        HISTORY,
        HISTORY_ENTRY,
        HISTORY_DELETE,
    )
}

# The one command that is not a request's twin: the client shows a citation.
OPEN_CITATION = "citeline.openCitation"

# ``workspace/executeCommand`` (positional arguments): command → the arguments'
# names, and the request it answers as (None: ``citeline.openCitation``, true if shown).
COMMANDS: dict[str, tuple[tuple[str, ...], str | None]] = {
    **{m.command: (m.arguments, m.name) for m in METHODS.values() if m.command},
    OPEN_CITATION: (("citation",), None),
}


# -- the texts clients show ------------------------------------------------------------

QUOTED_LABEL = "Quoted from your documents"
_NOT_USED = "showing the documents' own sentences"
FALLBACK_NOTES: dict[str, str] = {
    Fallback.UNSUPPORTED: f"the model's answer was not supported by the sources; {_NOT_USED}",
    Fallback.TIMEOUT: f"the model took too long; {_NOT_USED}",
    Fallback.CANCELLED: f"the model was stopped; {_NOT_USED}",
    Fallback.CONTEXT: f"the sources did not fit in the model's context; {_NOT_USED}",
}
LOCAL_COPY_NOTES: dict[str, str] = {
    LocalCopy.DIFFERS: "your copy of this file differs from the indexed one",
    LocalCopy.MISSING: "not in your copy of the documents",
}


def model_name(model: str | None) -> str | None:
    """A model file's name for people: without its folder and ``.gguf``."""
    base = (model or "").strip().replace("\\", "/").rsplit("/", 1)[-1]
    if base.lower().endswith(".gguf"):
        base = base[: -len(".gguf")]
    return base or None


def mode_label(mode: str | None, model: str | None) -> str | None:
    """How an answer was made, in a few words; None for a refusal."""
    if mode == AnswerMode.GENERATIVE:
        return f"Written by {model_name(model) or 'the model'}, checked against sources"
    if mode == AnswerMode.EXTRACTIVE:
        return QUOTED_LABEL
    return None


def fallback_note(mode: str | None, fallback: str | None, degraded: str | None) -> str | None:
    """Why a generative ask answered with the documents' own sentences, or None."""
    reason = fallback or degraded
    if mode != AnswerMode.EXTRACTIVE or not reason:
        return None
    return FALLBACK_NOTES.get(reason, f"the model's answer was not used ({reason}); {_NOT_USED}")


def local_copy_note(local_copy: str) -> str | None:
    """What a client says of a cited file whose local copy is not the indexed one."""
    return LOCAL_COPY_NOTES.get(local_copy)
