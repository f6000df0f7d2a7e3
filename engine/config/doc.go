// Package config reads stratum's configuration once per process: the file
// $STRATUM_HOME/config.yaml (default ~/.stratum/config.yaml), then the
// project's .stratum/config.yaml, each overriding the one before key by key.
// Environment variables and flags override both; they are applied where
// they are read (the LLM router reads STRATUM_MODEL and <PROVIDER>_BASE_URL,
// main applies flags). main.go loads the Config and injects its parts: agent
// commands into the runner's agent executor, the default model and base URLs
// into the infer executor, key bindings into the TUI. Nothing else reads
// config files.
//
// Part of the stratum command, not a public API: its exported names serve
// the command's packages and may change.
//
//	default_model: openai/gpt-4o-mini            # infer steps without a model
//	base_urls: {ollama: "http://gpu-box:11434/v1"}
//	agents:
//	  claude: [claude, -p, --model, opus]          # argv
//	  mine: "my-agent --json < {prompt_file}"      # sh -c
//	  other: {command: [other, --print]}
//	keys:
//	  approve: A                                   # one key…
//	  kill: [X, ctrl+x]                            # …or several
//	llm_timeout: 5m      # one attempt's LLM call, retries included (STRATUM_LLM_TIMEOUT wins)
//
// A malformed file is an error naming the file and line; a missing one is
// not. The package imports nothing else of stratum.
package config
