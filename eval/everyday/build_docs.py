"""Rebuild eval/everyday/docs/ from the Debian packages it was taken from.

Usage (on Debian 12 with apt sources configured; ``apt-get update`` first)::

    python3 eval/everyday/build_docs.py            # fetch, unpack, copy, verify
    python3 eval/everyday/build_docs.py --verify   # only check docs/ against MANIFEST.tsv

Each corpus file is a verbatim copy of a file shipped in a ``.deb`` (gzip-compressed
files are decompressed, nothing else is changed).  The package versions are pinned:
a different version is reported and its files are not copied, so the questions keep
matching their documents.  Standard library only.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "docs"
MANIFEST = HERE / "MANIFEST.tsv"

# package -> pinned version (as in the .deb file name, epoch quoted as %3a)
PACKAGES = {
    "restic": "0.14.0-1+b5",
    "mkdocs-doc": "1.4.2+dfsg-2",
    "pipx": "1.1.0-1",
    "direnv": "2.32.1-2+b4",
    "debian-faq": "11.1",
    "maint-guide-zh-cn": "1.2.53",
    "debian-reference-zh-cn": "2.100",
}

R = "usr/share/doc/restic/html/"
M = "usr/share/doc/mkdocs/html/"
P = "usr/share/doc/pipx/"
D = "usr/share/doc/direnv/"

# corpus path -> (package, path inside the package; a .gz is decompressed)
FILES: dict[str, tuple[str, str]] = {
    **{
        f"restic/{name}.html": ("restic", f"{R}{name}.html")
        for name in (
            "020_installation",
            "030_preparing_a_new_repo",
            "040_backup",
            "045_working_with_repos",
            "047_tuning_backup_parameters",
            "050_restore",
            "060_forget",
            "070_encryption",
            "075_scripting",
        )
    },
    **{
        f"mkdocs/{name}.html": ("mkdocs-doc", f"{M}{name}.html")
        for name in (
            "getting-started",
            "user-guide/installation",
            "user-guide/cli",
            "user-guide/configuration",
            "user-guide/writing-your-docs",
            "user-guide/choosing-your-theme",
            "user-guide/deploying-your-docs",
        )
    },
    "pipx/README.md": ("pipx", f"{P}README.md.gz"),
    "pipx/docs/installation.md": ("pipx", f"{P}docs/installation.md"),
    "pipx/docs/troubleshooting.md": ("pipx", f"{P}docs/troubleshooting.md"),
    "pipx/docs/how-pipx-works.md": ("pipx", f"{P}docs/how-pipx-works.md"),
    "pipx/docs/examples.md": ("pipx", f"{P}docs/examples.md"),
    "pipx/docs/comparisons.md": ("pipx", f"{P}docs/comparisons.md.gz"),
    "direnv/README.md": ("direnv", f"{D}README.md.gz"),
    "direnv/installation.md": ("direnv", f"{D}installation.md"),
    "direnv/hook.md": ("direnv", f"{D}hook.md"),
    "debian-faq/debian-faq.en.pdf": ("debian-faq", "usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz"),
    "maint-guide-zh-cn/maint-guide.zh-cn.pdf": (
        "maint-guide-zh-cn",
        "usr/share/doc/maint-guide-zh-cn/maint-guide.zh-cn.pdf",
    ),
    "debian-reference-zh-cn/ch08.zh-cn.html": (
        "debian-reference-zh-cn",
        "usr/share/debian-reference/ch08.zh-cn.html",
    ),
    "debian-reference-zh-cn/ch10.zh-cn.html": (
        "debian-reference-zh-cn",
        "usr/share/debian-reference/ch10.zh-cn.html",
    ),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(work: Path) -> dict[str, Path]:
    """Download and unpack each pinned package; package -> unpacked root."""
    roots = {}
    for package, version in PACKAGES.items():
        subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=work, check=True)
        (deb,) = work.glob(f"{package}_*.deb")
        root = work / package
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
        roots[package] = root
    return roots


def copy(roots: dict[str, Path]) -> None:
    for target, (package, inner) in FILES.items():
        source = roots[package] / inner
        out = DOCS / target
        out.parent.mkdir(parents=True, exist_ok=True)
        if inner.endswith(".gz"):
            out.write_bytes(gzip.decompress(source.read_bytes()))
        else:
            shutil.copyfile(source, out)
        licence = HERE / "LICENCES" / f"{package}.copyright"
        licence.parent.mkdir(exist_ok=True)
        shutil.copyfile(roots[package] / "usr/share/doc" / package / "copyright", licence)


def write_manifest() -> None:
    rows = ["path\tbytes\tsha256\tpackage\tversion\toriginal"]
    for target, (package, inner) in sorted(FILES.items()):
        path = DOCS / target
        rows.append(
            f"{target}\t{path.stat().st_size}\t{sha256(path)}\t{package}\t"
            f"{PACKAGES[package]}\t/{inner}"
        )
    MANIFEST.write_text("\n".join(rows) + "\n", "utf-8")


def verify() -> int:
    bad = 0
    lines = MANIFEST.read_text("utf-8").splitlines()[1:]
    listed = set()
    for line in lines:
        target, size, digest, *_ = line.split("\t")
        listed.add(target)
        path = DOCS / target
        if not path.is_file():
            print(f"missing: {target}")
            bad += 1
        elif sha256(path) != digest or path.stat().st_size != int(size):
            print(f"differs from MANIFEST.tsv: {target}")
            bad += 1
    extra = {
        str(p.relative_to(DOCS))
        for p in DOCS.rglob("*")
        if p.is_file() and ".citeline" not in p.parts
    } - listed
    for target in sorted(extra):
        print(f"not in MANIFEST.tsv: {target}")
        bad += 1
    print(f"{len(lines)} files checked, {bad} problems")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verify", action="store_true", help="only check docs/")
    parser.add_argument(
        "--write-manifest", action="store_true", help="rewrite MANIFEST.tsv after copying"
    )
    args = parser.parse_args()
    if not args.verify:
        with tempfile.TemporaryDirectory() as work:
            copy(fetch(Path(work)))
        if args.write_manifest or not MANIFEST.exists():
            write_manifest()
    return verify()


if __name__ == "__main__":
    sys.exit(main())
