#!/usr/bin/env python3
"""The Python peer for `cargo bench -- actions`: holdpoint 0.2.0 on a file DB.

Two workloads, each on a fresh SQLite file in its own temp dir (holdpoint's
SQLiteStore always opens WAL, synchronous=NORMAL, busy_timeout=5000 ms, one
connection per thread):

  sequential  N full lifecycles, one thread: propose (call the guarded
              function) -> approve -> claim -> run a no-op -> record the
              outcome. holdpoint's approve() does approve, claim, run and
              record in one call (execute=True is its default).
  contended   M actions proposed first (not timed), then 8 approver threads,
              each with its own store handle, approve every action in order.
              The CAS winner claims, runs the no-op and records "executed";
              losers get the stored result (Decision.duplicate=True).
              Checked afterwards: exactly one run and one winner per action.

holdpoint has no quorum: the first approve() decides. Usage:
  python holdpoint_bench.py [--n 2000] [--m 500] [--json]
"""

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import holdpoint
from holdpoint import HoldPoint, SQLiteStore, Status

APPROVERS = 8


def open_peer(db: Path, runs: list[int], lock: threading.Lock):
    """One holdpoint handle on `db` and its guarded no-op `send`.

    The body only counts its runs (under a lock, so a double run across
    threads is seen). Each call of `send` proposes an action. The payload
    matches handoff's bench (including a secret that is redacted in the
    audit trail) and carries a dedup key, as handoff's proposals do.
    """
    hp = HoldPoint(SQLiteStore(db))

    @hp.guard(kind="bench", redact=["api_token"], dedup_key=lambda p: f"bench-{p['i']}")
    def send(i: int, to: str, api_token: str) -> dict:
        with lock:
            runs[i] += 1
        return {"ok": True}

    return hp, send


def sequential(n: int) -> float:
    """N propose -> approve(+claim, run, record) cycles in one thread."""
    runs, lock = [0] * n, threading.Lock()
    with tempfile.TemporaryDirectory() as tmp:
        hp, send = open_peer(Path(tmp) / "bench.db", runs, lock)
        start = time.perf_counter()
        for i in range(n):
            action = send(i=i, to="bob", api_token="x")  # propose: status pending
            decision = hp.approve(action, actor="alice")  # approve, claim, run, record
            assert not decision.duplicate and decision.action.status is Status.EXECUTED
        elapsed = time.perf_counter() - start
        hp.store.close()
    assert runs == [1] * n, "every cycle must run exactly once"
    return n / elapsed


def contended(m: int) -> float:
    """M pre-proposed actions; 8 threads each approve all of them in order."""
    runs, lock = [0] * m, threading.Lock()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        # Propose everything first (untimed) through one handle.
        hp0, send0 = open_peer(db, runs, lock)
        ids = [send0(i=i, to="bob", api_token="x").id for i in range(m)]
        # One handle (store + HoldPoint, own lease owner id) per approver.
        peers = [open_peer(db, runs, lock)[0] for _ in range(APPROVERS)]
        winners = [0] * m  # approve() calls that returned duplicate=False
        errors: list[BaseException] = []
        gate = threading.Barrier(APPROVERS + 1)

        def approver(k: int) -> None:
            hp = peers[k]
            gate.wait()  # all threads start together
            for idx, action_id in enumerate(ids):
                try:
                    decision = hp.approve(action_id, actor=f"approver{k}")
                except BaseException as exc:  # a failed run would show up here
                    errors.append(exc)
                    return
                if not decision.duplicate:
                    with lock:
                        winners[idx] += 1

        threads = [threading.Thread(target=approver, args=(k,)) for k in range(APPROVERS)]
        for t in threads:
            t.start()
        gate.wait()
        start = time.perf_counter()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        # Every action must be executed in the file, by one run and one winner.
        executed = len(hp0.store.select(status=Status.EXECUTED.value))
        for hp in [hp0, *peers]:
            hp.store.close()
    if errors:
        raise errors[0]
    assert executed == m, f"{executed} of {m} actions executed"
    assert runs == [1] * m, "a contended action ran more or less than once"
    assert winners == [1] * m, "each action must have exactly one winning approver"
    return m / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="sequential cycles")
    ap.add_argument("--m", type=int, default=500, help="contended actions")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    seq = sequential(args.n)
    con = contended(args.m)
    peer = f"holdpoint {holdpoint.__version__}"
    if args.json:
        print(json.dumps({
            "peer": peer,
            "sequential_cycles_per_s": round(seq, 1),
            "contended_actions_per_s": round(con, 1),
        }))
    else:
        print(f"{peer}, Python {sys.version.split()[0]}")
        print(f"sequential: propose -> approve -> claim -> complete ({args.n} cycles): {seq:,.0f} cycles/s")
        print(f"contended: {APPROVERS} approver threads, separate handles ({args.m} actions, "
              f"exactly one run each): {con:,.0f} actions/s")


if __name__ == "__main__":
    main()
