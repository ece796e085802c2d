"""The one base class for problems a backend reports to the user.

A model file that is missing, not GGUF or the wrong kind, an index database that
is damaged: each backend raises a subclass of :class:`BackendError` whose message
is one line naming the file, fit to show as is.  The front ends treat every
``BackendError`` as expected (``citeline.service.errors``): a one-line message,
never a traceback.
"""


class BackendError(Exception):
    """A backend (a model, an index store) cannot be loaded or run; one line for the user."""


class IndexDamaged(BackendError):
    """A folder's index is damaged.  It is derived from the documents: the backend moves
    it aside and rebuilds it when it is opened again, so the service reopens it."""
