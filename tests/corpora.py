"""Small corpora for tests that index real files with the real models."""

from __future__ import annotations

from pathlib import Path

GARDEN = {
    "garden.md": "# Garden\n\n## Tomatoes\n\nTomatoes need six hours of direct sun every day.\n"
    "Water them deeply twice a week.\n\n## Basil\n\nBasil grows best next to tomatoes.\n",
}
KITCHEN = {
    "kitchen.md": "# Kitchen handbook\n\n## Coffee machine\n\nThe coffee machine is descaled"
    " every 30 days with citric acid.\n\n## Bread\n\nKnead the dough for ten minutes.\n",
}


def write_files(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root
