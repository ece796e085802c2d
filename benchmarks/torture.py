"""The torture suite's long versions: how Citeline holds up against hostile files,
kill -9, fuzzed JSON-RPC, churn and a damaged index.  The fast versions run with the
tests (tests/torture/); this runs the same code for longer and prints the figures
docs/reliability.md quotes.

    .venv/bin/python benchmarks/torture.py            # 100 kill rounds, 5,000 fuzz messages
    .venv/bin/python benchmarks/torture.py --rounds 20 --fuzz 2000 --json
    .venv/bin/python benchmarks/torture.py --only big-pdf --big-pdf-pages 50000 --json
    .venv/bin/python benchmarks/torture.py --only first-index --first-index-files 1000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from citeline.app import ModelPool, open_workspace  # noqa: E402
from citeline.settings import Settings  # noqa: E402
from torture import (  # noqa: E402
    bad_settings,
    churn,
    confinement,
    crashes,
    damage,
    full_disk,
    fuzz,
    hostile,
    pdf_crashes,
    pdfs,
    starvation,
    windows,
)


def rss_mb() -> float:
    return fuzz.rss_mb(os.getpid())


def hostile_files(work: Path) -> dict[str, Any]:
    root = work / "hostile"
    root.mkdir()
    made = hostile.build(root)
    before = rss_mb()
    ws = open_workspace(root, Settings(), ModelPool())
    started = time.monotonic()
    try:
        report = ws.update()
        records = ws.index.files()
        again = ws.update()
    finally:
        ws.close()
    seconds = time.monotonic() - started
    with sqlite3.connect(root / ".citeline" / "index.sqlite3") as db:
        counts = dict(db.execute("SELECT file_id, count(*) FROM chunks GROUP BY file_id"))
    files = {path: (counts.get(r.id, 0), r.error) for path, r in records.items()}
    results = hostile.verdicts(made, files)
    failed = {name: why for name, why in results.items() if why is not None}
    return {
        "kinds": len(results),
        "survived": len(results) - len(failed),
        "failed": failed,
        "errors_reported": len(report.errors),
        "second_run_changed": again.files_changed,
        "seconds": round(seconds, 1),
        "rss_before_mb": round(before, 1),
        "rss_after_mb": round(rss_mb(), 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def damaged_index(work: Path) -> dict[str, Any]:
    template = damage.indexed_folder(work / "damage")
    failed = {}
    for name in sorted(damage.DAMAGE):
        problem = damage.recovers(work / "damage", name, template)
        if problem is not None:
            failed[name] = problem
    return {
        "kinds": len(damage.DAMAGE),
        "recovered": len(damage.DAMAGE) - len(failed),
        "failed": failed,
    }


def confined_settings(work: Path) -> dict[str, Any]:
    results = confinement.run_all(work / "confinement")
    failed = {name: why for name, why in results.items() if why is not None}
    return {"cases": len(results), "held": len(results) - len(failed), "failed": failed}


def checked_settings(work: Path) -> dict[str, Any]:
    results = bad_settings.run_all(work / "settings")
    failed = {name: why for name, why in results.items() if why is not None}
    flood = next(c for c in bad_settings.CASES if c.name == "20,000 unknown keys")
    return {
        "kinds": len(results),
        "held": len(results) - len(failed),
        "failed": failed,
        "messages_per_20000_unknown_keys": flood.warnings,
    }


def starving_tcp(work: Path) -> list[dict[str, object]]:
    return [
        starvation.run(work / f"starve-{n}", attackers=n, attempts=80).to_json() for n in (8, 64)
    ]


def pdf_parsing(work: Path, big_pages: int) -> dict[str, Any]:
    """Crashing PDFs through `citeline index` and a daemon; outline reading time; what
    the parse child costs a small PDF; searches while a big PDF is read."""
    from citeline.backends.parsing import ParseChild
    from citeline.core.loaders import parse_document

    verdicts = pdf_crashes.through_index(work / "pdf")
    verdicts["daemon"] = pdf_crashes.through_daemon(work / "pdf-daemon")
    failed = {name: why for name, why in verdicts.items() if why is not None}
    child = ParseChild(seconds=600)
    small = pdfs.outline_pdf(3, deep=False, pages=1)
    path = Path("small.pdf")
    parse_document(small, path, "small.pdf")  # PyMuPDF imported here too
    child.parse(small, path, "small.pdf")
    here, there = [], []
    for _ in range(30):
        started = time.perf_counter()
        parse_document(small, path, "small.pdf")
        here.append(time.perf_counter() - started)
        started = time.perf_counter()
        child.parse(small, path, "small.pdf")
        there.append(time.perf_counter() - started)
    outlines = {}
    for pages in (20_000, 50_000):
        data = pdfs.outline_pdf(pages, deep=False, pages=pages)
        started = time.perf_counter()
        blocks = len(child.parse(data, Path("o.pdf"), "o.pdf").blocks)
        outlines[str(pages)] = {
            "seconds": round(time.perf_counter() - started, 1),
            "blocks": blocks,
            "mb": round(len(data) / 2**20, 1),
        }
    child.stop()
    return {
        "kinds": len(verdicts),
        "survived": len(verdicts) - len(failed),
        "failed": failed,
        "small_pdf_ms_in_process": round(1000 * sorted(here)[15], 1),
        "small_pdf_ms_in_child": round(1000 * sorted(there)[15], 1),
        "outline_entry_per_page": outlines,
        "search_while_reading": pdf_crashes.search_while_parsing(
            work / "pdf-search", big_pages
        ).to_json(),
    }


def big_pdf(work: Path, pages: int) -> dict[str, Any]:
    """A daemon serving 50 notes while a PDF of ``pages`` pages is copied in: a search
    every 200 ms until it is indexed."""
    return pdf_crashes.search_while_parsing(
        work / "big-pdf", pages, interval=0.2, notes=50
    ).to_json()


def full_disks(work: Path) -> dict[str, Any]:
    if not full_disk.can_mount():
        return {"skipped": "mounting a tmpfs needs root"}
    return full_disk.run(work / "full-disk").to_json()


def two_windows(work: Path) -> dict[str, Any]:
    return windows.run(work / "windows").to_json()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100, help="kill -9 rounds")
    parser.add_argument("--fuzz", type=int, default=5000, help="fuzz messages per transport")
    parser.add_argument("--churn", type=int, default=300, help="churn operations")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--big-pdf-pages", type=int, default=20_000, help="pages of the PDF searched beside"
    )
    parser.add_argument(
        "--first-index-files",
        type=int,
        default=1000,
        help="notes of the first index killed halfway (kill -9 inside a commit)",
    )
    parser.add_argument(
        "--only",
        choices=["big-pdf", "first-index"],
        help="run one section: big-pdf, searches every 200 ms beside 50 notes while a"
        " --big-pdf-pages PDF is indexed; first-index, a first index of"
        " --first-index-files notes killed halfway, then finished",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    figures: dict[str, Any] = {"load_before": os.getloadavg()}
    if args.only == "first-index":
        with tempfile.TemporaryDirectory(prefix="citeline-torture-") as tmp:
            started = time.monotonic()
            figures["first_index"] = crashes.first_index(
                Path(tmp), files=args.first_index_files, seed=args.seed
            ).to_json()
            figures["seconds"] = round(time.monotonic() - started, 1)
        figures["load_after"] = os.getloadavg()
        print(json.dumps(figures, indent=2 if args.json else None))
        return 0
    if args.only == "big-pdf":
        with tempfile.TemporaryDirectory(prefix="citeline-torture-") as tmp:
            started = time.monotonic()
            figures["big_pdf"] = big_pdf(Path(tmp), args.big_pdf_pages)
            figures["seconds"] = round(time.monotonic() - started, 1)
        figures["load_after"] = os.getloadavg()
        if args.json:
            print(json.dumps(figures, indent=2))
        else:
            _print_searches(figures["big_pdf"], "beside 50 notes, one every 200 ms")
            print(f"load average before {figures['load_before']}, after {figures['load_after']}")
        return 0
    with tempfile.TemporaryDirectory(prefix="citeline-torture-") as tmp:
        work = Path(tmp)
        started = time.monotonic()
        figures["hostile"] = hostile_files(work)
        figures["damage"] = damaged_index(work)
        figures["confinement"] = confined_settings(work)
        figures["settings"] = checked_settings(work)
        figures["starvation"] = starving_tcp(work)
        figures["pdf"] = pdf_parsing(work, args.big_pdf_pages)
        figures["full_disk"] = full_disks(work)
        figures["windows"] = two_windows(work)
        figures["fuzz"] = [
            fuzz.run(
                t,
                _keeper(work / f"fuzz-{t}"),
                work / f"fuzz-{t}" / "work",
                count=args.fuzz,
                seed=args.seed,
            ).to_json()
            for t in ("stdio", "tcp")
        ]
        figures["churn"] = churn.run(
            work / "churn", operations=args.churn, seed=args.seed
        ).to_json()
        figures["kill"] = crashes.run(work / "kill", rounds=args.rounds, seed=args.seed).to_json()
        figures["first_index"] = crashes.first_index(
            work / "first-index", files=args.first_index_files, seed=args.seed
        ).to_json()
        figures["seconds"] = round(time.monotonic() - started, 1)
    figures["load_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    _print(figures)
    return 0


def _keeper(folder: Path) -> Path:
    docs = folder / "docs"
    docs.mkdir(parents=True)
    (docs / "keeper.md").write_text("# Keeper\n\n" + hostile.PROSE)
    return docs


def _print_searches(s: dict[str, Any], how: str) -> None:
    print(
        f"searches while a {s['pages']}-page PDF is read and indexed ({s['seconds']} s; {how}):"
        f" {s['during']} answered, p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, max {s['max_ms']} ms"
    )
    slow = ", ".join(f"{ms} ms at {at} s" for at, ms in s["slowest"])
    print(f"  slowest: {slow}")
    print(
        f"  a search at any moment (from each due time): p95 {s['due_p95_ms']} ms,"
        f" max {s['due_max_ms']} ms"
    )


def _print(f: dict[str, Any]) -> None:
    h, d, k, c = f["hostile"], f["damage"], f["kill"], f["churn"]
    print(
        f"hostile files: {h['survived']}/{h['kinds']} kinds with their expected outcome"
        f" ({h['seconds']} s; RSS {h['rss_before_mb']} -> {h['rss_after_mb']} MB)"
    )
    for name, why in h["failed"].items():
        print(f"  {name}: {why}")
    print(f"damaged index: {d['recovered']}/{d['kinds']} kinds recovered")
    for name, why in d["failed"].items():
        print(f"  {name}: {why}")
    n = f["confinement"]
    print(
        f"index path from the folder's citeline.toml: {n['held']}/{n['cases']} cases with"
        " nothing outside the folder moved, renamed or written"
    )
    for name, why in n["failed"].items():
        print(f"  {name}: {why}")
    b = f["settings"]
    print(
        f"bad settings: {b['held']}/{b['kinds']} kinds a bounded warning and the default,"
        f" search and ask answering; {b['messages_per_20000_unknown_keys']} messages for"
        " 20,000 unknown keys"
    )
    for name, why in b["failed"].items():
        print(f"  {name}: {why}")
    p = f["pdf"]
    s = p["search_while_reading"]
    outlines = ", ".join(
        f"{pages} pages ({o['mb']} MB) {o['seconds']} s"
        for pages, o in p["outline_entry_per_page"].items()
    )
    print(
        f"crashing PDFs: {p['survived']}/{p['kinds']} cases cost their own file only;"
        f" a small PDF {p['small_pdf_ms_in_process']} ms in process,"
        f" {p['small_pdf_ms_in_child']} ms in the parse child;"
        f" an outline entry per page: {outlines}"
    )
    for name, why in p["failed"].items():
        print(f"  {name}: {why}")
    _print_searches(s, "one after another")
    g = f["full_disk"]
    if "skipped" in g:
        print(f"full disk: skipped ({g['skipped']})")
    else:
        print(
            f"full disk: citeline index exit {g['index_exit']} with {g['index_error_lines']}"
            f" line(s), search of the intact index answered: {g['search_while_full']},"
            f" {g['index_after']}/{g['files']} files after space returned; daemon mid-edit:"
            f" alive {g['daemon_alive']}, {g['lost']} of {g['edited']} edits lost, recovered"
            f" {g['recovered_seconds']} s after space returned; {g['tracebacks']} tracebacks"
        )
        for problem in g["problems"]:
            print(f"  {problem}")
    w = f["windows"]
    for k, one in enumerate(w["windows"]):
        role = "waiting for the lock" if one["waited"] else "indexing"
        print(
            f"two windows, {w['files']} new files ({w['seconds']} s): window {k + 1} ({role})"
            f" {one['searches']} searches, p50 {one['p50_ms']} ms, p95 {one['p95_ms']} ms,"
            f" max {one['max_ms']} ms"
        )
    print(f"  citeline search meanwhile: exit {w['cli_exit']}; said: {w['cli_line']}")
    for problem in w["problems"]:
        print(f"  {problem}")
    for t in f["starvation"]:
        print(
            f"TCP beside {t['attackers']} idle reconnecting connections: token holder served"
            f" {t['served']}/{t['attempts']} (p95 {t['p95_ms']} ms; {t['attacker_connections']}"
            f" starving connections made); SIGTERM exit {t['sigterm_exit']}, token file left:"
            f" {t['token_file_left']}, clean close: {t['clean_close']}"
        )
    for z in f["fuzz"]:
        print(
            f"fuzz ({z['transport']}): {z['messages']} messages, {z['crashes']} crashes,"
            f" {z['hangs']} hangs; health check p95 {z['health_p95_ms']} ms"
            f" (max {z['health_max_ms']}, {z['health_checks']} checks), search p95"
            f" {z['search_p95_ms']} ms; RSS {z['rss_before_mb']} -> {z['rss_after_mb']} MB;"
            f" log {z['stderr_kb']} KB, {z['tracebacks']} tracebacks; exit {z['exit_code']}"
        )
    print(
        f"churn: {c['operations']} operations in {c['seconds']} s, settled in"
        f" {c['settle_seconds']} s; {c['lost_files']} lost, {c['stale_files']} stale;"
        f" RSS {c['rss_before_mb']} -> {c['rss_after_mb']} MB"
    )
    print(
        f"kill -9: {k['consistent']}/{k['rounds']} rounds consistent ({k['kills']} kills,"
        f" {k['kills_in_commit']} inside a commit, {k['finished_before_kill']} finished first);"
        f" {k['churn_ops']} churn operations between them; end: {k['lost_files']} lost,"
        f" {k['stale_files']} stale, equal to a fresh index: {k['equal_to_fresh']}"
    )
    for problem in k["problems"]:
        print(f"  {problem}")
    first = f["first_index"]
    print(
        f"first index of {first['files']} notes killed in commit {first['killed_in_commit']}"
        f" ({first['committed_before_kill']} files committed): consistent {first['consistent']};"
        f" finished: {first['lost_files']} lost, {first['stale_files']} stale, equal to a"
        f" fresh index: {first['equal_to_fresh']}"
    )
    for problem in first["problems"]:
        print(f"  {problem}")
    print(f"load average before {f['load_before']}, after {f['load_after']}; {f['seconds']} s")


if __name__ == "__main__":
    raise SystemExit(main())
