"""What identifies an index, and the one rule for a mismatch."""

from __future__ import annotations

from dataclasses import dataclass, field

from citeline.core import keywords
from citeline.core.chunking import ChunkSettings
from citeline.core.index import IndexIdentity, reconcile_identity


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
