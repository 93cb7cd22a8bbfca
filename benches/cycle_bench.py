#!/usr/bin/env python3
"""Worktree create, copy-in, close and the branch listing against git, on a
journaled ext4 this bench makes (a loop-mounted image; see fixture.journaled_dir):

    python3 benches/cycle_bench.py [ROUNDS] [--only ROW,ROW]

Rows (ROW names in brackets), each a median of ROUNDS (default 9) interleaved
pairs, the order alternating each round, with the per-round ratio's min–max:
- [cycle] create + copy-in of a 10k-file ignored node_modules + close, 5k
  tracked files, vs `git worktree add` + `cp -R` + `git worktree remove
  --force`; slipway's close returns before its files are deleted, so the row
  also gives the time until they are gone (the next round waits for that);
- [checkout] create without copy-in vs `git worktree add` (and with
  `checkout.workers=4`);
- [close] close vs `rm -rf` of the same files;
- [sandcastle] the cycle against Sandcastle 0.12.0's `createWorktree` (copying
  node_modules in) + `close()`, timed inside one Node process (its start-up is
  not counted; slipway's is), installed from npm into ~/.cache/slipway/bench-sandcastle;
- [branches] `slipway branches --json`, 5k local branches (2.5k with
  upstreams) + 2.5k remote-tracking, vs `git for-each-ref` with the same fields;
- [scale] the cycle at 1k / 10k / 100k tracked files (a 1k-file copy-in);
- [many] create #1 vs #300 in one repository, vs `git worktree add`.
Prints Markdown tables.
"""
import os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture import SLIPWAY, build, hermetic_env, interleaved, journaled_dir  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
ROUNDS = int(args[0]) if args else 9
ONLY = None
if "--only" in sys.argv:
    ONLY = set(sys.argv[sys.argv.index("--only") + 1].split(","))
build()
WORK, _cleanup = journaled_dir("slipway-cycle-bench-")
ENV = hermetic_env(WORK)


def run(cmd, cwd, env=ENV):
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def timed(cmd, cwd, env=ENV):
    t = time.perf_counter()
    run(cmd, cwd, env)
    return time.perf_counter() - t


def repo_with(name, tracked, ignored, per_folder=50):
    """A repository of `tracked` files in folders of `per_folder`, made with
    fast-import, and an ignored node_modules of `ignored` files written out."""
    repo = os.path.join(WORK, name)
    run(["git", "init", "-q", repo], WORK)
    stream = ["commit refs/heads/main\ncommitter bench <b@x> 1700000000 +0000\ndata 8\nfixture\n"]
    for i in range(tracked):
        body = f"file {i}\n"
        stream.append(f"M 644 inline src/d{i // per_folder}/f{i}.txt\ndata {len(body)}\n{body}")
    stream.append("M 644 inline .gitignore\ndata 14\nnode_modules/\n\n")
    subprocess.run(["git", "fast-import", "--quiet"], input="".join(stream).encode(), cwd=repo, env=ENV, check=True)
    run(["git", "checkout", "-q", "-f", "main"], repo)
    for i in range(ignored):
        d = os.path.join(repo, "node_modules", f"pkg{i // 100}", "lib")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"m{i}.js"), "w") as f:
            f.write(f"module {i}\n")
    return repo


def trash_gone(repo):
    """Waits until a close's detached deletion has emptied the trash; seconds waited."""
    trash = os.path.join(repo, ".slipway", "worktrees", ".trash")
    t = time.perf_counter()
    while os.path.exists(trash):
        time.sleep(0.002)
    return time.perf_counter() - t


def fmt(seconds):
    return f"{seconds * 1000:.0f} ms"


def row(label, ta, tb, alt):
    ratios = [a / b for a, b in zip(ta, tb)]
    ma, mb = statistics.median(ta), statistics.median(tb)
    print(f"| {label} | {fmt(ma)} | {alt} {fmt(mb)} | {statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) |")


def header(title):
    print(f"\n{title}\n\n| work | slipway | alternative | ratio (min–max) |\n| --- | --- | --- | --- |")


def cycle_pair(repo, tag, copy="node_modules"):
    """(slipway returned, slipway until deleted, git) for one round's cycle."""
    counter = [0]
    gone = []

    def slip():
        counter[0] += 1
        b = f"bench/{tag}s{counter[0]}"
        t = time.perf_counter()
        run([SLIPWAY, "--json", "worktree", "create", "--branch", b, "--copy", copy], repo)
        run([SLIPWAY, "--json", "worktree", "close", b], repo)
        took = time.perf_counter() - t
        gone.append(took + trash_gone(repo))
        return took

    def git():
        counter[0] += 1
        d = os.path.join(WORK, f"{tag}g{counter[0]}")
        t = time.perf_counter()
        run(["git", "worktree", "add", "-q", d, "-b", f"bench/{tag}g{counter[0]}"], repo)
        run(["cp", "-R", copy, d + "/"], repo)
        run(["git", "worktree", "remove", "--force", d], repo)
        return time.perf_counter() - t

    return slip, git, gone


def wanted(name):
    return ONLY is None or name in ONLY


print(f"filesystem: {subprocess.run(['findmnt', '-no', 'SOURCE,FSTYPE,OPTIONS', '-T', WORK], capture_output=True, text=True).stdout.strip()}")
def sandcastle():
    """A Sandcastle process of benches/sandcastle_cycle.mjs, installed from npm once."""
    home = os.path.join(os.path.expanduser("~"), ".cache", "slipway", "bench-sandcastle")
    if not os.path.isdir(os.path.join(home, "node_modules", "@ai-hero", "sandcastle")):
        os.makedirs(home, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--prefix", home, "@ai-hero/sandcastle@0.12.0"], check=True)
    script = os.path.join(home, "sandcastle_cycle.mjs")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandcastle_cycle.mjs")) as src, open(script, "w") as dst:
        dst.write(src.read())
    return script


if wanted("cycle") or wanted("checkout") or wanted("close") or wanted("sandcastle"):
    repo = repo_with("repo5k", 5000, 10000)
    header(f"5,000 tracked files, 10,000 ignored; {ROUNDS} interleaved rounds")
    if wanted("cycle"):
        slip, git, gone = cycle_pair(repo, "c")
        ta, tb, _ = interleaved(ROUNDS, slip, git)
        row("create + copy-in 10k ignored + close (close returns)", ta, tb, "git worktree add + cp -R + git worktree remove")
        row("the same until the files are deleted", gone, tb, "the same")
    if wanted("sandcastle"):
        script = sandcastle()
        node = subprocess.Popen(["node", script, repo], cwd=repo, env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        slip, _git, _gone = cycle_pair(repo, "sc")
        m = [0]

        def castle():
            m[0] += 1
            node.stdin.write(f"bench/castle{m[0]}\n")
            node.stdin.flush()
            line = node.stdout.readline()
            if not line:
                raise SystemExit(f"sandcastle exited: {node.wait()}")
            return float(line) / 1000

        ta, tb, _ = interleaved(ROUNDS, slip, castle)
        node.stdin.close()
        node.wait()
        row("create + copy-in 10k ignored + close (close returns)", ta, tb, "Sandcastle 0.12.0 createWorktree + close()")
    if wanted("checkout"):
        n = [0]

        def slip_co():
            n[0] += 1
            b = f"bench/k{n[0]}"
            t = timed([SLIPWAY, "--json", "worktree", "create", "--branch", b], repo)
            run([SLIPWAY, "--json", "worktree", "close", b], repo)
            trash_gone(repo)
            return t

        def git_co(workers=None):
            n[0] += 1
            d = os.path.join(WORK, f"k{n[0]}")
            cmd = ["git"] + (["-c", f"checkout.workers={workers}"] if workers else []) + ["worktree", "add", "-q", d, "-b", f"bench/gk{n[0]}"]
            t = timed(cmd, repo)
            run(["git", "worktree", "remove", "--force", d], repo)
            return t

        ta, tb, _ = interleaved(ROUNDS, slip_co, git_co)
        row("checkout alone (create without copy-in)", ta, tb, "git worktree add")
        ta, tb, _ = interleaved(ROUNDS, slip_co, lambda: git_co(4))
        row("the same", ta, tb, "git worktree add, checkout.workers=4")
    if wanted("close"):
        n = [0]

        def slip_close():
            n[0] += 1
            b = f"bench/x{n[0]}"
            run([SLIPWAY, "--json", "worktree", "create", "--branch", b], repo)
            t = timed([SLIPWAY, "--json", "worktree", "close", b], repo)
            trash_gone(repo)
            return t

        def rm_rf():
            n[0] += 1
            d = os.path.join(WORK, f"x{n[0]}")
            run(["git", "worktree", "add", "-q", d, "-b", f"bench/gx{n[0]}"], repo)
            t = timed(["rm", "-rf", d], repo)
            run(["git", "worktree", "prune"], repo)
            return t

        ta, tb, _ = interleaved(ROUNDS, slip_close, rm_rf)
        row("close (returns; the files go in the background)", ta, tb, "rm -rf of the files")

if wanted("branches"):
    repo = os.path.join(WORK, "branches")
    run(["git", "init", "-q", repo], WORK)
    N = 5000
    stream = []
    for i in range(1, N + 1):
        stream.append(f"commit refs/heads/main\nmark :{i}\ncommitter bench <b@x> {1700000000 + i} +0000\ndata <<EOM\ncommit {i}\nEOM\nM 644 inline f.txt\ndata <<EOM\n{i}\nEOM\n\n")
    for i in range(1, N + 1):
        stream.append(f"reset refs/heads/b{i:05d}\nfrom :{i}\n\n")
    for i in range(1, N + 1, 2):
        stream.append(f"reset refs/remotes/origin/b{i:05d}\nfrom :{i}\n\n")
    subprocess.run(["git", "fast-import", "--quiet"], input="".join(stream).encode(), cwd=repo, env=ENV, check=True)
    run(["git", "checkout", "-q", "main"], repo)
    run(["git", "pack-refs", "--all"], repo)
    with open(os.path.join(repo, ".git", "config"), "a") as f:
        f.write('[remote "origin"]\n\turl = /nowhere\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n')
        for i in range(1, N + 1, 2):
            f.write(f'[branch "b{i:05d}"]\n\tremote = origin\n\tmerge = refs/heads/b{i:05d}\n')
    fields = "%(refname) %(objectname) %(subject) %(committerdate:unix) %(HEAD) %(upstream:short)"
    header(f"{N} local branches ({N // 2} with upstreams) + {N // 2} remote-tracking; {ROUNDS} interleaved rounds")
    ta, tb, _ = interleaved(ROUNDS, lambda: timed([SLIPWAY, "--json", "branches"], repo),
                            lambda: timed(["git", "for-each-ref", f"--format={fields}", "refs/heads", "refs/remotes"], repo))
    row("`slipway branches --json`", ta, tb, "git for-each-ref, same fields")

if wanted("scale"):
    rounds = max(3, ROUNDS // 2)
    header(f"the cycle (create + copy-in of 1,000 ignored files + close) by repository size; {rounds} interleaved rounds")
    for tracked in (1000, 10000, 100000):
        repo = repo_with(f"scale{tracked}", tracked, 1000, per_folder=100)
        slip, git, gone = cycle_pair(repo, f"s{tracked}")
        ta, tb, _ = interleaved(rounds, slip, git)
        row(f"{tracked:,} tracked files (close returns)", ta, tb, "git worktree add + cp -R + remove")
        row(f"{tracked:,} tracked files (until deleted)", gone, tb, "the same")

if wanted("many"):
    repo = repo_with("many", 100, 0)
    MANY = 300
    slip_t, git_t = {}, {}
    for i in range(1, MANY + 1):
        slip_t[i] = timed([SLIPWAY, "--json", "worktree", "create", "--branch", f"many/s{i}"], repo)
        git_t[i] = timed(["git", "worktree", "add", "-q", os.path.join(WORK, f"mg{i}"), "-b", f"many/g{i}"], repo)
    header(f"create in a repository that already has N slipway and N git worktrees (100 tracked files); one create each")
    for first, last in ((1, 5), (146, 150), (296, 300)):
        ks = range(first, last + 1)
        row(f"creates #{first}–#{last}", [slip_t[k] for k in ks], [git_t[k] for k in ks], "git worktree add")
