"""Measuring retrieval and answer quality on public benchmarks and users' own questions."""
