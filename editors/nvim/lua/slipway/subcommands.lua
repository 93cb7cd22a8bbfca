--- The `:Slipway` subcommands, in the order completion and the picker offer
--- them (a list alone, so that plugin/slipway.lua loads nothing else).
return {
  'new',
  'branch',
  'open',
  'agent',
  'handoff',
  'run',
  'workspace',
  'list',
  'review',
  'land',
  'discard',
  'runs',
  'attempts',
  'log',
  'stop',
  'close',
  'cancel',
  'reply',
  'problems',
  'details',
}
