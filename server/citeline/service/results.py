"""The values the service answers with, as the front ends name them.

Front ends never import the core (``tests/test_architecture.py``); the answers,
hits, citations and ingest reports they receive are the core's typed values,
named here, with the rule for how every JSON output rounds their numbers.
"""

from citeline.core.answering.results import Answer, Citation
from citeline.core.documents import SECONDS_DIGITS, Hit, rounded
from citeline.core.ingest import IngestReport

__all__ = ["SECONDS_DIGITS", "Answer", "Citation", "Hit", "IngestReport", "rounded"]
