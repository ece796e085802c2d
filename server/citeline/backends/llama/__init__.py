"""Models on llama.cpp (llama-cpp-python): the embedder, the reranker, the generator.

- ``runtime``: llama.cpp's process-wide setup (backend init, its C log captured),
  CPU counts and model file identities;
- ``cpu_share``: models computing at the same time split the cores;
- ``wordpiece``: making llama.cpp's BERT tokenizer give HF's ids;
- ``encoder``: a GGUF encoder on the low-level API (what embedder and reranker share);
- ``embedder``, ``reranker``, ``generator``: the implementations of
  ``core.embedding.Embedder``, ``core.reranking.Reranker`` and
  ``core.generation.Generator``.
"""
