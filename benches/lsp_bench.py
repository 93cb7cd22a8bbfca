#!/usr/bin/env python3
"""Sidecar benchmarks, against the git CLI in the same run.

    python3 benches/lsp_bench.py [BRANCHES] [ROUNDS] [FILES] [WORKTREES]

- cold start: spawn `slipway lsp` until the `initialize` reply, against spawning
  `git rev-parse --git-dir` in the same repository;
- `slipway.branches` round-trip on BRANCHES branches (default 5000) in a warm
  sidecar, against `git for-each-ref` with the same fields;
- idle RSS of the sidecar one second after `initialized`;
- idle CPU of a sidecar watching WORKTREES worktrees of a FILES-file repository
  (defaults 5 and 5000), against what polling `git status` in each of them twice a
  second (the sidecar's refresh rate) costs.
Prints a Markdown table of medians.
"""
import json, os, subprocess, sys, tempfile, time, statistics

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture import SLIPWAY, branchy_repo, build  # noqa: E402

BRANCHES = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 15
FILES = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
WORKTREES = int(sys.argv[4]) if len(sys.argv) > 4 else 5
build()
work, env, repo = branchy_repo(BRANCHES, "slipway-lsp-bench-")
subprocess.run(["git", "pack-refs", "--all"], cwd=repo, check=True, env=env)


class Sidecar:
    def __init__(self, cwd=None):
        self.p = subprocess.Popen([SLIPWAY, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd or repo)
        self.next_id = 0

    def send(self, obj):
        body = json.dumps(obj).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()

    def read(self):
        length = 0
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("sidecar closed stdout")
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.p.stdout.read(length))

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            msg = self.read()
            if msg.get("id") == self.next_id and "method" not in msg:
                return msg

    def close(self):
        try:
            self.request("shutdown", None)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.p.wait(timeout=5)
        except Exception:
            self.p.kill()


INIT = {"processId": None, "rootUri": None, "capabilities": {}, "workspaceFolders": [{"uri": "file://" + repo, "name": "repo"}]}

cold, git_spawn = [], []
for _ in range(ROUNDS):
    t0 = time.perf_counter()
    s = Sidecar()
    s.request("initialize", INIT)
    t1 = time.perf_counter()
    s.close()
    t2 = time.perf_counter()
    subprocess.run(["git", "rev-parse", "--git-dir"], cwd=repo, env=env, stdout=subprocess.DEVNULL, check=True)
    t3 = time.perf_counter()
    cold.append(t1 - t0)
    git_spawn.append(t3 - t2)

s = Sidecar()
s.request("initialize", INIT)
s.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
time.sleep(1.0)
with open(f"/proc/{s.p.pid}/status") as f:
    rss_kb = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
branches, git_ref = [], []
fmt = "%(refname) %(objectname) %(subject) %(committerdate:unix) %(HEAD) %(upstream:short)"
for _ in range(ROUNDS):
    t0 = time.perf_counter()
    answer = s.request("workspace/executeCommand", {"command": "slipway.branches", "arguments": [{"root": repo}]})
    t1 = time.perf_counter()
    subprocess.run(["git", "for-each-ref", "--format=" + fmt, "refs/heads", "refs/remotes"], cwd=repo, env=env, stdout=subprocess.DEVNULL, check=True)
    t2 = time.perf_counter()
    branches.append(t1 - t0)
    git_ref.append(t2 - t1)
listed = len(answer["result"]["branches"])
s.close()

# Idle CPU: a repository of FILES tracked files with WORKTREES slipway worktrees.
big = os.path.join(work, "big")
subprocess.run(["git", "init", "-q", big], check=True, env=env)
for d in range(100):
    os.makedirs(os.path.join(big, "src", f"d{d}"), exist_ok=True)
for i in range(FILES):
    with open(os.path.join(big, "src", f"d{i % 100}", f"f{i}.txt"), "w") as f:
        f.write(f"file {i}\n")
subprocess.run(["git", "add", "-A"], cwd=big, check=True, env=env)
subprocess.run(["git", "commit", "-qm", "fixture"], cwd=big, check=True, env=env)
trees = []
for w in range(WORKTREES):
    out = subprocess.run([SLIPWAY, "--json", "worktree", "create", "--branch", f"idle-{w}"], cwd=big, env=env, check=True, capture_output=True)
    trees.append(json.loads(out.stdout)["path"])


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


s = Sidecar(cwd=big)
s.request("initialize", dict(INIT, workspaceFolders=[{"uri": "file://" + big, "name": "big"}]))
s.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
s.request("workspace/executeCommand", {"command": "slipway.list", "arguments": [{"root": big}]})
time.sleep(2.0)
IDLE_SECS = 10
c0, t0 = cpu_seconds(s.p.pid), time.perf_counter()
time.sleep(IDLE_SECS)
c1, t1 = cpu_seconds(s.p.pid), time.perf_counter()
idle_cpu = (c1 - c0) / (t1 - t0)
s.close()
# The peer: `git status` in every worktree, twice a second, for the same time.
g0 = os.times()
ticks = 0
end = time.perf_counter() + IDLE_SECS
while time.perf_counter() < end:
    tick = time.perf_counter()
    for t in trees:
        subprocess.run(["git", "status", "--porcelain"], cwd=t, env=env, stdout=subprocess.DEVNULL, check=True)
    ticks += 1
    time.sleep(max(0.0, 0.5 - (time.perf_counter() - tick)))
g1 = os.times()
git_cpu = ((g1.children_user - g0.children_user) + (g1.children_system - g0.children_system)) / (ticks * 0.5)

ms = lambda xs: statistics.median(xs) * 1000
print()
print(f"fixture: {BRANCHES} branches ({listed} listed); median of {ROUNDS} rounds")
print()
print("| benchmark | slipway | git CLI | ratio (slipway / git) |")
print("| --- | --- | --- | --- |")
print(f"| cold start to `initialize` reply vs spawning `git rev-parse --git-dir` | {ms(cold):.1f} ms | {ms(git_spawn):.1f} ms | {ms(cold) / ms(git_spawn):.2f} |")
print(f"| `slipway.branches` round-trip (warm sidecar) vs `git for-each-ref` | {ms(branches):.1f} ms | {ms(git_ref):.1f} ms | {ms(branches) / ms(git_ref):.2f} |")
print(f"| idle RSS after `initialized` | {rss_kb / 1024:.1f} MB | | |")
print(f"| idle CPU, {WORKTREES} worktrees of a {FILES}-file repository, vs `git status` in each twice a second | {100 * idle_cpu:.1f}% | {100 * git_cpu:.1f}% | {idle_cpu / git_cpu:.2f} |")
