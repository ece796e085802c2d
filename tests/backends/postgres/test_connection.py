"""Connections to the team index: URLs shown without secrets, collection names,
pgvector's binary format, one-line errors (a real server where one is needed)."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from citeline.backends.postgres.connection import (
    CollectionMissing,
    DatabaseError,
    DatabaseUnavailable,
    Embedding,
    check_collection,
    display_url,
    register_vector,
    schema_for,
    translate,
)
from citeline.core.errors import BackendError, IndexUnavailable
from postgres import TestServer


def test_urls_are_shown_without_secrets() -> None:
    assert display_url("postgresql://ci:s3cret@db.example.com:5433/docs?sslmode=require") == (
        "postgresql://ci@db.example.com:5433/docs"
    )
    assert display_url("postgresql://postgres:@/postgres?host=/tmp/x") == (
        "postgresql://postgres@/postgres?host=/tmp/x"
    )
    assert "s3cret" not in display_url("postgresql:///docs?service=team&password=s3cret")
    assert display_url("postgresql:///docs?service=team").endswith("service=team")


def test_collection_names_are_checked() -> None:
    assert schema_for("team_docs") == "citeline_team_docs"
    for bad in ("", "Docs", "1docs", "docs-site", "a" * 49, 'x"; DROP'):
        with pytest.raises(BackendError, match="collection name"):
            check_collection(bad)


def test_vectors_round_trip_in_pgvector_binary_format(postgres: TestServer) -> None:
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        assert register_vector(conn)
        v = np.asarray([0.25, -1.5, 3.0], dtype=np.float32)
        (back,) = conn.execute("SELECT %s::vector", (Embedding(v),), binary=True).fetchone()  # type: ignore[misc]
        assert back.dtype == np.float32 and back == pytest.approx(v)
        (text,) = conn.execute("SELECT %s::vector", (Embedding(v),)).fetchone()  # type: ignore[misc]
        assert text == pytest.approx(v)


def test_driver_errors_become_one_line_backend_errors(postgres: TestServer) -> None:
    where = "postgresql://x/db#docs"
    with pytest.raises(psycopg.OperationalError) as lost:
        psycopg.connect("postgresql:///db?host=/nonexistent", connect_timeout=2)
    error = translate(lost.value, where)
    assert isinstance(error, DatabaseUnavailable) and isinstance(error, IndexUnavailable)
    assert str(error).startswith(f"the team index {where} cannot be reached: ")
    assert "\n" not in str(error)
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as missing:
            conn.execute("SELECT * FROM citeline_nothing.files")
        assert isinstance(translate(missing.value, where), CollectionMissing)
        with pytest.raises(psycopg.Error) as bad:
            conn.execute("SELECT 1/0")
        assert isinstance(translate(bad.value, where), DatabaseError)
