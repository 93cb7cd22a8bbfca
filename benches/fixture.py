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
