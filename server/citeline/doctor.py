"""``citeline doctor``: what works and what is missing, with the fix for each problem.

The checks, in order: Python and the platform; Citeline itself; llama.cpp (its
build's CPU features against this CPU's, and one sentence embedded, in a child
process, so a build using an instruction this CPU lacks is reported, not fatal); the
default models (the models wheel, or their source packages); each documents folder
(its marker, ``citeline.toml``, the models it configures, its index).

Each check is ``ok``, a ``note`` (works, but worth knowing: a folder an editor will
not serve by itself, a folder not indexed yet) or a ``problem`` (something will not
work), with the fix for a note or a problem.  ``citeline doctor`` exits 1 when there
is a problem; editors' health commands call it (``--json``).
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from citeline import __version__, platforms

Level = Literal["ok", "note", "problem"]

#: llama.cpp's names for the CPU features of its build -> /proc/cpuinfo's flags.
CPU_FLAGS = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512_vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}
#: Features of a build that fault on some CPUs that report them (scripts/lib/llama.sh).
RISKY_FEATURES = ("AMX_INT8",)
REBUILD = (
    "reinstall llama-cpp-python built for this CPU: from a Citeline checkout run"
    " scripts/setup.sh, or pip install --force-reinstall --no-binary llama-cpp-python"
    " llama-cpp-python==0.3.36 with CMAKE_ARGS from scripts/lib/llama.sh"
)
PROBE_TIMEOUT = 300.0


@dataclass(frozen=True)
class Check:
    area: str  # python, citeline, llama.cpp, models, folder, index
    level: Level
    summary: str  # what was found, one line
    fix: str | None = None  # what to do (a note or a problem)
    folder: str | None = None  # the documents folder it is about


@dataclass(frozen=True)
class Report:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(check.level != "problem" for check in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "citeline": __version__,
            "problems": sum(check.level == "problem" for check in self.checks),
            "checks": [
                {k: v for k, v in asdict(check).items() if v is not None} for check in self.checks
            ],
        }


def run(folders: list[Path]) -> Report:
    """Every check, for the given documents folders."""
    checks = [*python_checks(), citeline_check()]
    if platforms.unsupported_reason() is None:
        llama = llama_checks()
        checks += llama
        checks += model_checks()
        llama_runs = all(c.level != "problem" for c in llama)
        for folder in folders:
            checks += folder_checks(folder, open_index=llama_runs)
    return Report(tuple(checks))


# ---------------------------------------------------------------------- Python, Citeline


def python_checks() -> list[Check]:
    version = sys.version_info
    where = (
        f"Python {platform.python_version()} ({sys.executable}),"
        f" {sys.platform} {platform.machine()}"
    )
    checks = []
    if version < (3, 11):
        checks.append(Check("python", "problem", where, "Citeline needs Python 3.11 or newer"))
    else:
        checks.append(Check("python", "ok", where))
    if (reason := platforms.unsupported_reason()) is not None:
        checks.append(
            Check("python", "problem", reason, "run Citeline on Linux or macOS (or WSL 2)")
        )
    return checks


def citeline_check() -> Check:
    package = Path(__file__).resolve().parent
    editable = (package.parent.parent / "pyproject.toml").is_file()
    kind = "a checkout (editable install)" if editable else "an installed wheel"
    return Check("citeline", "ok", f"citeline {__version__} from {kind}: {package}")


# ---------------------------------------------------------------------- llama.cpp


def build_features(system_info: str) -> list[str]:
    """The CPU features a llama.cpp build uses, from its system info line."""
    features = []
    for part in system_info.replace("CPU :", "|").split("|"):
        name, _, value = part.partition("=")
        if value.strip() == "1" and name.strip() in CPU_FLAGS:
            features.append(name.strip())
    return features


def cpu_flags() -> set[str] | None:
    """This CPU's feature flags (Linux), or None where they cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        return None
    return None


def feature_checks(features: list[str], flags: set[str] | None) -> list[Check]:
    """The build's features against the CPU's: one it lacks is a crash (SIGILL)."""
    used = " ".join(features) or "no SIMD extensions"
    checks = []
    if flags is not None:
        lacking = [f for f in features if CPU_FLAGS[f] not in flags]
        if lacking:
            checks.append(
                Check(
                    "llama.cpp",
                    "problem",
                    f"the build uses {' '.join(lacking)}, which this CPU lacks (it would stop"
                    " with SIGILL)",
                    REBUILD,
                )
            )
        else:
            checks.append(Check("llama.cpp", "ok", f"built with {used}: this CPU has them all"))
    else:
        checks.append(Check("llama.cpp", "ok", f"built with {used} (this CPU's flags unknown)"))
    risky = [f for f in features if f in RISKY_FEATURES]
    if risky:
        checks.append(
            Check(
                "llama.cpp",
                "note",
                f"the build uses {' '.join(risky)}, which faults on some CPUs that report it",
                REBUILD,
            )
        )
    return checks


def probe_llama(timeout: float = PROBE_TIMEOUT) -> tuple[dict[str, Any] | None, str | None]:
    """``app.llama_report()`` from a child process: (report, None) or (None, why not)."""
    code = "import json; from citeline.app import llama_report; print(json.dumps(llama_report()))"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return None, f"llama.cpp did not load and embed a sentence in {timeout:.0f} s"
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        why = "an instruction this CPU lacks" if name == "SIGILL" else "a crash"
        return None, f"llama.cpp stopped with {name} ({why})"
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
        return None, lines[-1] if lines else f"the llama.cpp check exited {proc.returncode}"
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return None, "the llama.cpp check printed no report"


def llama_checks() -> list[Check]:
    report, failure = probe_llama()
    if report is None:
        fix = REBUILD if "SIGILL" in (failure or "") or "unavailable" in (failure or "") else None
        return [Check("llama.cpp", "problem", failure or "llama.cpp failed", fix or _model_fix())]
    features = build_features(str(report.get("system_info", "")))
    checks = [Check("llama.cpp", "ok", f"llama-cpp-python {report['version']} ({report['file']})")]
    checks += feature_checks(features, cpu_flags())
    embedding = report.get("embedding") or {}
    checks.append(
        Check(
            "llama.cpp",
            "ok",
            f"embedded a sentence with {embedding.get('name')} ({embedding.get('dimension')}"
            f" dimensions) in {embedding.get('seconds')} s, model load included",
        )
    )
    return checks


def _model_fix() -> str:
    return "see the models checks below, then run citeline doctor again"


# ---------------------------------------------------------------------- models


def model_checks() -> list[Check]:
    from citeline.models import ModelError, minilm, packaged, smollm

    checks = []
    shipped = packaged.packaged_models() if packaged.package_dir() is not None else {}
    for role, name, locate in (
        ("embedding", minilm.MODEL_NAME, minilm.default_embedding_model_path),
        ("answers", smollm.GENERATOR_MODEL_NAME, smollm.default_generator_model_path),
    ):
        try:
            path = locate()
        except ModelError as exc:
            checks.append(
                Check(
                    "models",
                    "problem",
                    f"{role} model {name}: {exc}",
                    f"pip install citeline-models (from the Citeline wheelhouse: pip install"
                    f" --no-index --find-links WHEELHOUSE citeline-models) in {sys.prefix}",
                )
            )
            continue
        model = shipped.get(name)
        origin = packaged.DISTRIBUTION if model and model.path == path else "its source package"
        checks.append(Check("models", "ok", f"{role} model {name}: {path} (from {origin})"))
    return checks


# ---------------------------------------------------------------------- folders


MARKERS = ("citeline.toml", ".citeline")


def folder_checks(folder: Path, *, open_index: bool = True) -> list[Check]:
    from citeline.settings import load_settings

    docs = folder.expanduser()
    where = str(docs)
    if not docs.is_dir():
        return [
            Check(
                "folder",
                "problem",
                f"{docs} is not a folder",
                "name an existing documents folder (--docs DIR)",
                where,
            )
        ]
    docs = docs.resolve()
    where = str(docs)
    checks = []
    marked = [m for m in MARKERS if (docs / m).exists()]
    if marked:
        checks.append(Check("folder", "ok", f"{docs}: marked by {', '.join(marked)}", None, where))
    else:
        checks.append(
            Check(
                "folder",
                "note",
                f"{docs} has no citeline.toml or .citeline/: an editor serves it only when asked",
                "run 'Citeline: Index This Folder…' in VS Code, list it in citeline.folders,"
                " or create an empty citeline.toml in it",
                where,
            )
        )
    settings, warnings = load_settings(docs)
    for warning in warnings:
        checks.append(
            Check("folder", "note", f"citeline.toml: {warning}", "edit citeline.toml", where)
        )
    for role, configured in (
        ("embedding", settings.embedding.model),
        ("generation", settings.generation.model),
        ("reranking", settings.reranking.model),
    ):
        if configured:
            checks.append(_configured_model(role, Path(configured).expanduser(), where))
    if settings.index.team:
        from importlib.util import find_spec

        if find_spec("psycopg") is None:
            from citeline.app import TEAM_EXTRA_HINT

            checks.append(Check("index", "problem", TEAM_EXTRA_HINT, TEAM_EXTRA_HINT, where))
            return checks
    elif not settings.index_dir(docs).is_dir():
        checks.append(
            Check(
                "index",
                "note",
                f"{settings.index_dir(docs)}: not indexed yet",
                f"citeline index --docs {docs} (an editor serving the folder indexes it too)",
                where,
            )
        )
        return checks
    if open_index and not any(c.level == "problem" for c in checks):
        checks.append(_index_check(docs, settings, where))
    return checks


def _configured_model(role: str, path: Path, where: str) -> Check:
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        return Check(
            "models",
            "problem",
            f"[{role}] model {path}: {exc.strerror or exc}",
            f"fix [{role}] model in citeline.toml (or the editor's setting)",
            where,
        )
    if magic != b"GGUF":
        return Check(
            "models",
            "problem",
            f"[{role}] model {path} is not a GGUF file",
            "convert it to GGUF, or point the setting at a .gguf file",
            where,
        )
    return Check("models", "ok", f"[{role}] model {path}", None, where)


def _index_check(docs: Path, settings: Any, where: str) -> Check:
    from citeline.app import open_workspace
    from citeline.service.errors import EXPECTED_ERRORS

    try:
        workspace = open_workspace(docs, settings)
        try:
            status = workspace.status()
        finally:
            workspace.close()
    except EXPECTED_ERRORS as exc:
        return Check(
            "index",
            "problem",
            f"{settings.index_dir(docs)}: {exc}",
            f"citeline index --docs {docs} (a damaged index is moved aside and rebuilt)",
            where,
        )
    summary = f"{status.index}: {status.files} files, {status.chunks} chunks"
    if status.last_update is not None:
        from datetime import UTC, datetime

        when = datetime.fromtimestamp(status.last_update, UTC).strftime("%Y-%m-%d %H:%M UTC")
        summary += f", updated {when}"
    if status.errors:
        path, message = status.errors[0]
        return Check(
            "index",
            "note",
            f"{summary}; {len(status.errors)} file(s) could not be read (first: {path}: {message})",
            "fix or remove those files, or list them in .citelineignore",
            where,
        )
    return Check("index", "ok", summary, None, where)
