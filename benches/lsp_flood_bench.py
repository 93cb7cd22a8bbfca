#!/usr/bin/env python3
"""The sidecar under load, in one run:

    python3 benches/lsp_flood_bench.py [BRANCHES] [FLOOD] [ROUNDS]

- large messages: the round-trip of one `slipway.list` request padded to 5, 10,
  20 and 50 MB (the framing must be linear: 27 s for 50 MB when it was not);
- `slipway.status` while FLOOD (default 2000) `slipway.branches`/`slipway.list`
  requests are pipelined at once on a BRANCHES-branch repository (default 500):
  a status request every 20 ms until the flood is answered, its p50 and p99,
  against the same status requests on the idle sidecar. The target is a p99
  under 50 ms: a status line never waits for git work.

Rounds of the idle and flooded measurements are interleaved (the disk is noisy);
prints medians and the spread (min-max) over ROUNDS rounds.
"""
import json, os, subprocess, sys, tempfile, threading, time, statistics

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture import SLIPWAY, branchy_repo, build  # noqa: E402

BRANCHES = int(sys.argv[1]) if len(sys.argv) > 1 else 500
FLOOD = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
build()
work, env, repo = branchy_repo(BRANCHES, "slipway-flood-bench-")


class Sidecar:
    """A sidecar with a reader thread that timestamps every answer by id."""

    def __init__(self):
        self.p = subprocess.Popen([SLIPWAY, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=repo)
        self.next_id = 0
        self.answers = {}
        self.cond = threading.Condition()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.p.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            if "method" in msg and "id" in msg:
                self.write({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                continue
            if "id" in msg:
                with self.cond:
                    self.answers[msg["id"]] = (time.perf_counter(), msg)
                    self.cond.notify_all()

    def write(self, obj):
        body = json.dumps(obj).encode()
        with self.lock:
            self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.p.stdin.flush()

    def send(self, method, params):
        self.next_id += 1
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, id, timeout=120):
        with self.cond:
            if not self.cond.wait_for(lambda: id in self.answers, timeout):
                raise RuntimeError(f"no answer to {id}")
            return self.answers[id]

    def close(self):
        try:
            self.wait(self.send("shutdown", None), 10)
            self.write({"jsonrpc": "2.0", "method": "exit"})
            self.p.wait(timeout=5)
        except Exception:
            self.p.kill()


INIT = {"processId": None, "rootUri": None, "capabilities": {}, "workspaceFolders": [{"uri": "file://" + repo, "name": "repo"}]}
STATUS = {"command": "slipway.status", "arguments": [{"path": repo}]}


def execute(s, params):
    return s.send("workspace/executeCommand", params)


def statuses(s, until, every=0.02):
    """Status round-trips, one every `every` seconds, while `until()` is false."""
    times = []
    while not until():
        t0 = time.perf_counter()
        t1, answer = s.wait(execute(s, STATUS))
        assert "result" in answer, answer
        times.append(t1 - t0)
        time.sleep(max(0.0, every - (time.perf_counter() - t0)))
    return times


def p(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


s = Sidecar()
s.wait(s.send("initialize", INIT))
s.write({"jsonrpc": "2.0", "method": "initialized", "params": {}})
s.wait(execute(s, STATUS))

sizes = [5, 10, 20, 50]
big = {mb: [] for mb in sizes}
idle_p50, idle_p99, flood_p50, flood_p99, flood_secs, inside_p99 = [], [], [], [], [], []
for _ in range(ROUNDS):
    for mb in sizes:
        pad = "x" * (mb << 20)
        t0 = time.perf_counter()
        t1, answer = s.wait(execute(s, {"command": "slipway.list", "arguments": [{"root": repo, "padding": pad}]}))
        assert "result" in answer, str(answer)[:200]
        big[mb].append(t1 - t0)
    # Idle: the same number of status requests a flood round takes, about.
    n = [0]
    idle = statuses(s, lambda: (n.__setitem__(0, n[0] + 1) or n[0] > 100))
    idle_p50.append(p(idle, 0.5))
    idle_p99.append(p(idle, 0.99))
    # The flood: every request written at once, then status requests until all are answered.
    t0 = time.perf_counter()
    ids = []
    for i in range(FLOOD):
        command = "slipway.branches" if i % 2 == 0 else "slipway.list"
        ids.append(execute(s, {"command": command, "arguments": [{"root": repo}]}))
    flooded = statuses(s, lambda: all(i in s.answers for i in ids))
    for i in ids:
        s.wait(i)
    flood_secs.append(time.perf_counter() - t0)
    flood_p50.append(p(flooded, 0.5))
    flood_p99.append(p(flooded, 0.99))
    # Status requests inside the flood: every tenth pipelined request is one,
    # timed from when it was written.
    written = {}
    ids = []
    for i in range(FLOOD):
        if i % 10 == 5:
            t = time.perf_counter()
            written[execute(s, STATUS)] = t
        else:
            command = "slipway.branches" if i % 2 == 0 else "slipway.list"
            ids.append(execute(s, {"command": command, "arguments": [{"root": repo}]}))
    inside = [s.wait(i)[0] - t for i, t in written.items()]
    for i in ids:
        s.wait(i)
    inside_p99.append(p(inside, 0.99))


def rss_kb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])


s.close()

# Memory: a fresh sidecar, idle; then 1,000 status/list/branches requests
# (pipelined, answered); its resident size once it has answered them all.
m = Sidecar()
m.wait(m.send("initialize", INIT))
m.write({"jsonrpc": "2.0", "method": "initialized", "params": {}})
m.wait(execute(m, STATUS))
time.sleep(1)
idle_rss = rss_kb(m.p.pid)
ids = []
for i in range(1000):
    command = ("slipway.status", "slipway.list", "slipway.branches")[i % 3]
    args = {"path": repo} if command == "slipway.status" else {"root": repo}
    ids.append(execute(m, {"command": command, "arguments": [args]}))
for i in ids:
    m.wait(i)
time.sleep(1)
after_rss, peak_rss = rss_kb(m.p.pid), rss_kb(m.p.pid, "VmHWM")
m.close()

# `slipway.list` with 200 worktrees, from the watched cache.
for i in range(200):
    subprocess.run([SLIPWAY, "--json", "worktree", "create", "--branch", f"wt/{i:03d}"], cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)
w = Sidecar()
w.wait(w.send("initialize", INIT))
w.write({"jsonrpc": "2.0", "method": "initialized", "params": {}})
LIST = {"command": "slipway.list", "arguments": [{"root": repo}]}
list_times = []
for _ in range(21):
    t0 = time.perf_counter()
    t1, answer = w.wait(execute(w, LIST))
    assert len(answer["result"]["worktrees"]) == 200, str(answer)[:300]
    list_times.append(t1 - t0)
w.close()

ms = lambda x: x * 1000
med = statistics.median
spread = lambda xs: f"{ms(min(xs)):.1f}-{ms(max(xs)):.1f}"
print()
print(f"fixture: {BRANCHES} branches; flood of {FLOOD} requests; {ROUNDS} interleaved rounds, median (min-max)")
print()
print("| benchmark | median | spread | target |")
print("| --- | --- | --- | --- |")
for mb in sizes:
    target = "< 2000 ms" if mb == 50 else ""
    print(f"| `slipway.list` padded to {mb} MB, round-trip | {ms(med(big[mb])):.0f} ms | {spread(big[mb])} ms | {target} |")
print(f"| `slipway.status` p50, idle sidecar | {ms(med(idle_p50)):.1f} ms | {spread(idle_p50)} ms | |")
print(f"| `slipway.status` p99, idle sidecar | {ms(med(idle_p99)):.1f} ms | {spread(idle_p99)} ms | |")
print(f"| `slipway.status` p50 during the flood | {ms(med(flood_p50)):.1f} ms | {spread(flood_p50)} ms | |")
print(f"| `slipway.status` p99 during the flood | {ms(med(flood_p99)):.1f} ms | {spread(flood_p99)} ms | < 50 ms |")
print(f"| p99 during the flood / p99 idle | {med(flood_p99) / med(idle_p99):.2f} | | |")
print(f"| `slipway.status` p99, status requests inside the flood (every tenth), from written to answered | {ms(med(inside_p99)):.1f} ms | {spread(inside_p99)} ms | ≤ 50 ms |")
print(f"| sidecar RSS idle / after 1,000 status, list and branches requests (peak) | {idle_rss / 1024:.1f} / {after_rss / 1024:.1f} MB ({peak_rss / 1024:.1f}) | | ≤ 20 MB |")
print(f"| `slipway.list` with 200 worktrees, from the cache (the first call reads them all: {ms(list_times[0]):.0f} ms) | {ms(med(list_times[1:])):.1f} ms | {spread(list_times[1:])} ms | ≤ 50 ms |")
print(f"| the whole flood answered | {med(flood_secs):.1f} s | {min(flood_secs):.1f}-{max(flood_secs):.1f} s | |")
