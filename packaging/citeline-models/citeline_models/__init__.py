"""Citeline's default models, ready to load: the files are listed in ``manifest.json``.

Citeline finds this package without importing it (``citeline.models.packaged``).
"""

from pathlib import Path

MANIFEST = Path(__file__).with_name("manifest.json")
