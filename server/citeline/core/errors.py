"""The one base class for problems a backend reports to the user.

A model file that is missing, not GGUF or the wrong kind, an index database that
is damaged, a database server that cannot be reached: each backend raises a
subclass of :class:`BackendError` whose message is one line naming the file or
the server, fit to show as is.  The front ends treat every
``BackendError`` as expected (``citeline.service.errors``): a one-line message,
never a traceback.
"""


class BackendError(Exception):
    """A backend (a model, an index store) cannot be loaded or run; one line for the user."""


class IndexDamaged(BackendError):
    """A folder's index is damaged.  It is derived from the documents: the backend moves
    it aside and rebuilds it when it is opened again, so the service reopens it."""


class IndexUnavailable(BackendError):
    """The server an index lives on cannot be reached now (it is down, restarting or
    the network is gone).  Trying again later may work: the service retries on its
    own and reports the folder in error meanwhile."""


class IndexMismatch(BackendError):
    """An index was built by another embedding model than the one configured, and
    this handle may not rebuild it (a reader of a shared collection)."""


class DiskFull(IndexUnavailable):
    """There is no space left where the index is written.  Nothing is half-written (a
    file's change is one transaction) and the index as it is stays readable; the
    service tries again on its own, and a whole-folder plan then indexes every file
    that changed meanwhile."""


def disk_full_message(where: object) -> str:
    return (
        f"the disk is full: cannot write the index at {where} (the index as it is stays"
        " searchable; indexing resumes when there is space)"
    )
