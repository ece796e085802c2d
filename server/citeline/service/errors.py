"""The expected-error vocabulary: what the command line and the language server
show as a one-line message instead of a traceback.

- :class:`ServiceError`: a request that cannot be served as asked (the folder
  does not exist or is not served, no folder at all, the worker has stopped, an
  evaluation file is malformed);
- :class:`~citeline.core.errors.BackendError`: a model or an index cannot be
  loaded or run (a missing or wrong model file, a damaged index database).

Anything else is a bug: the command line prints a traceback, the language
server answers "Citeline failed" and logs the traceback.
"""

from __future__ import annotations

from citeline.core.errors import BackendError, DiskFull

__all__ = ["EXPECTED_ERRORS", "BackendError", "DiskFull", "ServiceError"]


class ServiceError(Exception):
    """A request Citeline cannot serve as asked; the message is one line for the user."""


EXPECTED_ERRORS: tuple[type[Exception], ...] = (ServiceError, BackendError)
