"""The language server: the only package that knows LSP and JSON-RPC.

``server.py`` builds the pygls server and registers each area's handlers from its
own module; handlers parse params, await one core call on a worker thread,
convert the result and return.  See docs/lsp-extensions.md for the wire.
"""
