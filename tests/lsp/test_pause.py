"""``citeline/pauseIndexing`` and ``citeline/resumeIndexing``: a paused folder commits
nothing, collects its changes and is searched as it is; resume indexes what waited."""

from __future__ import annotations

import asyncio
import time

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from inprocess import Served
from recording import settled


async def test_pause_collects_changes_and_resume_indexes_them(served: Served) -> None:
    pause = served.feature("citeline/pauseIndexing")
    resume = served.feature("citeline/resumeIndexing")
    status = served.feature("citeline/status")
    garden = served.garden.as_uri()
    (only,) = (await pause({"folder": garden}))["folders"]
    assert (only["uri"], only["paused"], only["state"]) == (garden, True, "ready")
    (served.garden / "herbs.md").write_text("# Herbs\n\nRosemary likes dry, sandy soil.\n")
    served.ls.service.saved(served.garden / "herbs.md")
    folders = {f["uri"]: f for f in (await status({}))["folders"]}
    assert (folders[garden]["paused"], folders[garden]["pending"], folders[garden]["files"]) == (
        True,
        1,
        1,
    )
    assert folders[served.kitchen.as_uri()]["paused"] is False  # only the folder named
    # Searches answer from what is indexed: the waiting file is not in it yet.
    found = await served.feature("citeline/search")({"query": "tomatoes sun", "k": 3})
    assert found["hits"] and all("herbs" not in h["uri"] for h in found["hits"])
    with pytest.raises(JsonRpcException, match="paused"):
        await served.feature("citeline/reindex")({"folder": garden})

    (again,) = (await resume({"folder": garden}))["folders"]
    assert again["paused"] is False
    folder = served.ls.service.named(served.garden)
    assert folder is not None
    deadline = time.monotonic() + 300
    while not (settled(folder) and folder.state == "ready" and folder.files == 2):
        assert time.monotonic() < deadline, "what waited was never indexed"
        await asyncio.sleep(0.05)
    # No folder named: every folder.
    assert [f["paused"] for f in (await pause(None))["folders"]] == [True, True]
    assert [f["paused"] for f in (await resume({}))["folders"]] == [False, False]


async def test_bad_params_and_a_folder_not_served_are_errors(served: Served) -> None:
    pause = served.feature("citeline/pauseIndexing")
    with pytest.raises(JsonRpcInvalidParams, match="must be a string"):
        await pause({"folder": 5})
    with pytest.raises(JsonRpcInvalidParams, match="file:// URI"):
        await pause({"folder": "untitled:1"})
    with pytest.raises(JsonRpcInvalidParams):
        await served.feature("citeline/resumeIndexing")({"folders": "x"})
    with pytest.raises(JsonRpcException, match="not a documents folder"):
        await pause({"folder": (served.garden.parent / "elsewhere").as_uri()})
