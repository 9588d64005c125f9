#!/usr/bin/env python3
"""How fast handoff's own winning transition can be at best: handoff's
approval (its UPDATE read from src/store/actions/approval.rs), on a
database handoff created (its schema, triggers and indexes), run by
Python's `sqlite3` in the calling thread, so no driver, thread hand-off or
write turn is counted. Beside it, in the same run, the raw loop of
`raw_sqlite.py` (BEGIN; UPDATE; INSERT; COMMIT on two bare tables), and
the same approve statement on copies of the database with parts of what
it writes removed, to show what each part costs.

With `--cycle-sql FILE` (the JSON `cargo run --example cycle_sql` prints:
the SQLite text of the cycle's four writes exactly as the store sends
them) it also runs the whole lifecycle the same way — proposal, approval,
claim, completion, each its own one-call savepoint as handoff's lone
writer runs it — on a fresh database, for the ceiling of the sequential
cycle that `cargo bench -- actions` and holdpoint_bench.py measure.

Why: a single winning transition is compared with the raw loop, and the
sequential cycle with holdpoint's. Each handoff approval also writes its
approvals row, its event (the audit entry) and the actions table's indexes
in the same transaction; this measures the ceiling those writes leave.

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


def approve_statements() -> list[str]:
    """The approval as SQLite runs it in one call (src/store/actions/
    logged.rs): the guarded UPDATE (read from approval.rs), the approvals
    row and the event that is its audit entry, each guarded by
    `changes() = 1`. The two inserts mirror what `logged` renders for the
    approval (no patch: the patch's entry is left out)."""
    text = APPROVAL.read_text()
    change = re.search(r'let change = "(UPDATE actions.*?)";', text, re.S)
    details = re.search(r'let details =\s*s\.object\("(.*?)"\);', text, re.S)
    if not change or not details:
        raise SystemExit(f"the approval's statement not found in {APPROVAL}")
    won = "FROM actions WHERE id = $1 AND changes() = 1"
    sql = [
        change.group(1) + " RETURNING *",
        f"INSERT INTO action_approvals (action_id, approver, at) SELECT id, $2, updated_at {won}",
        "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit) "
        "SELECT updated_at, 'action.' || CASE status WHEN 'approved' THEN 'approved' ELSE 'approval_added' END, "
        "'action', id, $2, $9, project, session, json_set(d, '$.status', status, '$.kind', kind, "
        f"'$.summary', summary), d FROM (SELECT *, json_object({details.group(1)}) AS d {won})",
    ]
    # `$N` as a name Python's `sqlite3` binds from a mapping.
    return [re.sub(r"\$(\d+)", r":p\1", q) for q in sql]


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


def approve_rate(db: Path, ids: list[str], drops: list[str], keep: int) -> float:
    """Approve every action once, each approval one transaction of its
    first `keep` statements (as handoff's lone writer runs it), after
    dropping `drops`."""
    conn = sqlite3.connect(db, isolation_level=None)
    for p in PRAGMAS:
        conn.execute("PRAGMA " + p)
    for d in drops:
        for sql in d(conn) if callable(d) else [d]:
            conn.execute(sql)
    sql = approve_statements()[:keep]
    now = int(time.time() * 1000)
    start = time.perf_counter()
    for id in ids:
        # ?1 id, ?2 approver, ?3 now, ?4 patch, ?5 outright, ?6 effective
        # args, ?7 expected args, ?8 the early-quorum fault, ?9 channel,
        # ?10 patch details; each statement gets the numbers it names.
        values = (id, "alice", now, None, 0, None, None, 0, "cli", None)
        conn.execute("BEGIN")
        rows = []
        for q in sql:
            used = {int(n) for n in re.findall(r":p(\d+)", q)}
            rows += conn.execute(q, {f"p{n}": values[n - 1] for n in used}).fetchall()
        conn.execute("COMMIT")
        if len(rows) != 1:
            raise SystemExit(f"approving {id} did not win")
    rate = len(ids) / (time.perf_counter() - start)
    approved = conn.execute("SELECT count(*) FROM actions WHERE status = 'approved'").fetchone()[0]
    conn.close()
    if approved != len(ids):
        raise SystemExit(f"{approved} of {len(ids)} actions approved")
    return rate


def secondary_indexes(conn: sqlite3.Connection) -> list[str]:
    """DROP statements for every named index on `actions`."""
    names = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actions' AND sql IS NOT NULL"
    ).fetchall()
    return [f"DROP INDEX {n}" for (n,) in names]


def cycle_rate(binary: str, db: Path, statements: dict, n: int) -> float:
    """`n` whole cycles in-thread: each of the four writes is the store's
    own call text (a savepoint and its statements), run statement by
    statement on one autocommit connection, as the write turn runs it."""
    subprocess.run([binary, "init", "--db", str(db)], check=True, capture_output=True)
    conn = sqlite3.connect(db, isolation_level=None)
    for p in PRAGMAS:
        conn.execute("PRAGMA " + p)
    calls = {
        name: [re.sub(r"\$(\d+)", r":p\1", q) for q in sql.split(";\n") if q.strip(" ;\n")]
        for name, sql in statements.items()
    }

    def run(name: str, values: tuple) -> int:
        rows = 0
        for q in calls[name]:
            used = {int(k) for k in re.findall(r":p(\d+)", q)}
            rows += len(conn.execute(q, {f"p{k}": values[k - 1] for k in used}).fetchall())
        return rows

    start = time.perf_counter()
    for i in range(n):
        id, now = f"act_floor{i:08}", int(time.time() * 1000)
        args = json.dumps({"i": i, "to": "bob", "api_token": "x"})
        # The proposal's $1–$21 (see `Proposal::insert`).
        run("propose", (id, "bench", "benchmark cycle", args, f"fp{i}", f"bench-{i}", None,
                        "reject", 1, "[]", None, None, "bench", "", "", now, "cli", "{}", 0,
                        None, None))
        # The approval's $1–$10 (`Approval::bind`): won, so one row.
        if run("approve", (id, "alice", now, None, 0, None, None, 0, "cli", None)) != 1:
            raise SystemExit(f"approving {id} did not win")
        until = now + 60_000
        run("claim", (id, "exec", until, now, 0, 0, str(until)))
        run("complete", (id, "exec", "executed", '{"ok":true}', None, now))
    rate = n / (time.perf_counter() - start)
    done = conn.execute("SELECT count(*) FROM actions WHERE status = 'executed'").fetchone()[0]
    events = conn.execute("SELECT count(*) FROM events WHERE entity_kind = 'action'").fetchone()[0]
    conn.close()
    if (done, events) != (n, 4 * n):
        raise SystemExit(f"{done} of {n} cycles executed, {events} action events")
    return rate


CASES = [
    ("handoff's approve, as shipped (the UPDATE, the approvals row, the event)", [], 3),
    ("the guarded UPDATE alone (no approvals row, no event)", [], 1),
    ("the UPDATE alone, without the actions table's secondary indexes", [secondary_indexes], 1),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("handoff", help="the handoff binary that creates the database")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--cycle-sql", help="the JSON of `cargo run --example cycle_sql`: also "
                    "run the whole cycle in-thread")
    ap.add_argument("--dump", help="write the database, the approval's statements and the ids "
                    "into this directory for writer_thread/ and stop")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "floor.db"
        ids = propose(args.handoff, db, args.n)
        if args.dump:
            out = Path(args.dump)
            out.mkdir(parents=True, exist_ok=True)
            shutil.copy(db, out / "floor.db")
            sql = [re.sub(r":p(\d+)", r"?\1", q) for q in approve_statements()]
            (out / "statements.json").write_text(json.dumps(sql))
            (out / "ids.json").write_text(json.dumps(ids))
            return
        raw = raw_rate(Path(tmp) / "raw.db", 20000)
        print(f"raw sqlite3 BEGIN/UPDATE/INSERT/COMMIT (20000 transactions): {raw:,.0f} transitions/s")
        for i, (name, drops, keep) in enumerate(CASES):
            copy = Path(tmp) / f"case{i}.db"
            shutil.copy(db, copy)
            rate = approve_rate(copy, ids, drops, keep)
            print(f"{name} ({args.n} approvals, in-thread): {rate:,.0f}/s = {100 * rate / raw:.0f} % of raw")
        if args.cycle_sql:
            statements = json.loads(Path(args.cycle_sql).read_text())
            rate = cycle_rate(args.handoff, Path(tmp) / "cycle.db", statements, args.n)
            print(f"the whole cycle, the store's four calls in-thread ({args.n} cycles): "
                  f"{rate:,.0f} cycles/s")


if __name__ == "__main__":
    main()
