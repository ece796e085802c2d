"""The answer stage: from a question and its hits to a cited answer.

- ``settings``: thresholds, budgets, the answer mode;
- ``evidence``: which hits are evidence, their labels, the evidence list;
- ``units``: the sentences, list items, table rows and code blocks of a passage;
- ``prompt`` and ``citations``: the generator's prompt and its [n] markers;
- ``results``: ``Evidence``, ``Citation``, ``Answer``;
- ``language``: what is said to the user, in the question's language;
- ``flow``: ``ask``, the whole flow.
"""
