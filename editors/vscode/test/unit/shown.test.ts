// Unit tests of how names from a repository or a sandbox are drawn: what reorders or
// controls the text becomes U+FFFD, the rest (and the row's own fields) is kept.

import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { shown, shownItems, shownLines } from '../../src/shown';

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
