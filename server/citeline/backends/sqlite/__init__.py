"""The embedded index's store: one SQLite database per documents folder.

``store.py``: files, chunks, content-addressed vectors and meta, the source of
truth; ``fts5.py``: the FTS5 keyword index, written in the store's transactions.
"""
