// Settings that name a program or choose where the agent runs (`slipway.path`,
// `slipway.agent.*`, `slipway.sandbox.*`, `slipway.strategy`) are read from the user's
// own settings only. A workspace's `.vscode/settings.json` is a file of the repository:
// an agent's work can change it through a merge or a land, just as it can change
// `slipway.toml`, so a value set there is ignored (and the user is told once).

import * as vscode from 'vscode';

/** The keys (under `slipway.`) whose workspace values are ignored. */
export const USER_ONLY = ['path', 'agent.type', 'agent.command', 'sandbox.type', 'sandbox.image', 'strategy'] as const;
export type UserOnlyKey = (typeof USER_ONLY)[number];

const warned = new Set<string>();

/**
 * `slipway.<key>` from the user's settings (else its default, else `fallback`), never
 * from the workspace's or a folder's; a workspace value is reported once per session.
 */
export function userSetting<T>(key: UserOnlyKey, fallback: T): T {
  const info = vscode.workspace.getConfiguration('slipway').inspect<T>(key);
  if ((info?.workspaceValue !== undefined || info?.workspaceFolderValue !== undefined) && !warned.has(key)) {
    warned.add(key);
    void vscode.window.showWarningMessage(
      `slipway: ignoring slipway.${key} from the workspace settings (.vscode/settings.json is a file of the repository, which an agent can change); set it in your user settings.`,
    );
  }
  return info?.globalValue ?? info?.defaultValue ?? fallback;
}
