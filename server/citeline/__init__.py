"""Citeline: ask questions of your own documents and get answers that cite the exact place."""

__version__ = "0.1.0"
