#!/usr/bin/env python3
"""Import of a run's branch against `git fetch`, on a journaled ext4 the bench
mounts itself (see fixture.journaled_dir):

    python3 benches/import_bench.py [ROUNDS]

Runs `cargo bench -p slipway-core --bench import_bench` with TMPDIR on that
filesystem; the agent's 1,100 objects are loose, as its commits write them."""
import os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture import ROOT, journaled_dir  # noqa: E402

rounds = sys.argv[1] if len(sys.argv) > 1 else "15"
folder, done = journaled_dir("slipway-import-bench-")
try:
    subprocess.run(
        ["cargo", "bench", "--quiet", "-p", "slipway-core", "--bench", "import_bench", "--", rounds],
        cwd=ROOT, env=dict(os.environ, TMPDIR=folder), check=True)
finally:
    done()
