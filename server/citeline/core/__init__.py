"""The pure core of Citeline: loading, chunking, storing, indexing, retrieving, answering.

Architecture invariant: nothing under ``citeline.core`` imports pygls or lsprotocol.
"""
