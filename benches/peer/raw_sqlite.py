#!/usr/bin/env python3
"""The floor for the "single winning transition" figure: a raw SQLite
loop in Python's `sqlite3` (SQLite called in the calling thread), each
iteration one transaction that changes a row and appends a log row:

    BEGIN; UPDATE t SET n = n + 1 WHERE id = ?; INSERT INTO log …; COMMIT

on a fresh file in WAL with synchronous=NORMAL, the settings handoff and
holdpoint use. Compare with the `actions` row "a single winning
transition" of `cargo bench -- actions`, run right before or after.

Usage: python3 raw_sqlite.py [--n 20000]
"""

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path


def raw_rate(path: Path, n: int) -> float:
    """Transactions per second of the loop on a fresh file at `path`."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    db.execute("CREATE TABLE log (seq INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER, at REAL, what TEXT)")
    db.executemany("INSERT INTO t (id, n) VALUES (?, 0)", [(i,) for i in range(1000)])
    start = time.perf_counter()
    for i in range(n):
        db.execute("BEGIN")
        db.execute("UPDATE t SET n = n + 1 WHERE id = ?", (i % 1000,))
        db.execute("INSERT INTO log (id, at, what) VALUES (?, ?, 'approved')", (i % 1000, time.time()))
        db.execute("COMMIT")
    rate = n / (time.perf_counter() - start)
    db.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    n = ap.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        rate = raw_rate(Path(tmp) / "raw.db", n)
    print(f"raw sqlite3 BEGIN/UPDATE/INSERT/COMMIT ({n} transactions): {rate:,.0f} transitions/s")


if __name__ == "__main__":
    main()
