// Unit tests of how names from a repository or a sandbox are drawn: what reorders or
// controls the text becomes U+FFFD, the rest (and the row's own fields) is kept.

import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { branchItems, trustView } from '../../src/model';
import type { BranchInfo } from '../../src/protocol';
import { literal, shown, shownItems, shownLines } from '../../src/shown';

describe('shown', () => {
  it('replaces bidirectional overrides and isolates, so a name reads as it is', () => {
    assert.equal(shown('evil\u202Etxt.sh'), 'evil\uFFFDtxt.sh');
    assert.equal(shown('a\u2066b\u2069c\u202Ad'), 'a\uFFFDb\uFFFDc\uFFFDd');
  });

  it('replaces control characters, escape and C1 included, and newlines in one line', () => {
    assert.equal(shown('a\u001b]0;title\u0007b'), 'a\uFFFD]0;title\uFFFDb');
    assert.equal(shown('x\u009by\u007fz'), 'x\uFFFDy\uFFFDz');
    assert.equal(shown('one\ntwo\tthree'), 'one\uFFFDtwo\uFFFDthree');
  });

  it('keeps every other character, accents and right-to-left letters included', () => {
    const name = 'src/café/שלום/файл.rs';
    assert.equal(shown(name), name);
  });

  it('keeps newlines and tabs in messages of several lines, but not carriage returns', () => {
    assert.equal(shownLines('one\n\ttwo\r\u202E'), 'one\n\ttwo\uFFFD\uFFFD');
  });

  it('cleans the shown fields of picker rows and keeps what the row carries', () => {
    const rows = shownItems([{ label: 'f\u202Eo', description: 'd\u0007', detail: undefined, file: { path: 'f\u202Eo' } }]);
    assert.deepEqual(rows, [{ label: 'f\uFFFDo', description: 'd\uFFFD', detail: undefined, file: { path: 'f\u202Eo' } }]);
  });
});

// VS Code's renderer (`renderLabelWithIcons`) draws `\$(name)` as the text `$(name)`:
// what a picker row would show of a label, to compare with what was typed.
function drawn(label: string): { text: string; icons: string[] } {
  const icons: string[] = [];
  const text = label.replace(/(\\)?\$\(([A-Za-z0-9-]+(?:~[A-Za-z]+)?)\)/g, (_m, escaped: string | undefined, name: string) => {
    if (escaped) {
      return `$(${name})`;
    }
    icons.push(name);
    return '';
  });
  return { text, icons };
}

describe('literal', () => {
  it('escapes what VS Code would draw as an icon, so it is drawn as typed', () => {
    assert.equal(literal('$(pass)-approved'), '\\$(pass)-approved');
    assert.deepEqual(drawn(literal('$(pass)-approved')), { text: '$(pass)-approved', icons: [] });
    assert.deepEqual(drawn(literal('a\\$(x~spin)b')), { text: 'a\\$(x~spin)b', icons: [] });
  });

  it('leaves a shell substitution that is no icon name alone, and still cleans controls', () => {
    assert.equal(literal('echo $(curl -s x | sh)'), 'echo $(curl -s x | sh)');
    assert.equal(literal('$(\u202E)'), '$(\uFFFD)');
  });

  it('keeps a branch named like an icon as its name in the branch picker, with only our own icon', () => {
    const b: BranchInfo = {
      name: '$(pass)-approved', kind: 'local', remote: null, commit: 'f68bb0d6b440dfca27a12c3d43da6fc1346dd2e6',
      subject: 'fix $(warning)', time: 0, isHead: false, isDefault: false, upstream: null,
    };
    const [row] = branchItems([b], 0).filter((e) => e.type === 'branch');
    assert.deepEqual(drawn(row.label), { text: ' $(pass)-approved', icons: ['git-branch'] });
    assert.match(drawn(row.detail ?? '').text, /fix \$\(warning\)/);
    assert.equal(row.ref, '$(pass)-approved');
  });

  it('shows every word of a hook in the trust picker, a command substitution named like an icon included', () => {
    const view = trustView([{
      path: 'slipway.toml', role: 'repositoryConfig', hash: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', trustedHash: null,
      commands: [{ source: 'hooks.host.on_worktree_ready', command: 'make $(reboot)' }], settings: [],
    }]);
    const hook = view.rows.find((r) => r.label.startsWith('runs: '));
    assert.deepEqual(drawn(hook?.label ?? ''), { text: 'runs: make $(reboot)', icons: [] });
  });
});
