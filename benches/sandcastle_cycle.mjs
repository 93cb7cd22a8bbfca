// One Sandcastle process for the cycle bench (benches/cycle_bench.py [sandcastle]):
// reads a branch name per line on stdin, runs createWorktree (copying node_modules in)
// and close() in the repository given as argv[2], and prints the milliseconds the
// pair took, measured inside this process (so Node's start-up is not counted).
import { createInterface } from "node:readline";
import { createWorktree } from "@ai-hero/sandcastle";

const repo = process.argv[2];
const lines = createInterface({ input: process.stdin });
for await (const branch of lines) {
  const started = performance.now();
  const worktree = await createWorktree({
    cwd: repo,
    branchStrategy: { type: "branch", branch },
    copyToWorktree: ["node_modules"],
  });
  const closed = await worktree.close();
  if (closed.preservedWorktreePath) {
    throw new Error(`sandcastle preserved ${closed.preservedWorktreePath}: the bench expects a clean close`);
  }
  process.stdout.write(`${(performance.now() - started).toFixed(3)}\n`);
}
