"""``citeline/reindex``: each folder's ingest report, as ``citeline index --json`` has it."""

from __future__ import annotations

from inprocess import Served


async def test_every_folder_reports_what_the_index_holds(served: Served) -> None:
    reindex = served.feature("citeline/reindex")
    result = await reindex(None)
    assert [f["uri"] for f in result["folders"]] == [
        served.garden.as_uri(),
        served.kitchen.as_uri(),
    ]
    garden = result["folders"][0]
    assert garden["files"] == 1 and garden["chunks"] >= 1 and garden["errors"] == []
    assert {"embedded", "reused", "removed", "files_changed", "seconds"} <= set(garden)
    (only,) = (await reindex({"folder": served.kitchen.as_uri()}))["folders"]
    assert only["uri"] == served.kitchen.as_uri()
