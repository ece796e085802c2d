"""Concrete implementations of the core's protocols.

``llama/`` runs models with llama.cpp; ``faiss.py`` is the vector index;
``sqlite/`` the embedded store and its FTS5 keyword index; ``embedded.py`` puts
them together as a documents folder's index in ``<docs>/.citeline``.  Nothing
outside ``citeline.app`` (the composition root) imports this package, except
the tests.
"""
