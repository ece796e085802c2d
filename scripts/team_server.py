"""A throwaway PostgreSQL 16 + pgvector server for trying the team index locally.

    .venv/bin/python scripts/team_server.py start [DIR]   # prints the URL to use with --store
    .venv/bin/python scripts/team_server.py stop [DIR]

It is the ``pgserver`` wheel (installed by ``scripts/setup.sh --dev``): a private server
in DIR (default ~/.cache/citeline/team-server), reached over a Unix socket only, with
no password (trust for the local socket): for trying things, never for a team.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path

DEFAULT_DIR = Path(os.environ.get("CITELINE_CACHE_DIR", "~/.cache/citeline")) / "team-server"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("dir", nargs="?", default=str(DEFAULT_DIR))
    args = parser.parse_args()
    folder = Path(args.dir).expanduser().absolute()
    data = folder / "pgdata"
    if args.action == "stop":
        try:
            pid = int((data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGINT)
        except (OSError, ValueError, IndexError):
            print(f"no server running in {folder}")
            return 0
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        print(f"stopped the server in {folder}")
        return 0
    import pgserver

    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)  # as root, pgserver runs the server as its own user
    server = pgserver.get_server(data, cleanup_mode=None)
    print(server.get_uri().replace("postgres:@", "postgres@"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
