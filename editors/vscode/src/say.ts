// The window's notifications and dialogs, with what they show passed through `shown`:
// messages name branches and files that came out of a repository or a sandbox.

import * as vscode from 'vscode';
import { shownLines, shownMaybeLines } from './shown';

type Show = typeof vscode.window.showInformationMessage;
type RawShow = (...args: unknown[]) => Thenable<unknown>;

/** `show` with its message and its options' detail cleaned; the buttons are the extension's own. */
function cleaned(show: RawShow): Show {
  return ((message: string, ...rest: unknown[]) => {
    const [first, ...others] = rest;
    if (typeof first === 'object' && first !== null && !('title' in first)) {
      const options = first as vscode.MessageOptions;
      return show(shownLines(message), { ...options, detail: shownMaybeLines(options.detail) }, ...others);
    }
    return show(shownLines(message), ...rest);
  });
}

/** `vscode.window.showInformationMessage`, shown safely. */
export const info: Show = cleaned((...args) => (vscode.window.showInformationMessage as RawShow)(...args));
/** `vscode.window.showWarningMessage`, shown safely. */
export const warn: Show = cleaned((...args) => (vscode.window.showWarningMessage as RawShow)(...args));
/** `vscode.window.showErrorMessage`, shown safely. */
export const error: Show = cleaned((...args) => (vscode.window.showErrorMessage as RawShow)(...args));
