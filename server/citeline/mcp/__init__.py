"""``citeline mcp``: Citeline as an MCP server over stdio, for coding agents.

A front end beside ``lsp/`` and ``cli/``: ``tools`` translates each tool call to
one service call and its result to structured content and readable text;
``server`` is the official MCP SDK's server on stdio, the service it fronts, and
the log (stderr: stdout is MCP's).
"""
