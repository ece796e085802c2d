"""``citeline/status``: the request and the notification, from the service's status."""

from __future__ import annotations

import asyncio

from citeline.lsp import status as status_module
from inprocess import Served


async def test_the_request_lists_each_folder_with_its_uri_and_the_models(served: Served) -> None:
    result = await served.feature("citeline/status")({})
    garden, kitchen = result["folders"]
    assert garden["uri"] == served.garden.as_uri() and kitchen["uri"] == served.kitchen.as_uri()
    assert garden["state"] == "ready" and garden["files"] == 1 and garden["pending"] == 0
    assert garden["docs"] == str(served.garden) and garden["dimension"] == 384
    assert result["models"]["embedding"].endswith(".gguf") and result["models"]["reranking"] is None


async def test_notifications_are_sent_on_change_only_and_throttled(served: Served) -> None:
    notifier = served.ls.status
    notifier.enabled = True
    notifier.changed(immediate=True)
    notifier.changed(immediate=True)  # nothing changed: not sent again
    assert len(served.wire.notifications("citeline/status")) == 1
    served.ls.service.folders.get(served.garden).files = 99  # type: ignore[union-attr]
    notifier.changed()
    notifier.changed()
    assert len(served.wire.notifications("citeline/status")) == 1  # not yet: throttled
    await asyncio.sleep(status_module.NOTIFY_INTERVAL + 0.2)
    sent = served.wire.notifications("citeline/status")
    assert len(sent) == 2 and sent[-1]["folders"][0]["files"] == 99
    notifier.enabled = False
