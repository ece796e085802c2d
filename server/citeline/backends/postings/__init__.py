"""The keyword index the embedded index searches: BM25 over numpy postings
(``base``: written once, memory-mapped; ``index``: the
:class:`~citeline.core.keywords.KeywordIndex`, a base plus a log of changes)."""

from citeline.backends.postings.index import PostingsKeywordIndex

__all__ = ["PostingsKeywordIndex"]
