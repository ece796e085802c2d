"""The team index on PostgreSQL + pgvector: one collection per schema, one writer,
many read-only readers (``index.py``), BM25 over Citeline's terms (``keywords.py``),
connections, errors and change notifications (``connection.py``)."""
