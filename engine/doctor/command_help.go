package doctor

// Help is the long help of `stratum doctor`.
const Help = `Doctor checks what breaks runs, before a run meets it:

  store     the store commands open (STRATUM_STORE, store: in config.yaml, else
            $STRATUM_HOME/stratum.db) opens, its schema, and (bbolt) that a write
            transaction starts — nothing is written
  model     the default model (STRATUM_MODEL, else default_model:) and every model the
            project's specs name resolve to a provider, as a call resolves them
  key       each of those providers' API key variable is set (its value is never shown)
  provider  each provider's base URL answers a GET within 2s (no key sent, no token spent)
  agent     the agent CLIs stratum run would call (claude, codex, agents: in config.yaml)
            are on PATH
  mcp       in a project set up for an agent (an .mcp.json at its root, or Codex's
            config.toml registering stratum): the client starts this binary on this
            shell's store

The project is the nearest directory holding .git (its specs are the ones whose agents and
models are checked), else the current directory. Each check prints one line — ok, warn,
FAIL or skip — and a failure its fix after "—". A warning is something that breaks nothing
yet: an agent CLI no spec uses, no default model while every infer step names its own.

Exit status: 0 nothing failed (warnings included), 1 some check failed, 2 usage error.`

// Examples are the examples of `stratum doctor`'s help.
const Examples = `  stratum doctor
  stratum doctor --json | jq '.checks[] | select(.status == "fail")'
  stratum doctor --dir ~/src/app`
