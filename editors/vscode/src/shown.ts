// Names that came out of a repository or a sandbox (a file an agent committed, a branch
// of a cloned repository) made safe to show. The sidecar sends them exactly, since they
// are also what opens the file or names the branch; only what a person reads is
// cleaned: control characters and the characters that reorder the text around them
// (bidirectional overrides and isolates, the "trojan source" trick) become U+FFFD, so
// `evil\u202Etxt.sh` cannot read as `evilhs.txt`. The same characters as the CLI's
// (`slipway_core::shown`).

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
// The same less newlines and tabs, for messages of several lines.
// eslint-disable-next-line no-control-regex -- as above
const UNSAFE_IN_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` as it may be shown: each control or reordering character replaced by U+FFFD. */
export function shown(text: string): string {
  return text.replace(UNSAFE, '\uFFFD');
}

/** `text` (if any) through {@link shown}; undefined stays undefined. */
export function shownMaybe(text: string | undefined): string | undefined {
  return text === undefined ? undefined : shown(text);
}

/** `text` of several lines as it may be shown: like {@link shown}, but newlines and tabs kept. */
export function shownLines(text: string): string {
  return text.replace(UNSAFE_IN_LINES, '\uFFFD');
}

/** `text` (if any) through {@link shownLines}. */
export function shownMaybeLines(text: string | undefined): string | undefined {
  return text === undefined ? undefined : shownLines(text);
}

// VS Code draws `$(name)` as an icon in picker rows and status bar items, so a branch
// called `$(pass)-approved` would show a tick and a hook's `$(reboot)` would vanish from
// the trust picker. A backslash before it is VS Code's own escape (drawn as the text,
// without the backslash); every such sequence gets one, even one already escaped, so what
// is drawn is exactly what is there. The pattern is VS Code's icon name and modifier.
const ICON = /\$\([A-Za-z0-9-]+(?:~[A-Za-z]+)?\)/g;

/** `text` for a surface that draws icons (picker rows, status bar items): {@link shown}, and `$(name)` drawn as typed. */
export function literal(text: string): string {
  return shown(text).replace(ICON, (icon) => `\\${icon}`);
}

/** `text` (if any) through {@link literal}. */
export function literalMaybe(text: string | undefined | null): string | undefined {
  return text === undefined || text === null ? undefined : literal(text);
}

/** A picker's rows with their label, description and detail shown safely; everything else kept. */
export function shownItems<T extends { label: string; description?: string; detail?: string }>(items: readonly T[]): T[] {
  return items.map((i) => ({ ...i, label: shown(i.label), description: shownMaybe(i.description), detail: shownMaybe(i.detail) }));
}
