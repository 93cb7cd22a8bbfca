"""What the sidecar benchmarks share: a release build of slipway, a hermetic git
environment, and a repository with BRANCHES branches made by `git fast-import`."""
import os, subprocess, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLIPWAY = os.path.join(ROOT, "target", "release", "slipway")


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path", os.path.join(ROOT, "Cargo.toml")], check=True)


def branchy_repo(branches, prefix):
    """(work dir, environment, repository) with `branches` branches b00001… on one line of commits."""
    work = tempfile.mkdtemp(prefix=prefix)
    env = dict(os.environ, HOME=work, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.path.join(work, "gitconfig"), SLIPWAY_LOG="warn")
    with open(env["GIT_CONFIG_GLOBAL"], "w") as f:
        f.write("[user]\n\tname = bench\n\temail = bench@slipway.invalid\n[init]\n\tdefaultBranch = main\n")
    repo = os.path.join(work, "repo")
    subprocess.run(["git", "init", "-q", repo], check=True, env=env)
    stream = []
    for i in range(1, branches + 1):
        stream.append(f"commit refs/heads/main\nmark :{i}\ncommitter bench <b@x> {1700000000 + i} +0000\ndata <<EOM\ncommit {i}\nEOM\nM 644 inline f.txt\ndata <<EOM\n{i}\nEOM\n\n")
    for i in range(1, branches + 1):
        stream.append(f"reset refs/heads/b{i:05d}\nfrom :{i}\n\n")
    subprocess.run(["git", "fast-import", "--quiet"], input="".join(stream).encode(), cwd=repo, check=True, env=env)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True, env=env)
    return work, env, repo


def journaled_dir(prefix, size="4G"):
    """A folder on a journaled ext4 the bench makes itself: a loop-mounted
    image (`mkfs.ext4` with its default journal) when running as root, else a
    temp folder with a warning that the figures are not comparable. Never the
    CI root filesystem, an ext4 without a journal where creating files right
    after deleting many costs up to ten times more. Returns (folder, cleanup)."""
    import atexit, shutil, sys
    base = tempfile.mkdtemp(prefix=prefix)
    if os.geteuid() != 0 or not shutil.which("mkfs.ext4"):
        print(f"warning: not root (or no mkfs.ext4): measuring in {base} on whatever filesystem holds it; "
              "the figures are not comparable with the README's", file=sys.stderr)
        done = lambda: shutil.rmtree(base, ignore_errors=True)
        atexit.register(done)
        return base, done
    image = base + ".img"
    subprocess.run(["truncate", "-s", size, image], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True)
    subprocess.run(["mount", "-o", "loop", image, base], check=True)

    def done():
        if os.path.ismount(base):
            subprocess.run(["umount", base], check=False)
        for p in (image,):
            if os.path.exists(p):
                os.remove(p)
        shutil.rmtree(base, ignore_errors=True)
    atexit.register(done)
    return base, done


def hermetic_env(work):
    """An environment whose git reads only a private global config in `work`."""
    env = dict(os.environ, HOME=work, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.path.join(work, "gitconfig"), SLIPWAY_LOG="warn")
    with open(env["GIT_CONFIG_GLOBAL"], "w") as f:
        f.write("[user]\n\tname = bench\n\temail = bench@slipway.invalid\n[init]\n\tdefaultBranch = main\n")
    return env


def interleaved(rounds, a, b, between=None):
    """Runs a() and b() in alternating order for `rounds` rounds; each returns
    seconds. Returns (a times, b times, per-round ratios a/b)."""
    ta, tb = [], []
    for r in range(rounds):
        if r % 2 == 0:
            ta.append(a()); tb.append(b())
        else:
            tb.append(b()); ta.append(a())
        if between:
            between()
    return ta, tb, [x / y for x, y in zip(ta, tb)]


def spread(values):
    """'median (min–max)' of a list of numbers."""
    import statistics
    return statistics.median(values), min(values), max(values)


if __name__ == "__main__":
    # For the shell benches: `python3 benches/fixture.py mount PREFIX` mounts
    # a journaled scratch filesystem and prints its folder; `umount DIR` ends it.
    import sys
    if sys.argv[1:2] == ["mount"]:
        base = tempfile.mkdtemp(prefix=sys.argv[2])
        image = base + ".img"
        if os.geteuid() == 0:
            subprocess.run(["truncate", "-s", "4G", image], check=True)
            subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True)
            subprocess.run(["mount", "-o", "loop", image, base], check=True)
        else:
            print("warning: not root: the figures are not comparable with the README's", file=sys.stderr)
        print(base)
    elif sys.argv[1:2] == ["umount"]:
        base = sys.argv[2]
        if os.path.ismount(base):
            subprocess.run(["umount", base], check=False)
        if os.path.exists(base + ".img"):
            os.remove(base + ".img")
        subprocess.run(["rm", "-rf", base], check=False)
