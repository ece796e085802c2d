"""Locating and preparing the default GGUF models from files that PyPI packages ship."""


class ModelError(Exception):
    """A default model is missing or cannot be prepared; the message is one line."""
