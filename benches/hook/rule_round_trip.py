"""Hook round trip with a [[rule]] deciding at once:
runs `handoff hook claude` N times with a PermissionRequest on stdin that a
rule approves, from process start to its answer on stdout, and prints
p50 / p99. Usage: python3 benches/hook/rule_round_trip.py target/release/handoff 200
"""
import json
import os
import subprocess
import sys
import tempfile
import time

binary, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
d = tempfile.mkdtemp()
db, cfg = os.path.join(d, "h.db"), os.path.join(d, "h.toml")
with open(cfg, "w") as f:
    f.write('[[rule]]\nname = "reads"\nkind = "claude.Bash"\n'
            'when = [{ pointer = "/command", equals = "ls" }]\ndecide = "approve"\n')
env = dict(os.environ, HANDOFF_DB=db, HANDOFF_CONFIG=cfg, HANDOFF_LOG="warn")
env.pop("HANDOFF_URL", None)
subprocess.run([binary, "init"], env=env, capture_output=True, check=True)


def event(i):
    return json.dumps({
        "session_id": "s", "transcript_path": "/t", "cwd": "/w",
        "permission_mode": "default", "hook_event_name": "PermissionRequest",
        "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": f"t{i}",
    }).encode()


times = []
for i in range(n):
    start = time.perf_counter()
    p = subprocess.run([binary, "hook", "claude"], input=event(i), env=env, capture_output=True)
    times.append((time.perf_counter() - start) * 1e3)
    if p.returncode != 0 or b'"allow"' not in p.stdout:
        sys.exit(f"run {i}: exit {p.returncode}, stdout {p.stdout!r}, stderr {p.stderr!r}")
times.sort()
print(f"hook claude, a [[rule]] deciding at once, {n} runs: "
      f"p50 {times[n // 2]:.1f} ms, p99 {times[max(0, int(n * 0.99) - 1)]:.1f} ms")
