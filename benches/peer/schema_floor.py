#!/usr/bin/env python3
"""How fast handoff's own winning transition can be at best: handoff's
approve statement (read from src/store/actions/transitions.rs), on a
database handoff created (its schema, triggers and indexes), run by
Python's `sqlite3` in the calling thread, so no driver, thread hand-off or
write turn is counted. Beside it, in the same run, the raw loop of
`raw_sqlite.py` (BEGIN; UPDATE; INSERT; COMMIT on two bare tables), and
the same approve statement on copies of the database with parts of what
it writes removed, to show what each part costs.

It also runs the whole lifecycle the same way — handoff's proposal
INSERT, approve, claim and completion statements, one after the other on
a fresh database — for the ceiling of the sequential cycle.

Why: issue 11 asks for a single winning transition at 50 % of the raw
loop, and a sequential cycle at 5× holdpoint's. Each handoff approval also writes its approvals row, its audit row,
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
EXECUTION = HERE.parent.parent / "src/store/actions/execution.rs"
APPROVAL = HERE.parent.parent / "src/store/actions/approval.rs"
PRAGMAS = ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON")


def split_args(text: str) -> list[str]:
    """The top-level, comma-separated arguments in `text`."""
    out, depth, cur, quoted, i = [], 0, "", False, 0
    while i < len(text):
        c = text[i]
        if quoted:
            cur += c
            if c == "\\":
                cur += text[i + 1]
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
            cur += c
        elif c in "([":
            depth += 1
            cur += c
        elif c in ")]":
            depth -= 1
            cur += c
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return out


def render(expr: str) -> str:
    """A Rust expression building SQL (a string literal, `format!`,
    `s.object(..)`, `s.json(..)`), as SQLite's spelling renders it."""
    expr = expr.strip().lstrip("&")
    for call, (before, after) in {"s.object(": ("json_object(", ")"), "s.json(": ("json(", ")")}.items():
        if expr.startswith(call):
            return before + render(expr[len(call) : -1]) + after
    if expr.startswith("format!("):
        template, *args = split_args(expr[len("format!(") : -1])
        text = render(template)
        for a in args:
            text = text.replace("{}", render(a), 1)
        return text
    if expr.startswith('"'):
        return expr[1:-1].replace('\\"', '"').replace("{COLUMNS}", "*")
    raise SystemExit(f"cannot render {expr[:60]}")


def statement(path: Path, name: str) -> str:
    """The statement `name` (a `static NAME: Sql` or `fn name`) in `path`,
    returning every column."""
    text = path.read_text()
    m = re.search(rf"(?:static {name}: Sql = Sql::new\(\|_?s?\| \{{|fn {name}\(.*?\{{)\s*(format!\(.*?\n    \))", text, re.S)
    if not m:
        raise SystemExit(f"{name}'s statement not found in {path}")
    # `$N` is a named parameter to SQLite, numbered by first appearance;
    # `?N` is the N-th, as sqlx binds them.
    return re.sub(r"\$(\d+)", r"?\1", render(m.group(1)).split(";")[0])


def approve_statement() -> str:
    """The guarded UPDATE of the approval."""
    return statement(APPROVAL, "approve_sql")


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
        for sql in d(conn) if callable(d) else [d]:
            conn.execute(sql)
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


def cycle_rate(db: Path, n: int) -> float:
    """The whole lifecycle in-thread, each statement alone in autocommit:
    handoff's proposal INSERT, approve, claim and completion statements
    (their triggers write the audit rows, events, approvals and counters)."""
    conn = sqlite3.connect(db, isolation_level=None)
    for p in PRAGMAS:
        conn.execute("PRAGMA " + p)
    propose = statement(TRANSITIONS, "INSERT")
    approve = approve_statement()
    claim = statement(EXECUTION, "CLAIM")
    complete = statement(EXECUTION, "COMPLETE")
    start = time.perf_counter()
    for i in range(n):
        now = int(time.time() * 1000)
        id = f"floor{i:027d}"
        args = json.dumps({"i": i}, separators=(",", ":"))
        details = json.dumps({"kind": "floor", "summary": "floor", "args": {"i": i}})
        # ?1 id ?2 kind ?3 summary ?4 args ?5 fingerprint ?6 dedup key ?7
        # expires_at ?8 on_expire ?9 approvals ?10 redact keys ?11 exec ?12
        # verify ?13 proposer ?14 project ?15 session ?16 now ?17 channel ?18 details
        # ?19 not by proposer ?20 escalation ?21 escalate_at
        conn.execute(
            propose,
            (id, "floor", "floor", args, f"fp{i}", f"k{i}", None, "expire", 1, "[]",
             None, None, "bench", "", "", now, "cli", details, 0, None, None),
        ).fetchall()
        conn.execute(approve, (id, "alice", now, None, 0, None, None, 0, "cli", None)).fetchall()
        # ?1 id ?2 owner ?3 lease_until ?4 now ?5 double-claim fault ?6
        # skip-event fault ?7 lease_until as text
        conn.execute(claim, (id, "exec", now + 60000, now, 0, 0, "2026-12-01T00:00:00Z")).fetchall()
        # ?1 id ?2 owner ?3 status ?4 result ?5 error ?6 now
        rows = conn.execute(complete, (id, "exec", "executed", '{"ok":true}', None, now)).fetchall()
        if len(rows) != 1:
            raise SystemExit(f"cycle {i} did not complete")
    rate = n / (time.perf_counter() - start)
    done = conn.execute("SELECT count(*) FROM actions WHERE status = 'executed'").fetchone()[0]
    conn.close()
    if done != n:
        raise SystemExit(f"{done} of {n} cycles executed")
    return rate


COUNTERS = ["DROP TRIGGER IF EXISTS action_counts_update"]
TRANSITION = ["DROP TRIGGER actions_log_transition"]


def secondary_indexes(conn: sqlite3.Connection) -> list[str]:
    """DROP statements for every named index on `actions`."""
    names = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actions' AND sql IS NOT NULL"
    ).fetchall()
    return [f"DROP INDEX {n}" for (n,) in names]


CASES = [
    ("handoff's approve, as shipped", []),
    ("without the per-status counters trigger (if any)", COUNTERS),
    ("without the transition log trigger (approvals, audit, event rows)", TRANSITION),
    ("without both triggers", COUNTERS + TRANSITION),
    ("without both triggers and the actions table's secondary indexes", COUNTERS + TRANSITION + [secondary_indexes]),
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
        empty = Path(tmp) / "cycles.db"
        subprocess.run([args.handoff, "--db", str(empty), "init"], check=True, capture_output=True)
        cycles = cycle_rate(empty, args.n)
        print(
            f"handoff's propose → approve → claim → complete statements ({args.n} cycles, in-thread): "
            f"{cycles:,.0f} cycles/s"
        )
        for i, (name, drops) in enumerate(CASES):
            copy = Path(tmp) / f"case{i}.db"
            shutil.copy(db, copy)
            rate = approve_rate(copy, ids, drops)
            print(f"{name} ({args.n} approvals, in-thread): {rate:,.0f}/s = {100 * rate / raw:.0f} % of raw")


if __name__ == "__main__":
    main()
