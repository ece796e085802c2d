"""The application service: what the command line and the language server share.

- ``workspace``: one documents folder (update, search, ask, status), used by
  both front ends;
- ``status``: one status object per folder; ``errors``: the expected errors;
- ``service``: the long-running application the language server fronts, one
  method per request: ``folders`` (registry and lifecycle), ``scheduler``
  (debounced ingest batches), ``routing`` (which folder, merged results),
  ``workers`` (the index and generation threads), ``watcher``, ``events``
  (what it tells the front end).
"""
