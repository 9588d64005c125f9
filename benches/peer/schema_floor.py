#!/usr/bin/env python3
"""How fast handoff's own winning transition can be at best: handoff's
approve statement (read from src/store/actions/transitions.rs), on a
database handoff created (its schema, triggers and indexes), run by
Python's `sqlite3` in the calling thread, so no driver, thread hand-off or
write turn is counted. Beside it, in the same run, the raw loop of
`raw_sqlite.py` (BEGIN; UPDATE; INSERT; COMMIT on two bare tables), and
the same approve statement on copies of the database with parts of what
it writes removed, to show what each part costs.

Why: issue 11 asks for a single winning transition at 50 % of the raw
loop. Each handoff approval also writes its approvals row, its audit row,
its event, the per-status counters and the actions table's indexes in the
same transaction; this measures the ceiling those writes leave.

Usage: python3 schema_floor.py path/to/handoff [--n 2000]
The actions are proposed through a short-lived `handoff serve` (HTTP on
loopback, `open = true`), then the daemon stops and the timing begins.
"""

import argparse
import json
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from raw_sqlite import raw_rate

HERE = Path(__file__).resolve().parent
TRANSITIONS = HERE.parent.parent / "src/store/actions/transitions.rs"
PRAGMAS = ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON")


def approve_statement() -> str:
    """The guarded UPDATE of `approve_in`, returning every column."""
    text = TRANSITIONS.read_text()
    m = re.search(r'async fn approve_in.*?format!\(\s*"(.*?)"\s*\);', text, re.S)
    if not m:
        raise SystemExit(f"approve_in's statement not found in {TRANSITIONS}")
    return m.group(1).replace("{COLUMNS}", "*").split(";")[0]


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def propose(binary: str, db: Path, n: int) -> list[str]:
    """`n` pending actions, quorum 1, proposed through the daemon's API."""
    subprocess.run([binary, "--db", str(db), "init"], check=True, capture_output=True)
    port = free_port()
    config = db.parent / "handoff.toml"
    config.write_text(f'[http]\nlisten = "127.0.0.1:{port}"\nopen = true\n')
    daemon = subprocess.Popen(
        [binary, "serve", "--db", str(db), "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/healthz")
                break
            except OSError:
                time.sleep(0.1)
        ids = []
        for i in range(n):
            body = {"kind": "floor", "summary": "floor", "args": {"i": i}, "approvals_required": 1}
            req = urllib.request.Request(
                f"{base}/v1/actions", json.dumps(body).encode(), {"Content-Type": "application/json"}
            )
            ids.append(json.load(urllib.request.urlopen(req))["action"]["id"])
        return ids
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()


def approve_rate(db: Path, ids: list[str], drops: list[str]) -> float:
    """Approve every action once, each statement alone in autocommit (as
    handoff's lone writer runs it), after dropping `drops`."""
    conn = sqlite3.connect(db, isolation_level=None)
    for p in PRAGMAS:
        conn.execute("PRAGMA " + p)
    for d in drops:
        conn.execute(d)
    sql = approve_statement()
    now = int(time.time() * 1000)
    start = time.perf_counter()
    for id in ids:
        # ?1 id, ?2 approver, ?3 now, ?4 patch, ?5 outright, ?6 effective
        # args, ?7 expected args, ?8 the early-quorum fault, ?9 channel,
        # ?10 patch details
        rows = conn.execute(sql, (id, "alice", now, None, 0, None, None, 0, "cli", None)).fetchall()
        if len(rows) != 1:
            raise SystemExit(f"approving {id} did not win")
    rate = len(ids) / (time.perf_counter() - start)
    approved = conn.execute("SELECT count(*) FROM actions WHERE status = 'approved'").fetchone()[0]
    conn.close()
    if approved != len(ids):
        raise SystemExit(f"{approved} of {len(ids)} actions approved")
    return rate


CASES = [
    ("handoff's approve, as shipped", []),
    ("without the per-status counters trigger", ["DROP TRIGGER action_counts_update"]),
    (
        "without the transition log trigger (approvals, audit, event rows)",
        ["DROP TRIGGER actions_log_transition"],
    ),
    ("without both triggers", ["DROP TRIGGER action_counts_update", "DROP TRIGGER actions_log_transition"]),
    (
        "without both triggers and the actions table's secondary indexes",
        [
            "DROP TRIGGER action_counts_update",
            "DROP TRIGGER actions_log_transition",
            "DROP INDEX actions_status",
            "DROP INDEX actions_updated",
            "DROP INDEX actions_project_pending",
            "DROP INDEX actions_dedup_live",
        ],
    ),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("handoff", help="the handoff binary that creates the database")
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "floor.db"
        ids = propose(args.handoff, db, args.n)
        raw = raw_rate(Path(tmp) / "raw.db", 20000)
        print(f"raw sqlite3 BEGIN/UPDATE/INSERT/COMMIT (20000 transactions): {raw:,.0f} transitions/s")
        for i, (name, drops) in enumerate(CASES):
            copy = Path(tmp) / f"case{i}.db"
            shutil.copy(db, copy)
            rate = approve_rate(copy, ids, drops)
            print(f"{name} ({args.n} approvals, in-thread): {rate:,.0f}/s = {100 * rate / raw:.0f} % of raw")


if __name__ == "__main__":
    main()
