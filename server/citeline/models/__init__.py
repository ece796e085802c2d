"""Locating and preparing the default GGUF models from files that PyPI packages ship."""

from citeline.core.errors import BackendError


class ModelError(BackendError):
    """A default model is missing or cannot be prepared; the message is one line."""
