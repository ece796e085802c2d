"""What identifies an index, and the one rule for a mismatch."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from citeline.core import keywords
from citeline.core.chunking import ChunkSettings
from citeline.core.index import (
    FileRecord,
    IndexIdentity,
    IndexRecords,
    SharedIndex,
    reconcile_identity,
)


@dataclass
class Meta:
    values: dict[str, str] = field(default_factory=dict)
    cleared: int = 0
    rechunked: int = 0

    def get_meta(self, key: str) -> str | None:
        return self.values.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self.values[key] = value

    def clear(self) -> None:
        self.cleared += 1

    def forget_chunks(self) -> None:
        self.rechunked += 1


IDENTITY = IndexIdentity("fp", "mini.gguf", 384, ChunkSettings())


def test_the_keys_name_model_dimension_chunking_and_term_version() -> None:
    assert IDENTITY.embedder_key == "fp:384"
    assert IDENTITY.chunking_key == f"{ChunkSettings().fingerprint()}:{keywords.VERSION}"


def test_a_new_index_records_its_identity() -> None:
    meta = Meta()
    reconcile_identity(meta, IDENTITY)
    assert (meta.cleared, meta.rechunked) == (0, 0)
    assert meta.values == {
        "embedder": "fp:384",
        "embedder_name": "mini.gguf",
        "dimension": "384",
        "chunking": IDENTITY.chunking_key,
    }


def test_another_model_clears_and_other_chunking_rechunks() -> None:
    meta = Meta()
    reconcile_identity(meta, IDENTITY)
    reconcile_identity(meta, IDENTITY)
    assert (meta.cleared, meta.rechunked) == (0, 0)
    reconcile_identity(meta, IndexIdentity("fp", "mini.gguf", 384, ChunkSettings(max_cost=500)))
    assert (meta.cleared, meta.rechunked) == (0, 1)
    reconcile_identity(meta, IndexIdentity("other", "big.gguf", 768, ChunkSettings(max_cost=500)))
    assert meta.cleared == 1 and meta.values["embedder"] == "other:768"


class RecordsOnly(IndexRecords):
    """A backend that writes only ``files`` of the records: the rest are derived."""

    def __init__(self, records: list[FileRecord]) -> None:
        self.records = {r.path: r for r in records}

    def files(self, paths: Iterable[str] | None = None) -> dict[str, FileRecord]:
        wanted = self.records if paths is None else set(paths)
        return {p: r for p, r in self.records.items() if p in wanted}


def test_records_a_backend_does_not_write_are_derived_from_its_files() -> None:
    index = RecordsOnly(
        [
            FileRecord(1, "b.md", "markdown", "B", "hb", 1, 1, 20.0, None, "left out a header"),
            FileRecord(2, "a.pdf", "pdf", "A", "ha", 1, 1, 30.0, "no text layer", "ignored"),
            FileRecord(3, "c.md", "markdown", "C", "hc", 1, 1, 10.0, None),
        ]
    )
    assert index.content_hashes(["a.pdf", "b.md", "gone.md"]) == {"b.md": "hb"}
    assert index.file_errors() == [("a.pdf", "no text layer")]
    assert index.file_notes() == [("b.md", "left out a header")]
    assert index.last_update() == 30.0 and RecordsOnly([]).last_update() is None


def test_a_folder_index_keeps_the_team_answers_it_does_not_write() -> None:
    class Own(SharedIndex):
        pass

    own = Own()
    assert own.collection is None and not own.read_only and not own.subscribe(lambda: None)
