package mcp

import "strings"

// The help of the commands this package is the body of (cobra's Long and
// Example): `stratum mcp` (Serve), `stratum install`, `stratum doctor` and
// `stratum uninstall`.

// ServeHelp is the long help of `stratum mcp`.
const ServeHelp = `Mcp runs the Model Context Protocol server on stdin/stdout; an MCP client (Claude Code,
Codex, the MCP Inspector) starts it. It offers the original stratum tools (stratum_plan,
stratum_step_done, stratum_gate_resolve, stratum_audit, …) plus stratum_wait_gate and
stratum_list_flows, on the shared store: flows driven here show up in "stratum query" and the
TUI, and decisions made with "stratum gate" are seen at once. Logs go to stderr, starting with
the store it opened (path and schema version).
Register it for a project with "stratum install".`

// ServeExamples are the examples of `stratum mcp`'s help.
const ServeExamples = `  claude mcp add stratum -- stratum mcp
  npx @modelcontextprotocol/inspector --cli stratum mcp --method tools/list`

// InstallHelp is the long help of `stratum install`; it names the skills
// install writes (Skills).
func InstallHelp() string {
	return `Install sets the project (the nearest directory with .git, else the current one) up for
agents: it registers the stratum MCP server in .mcp.json
({"mcpServers": {"stratum": {"command": "<this binary>", "args": ["mcp"]}}}), writes the
execution-model block between <!-- stratum:begin … --> and <!-- stratum:end --> into CLAUDE.md,
and adds the skills (slash commands) ` + strings.Join(Skills(), ", ") + ` under
.claude/skills. With --codex it also adds [mcp_servers.stratum] to $CODEX_HOME/config.toml
(default ~/.codex/config.toml) and the block to AGENTS.md. Files are edited as text: other
servers, keys and lines, and everything outside the markers keep their bytes; running it again
changes nothing; a skill that differs from ours is kept; a file that cannot be parsed is
reported and nothing is written. "stratum uninstall" removes it all again.

With --hooks it also registers three Claude Code hooks in .claude/settings.json, each running
"<this binary> hook NAME": session-start shows the project memory file
(` + MemoryFile + `) to every new session, session-stop appends a dated note of the session's
last answer to it, post-tool-failure appends each failed tool call. They only write to a memory
file that exists (the stratum-onboard skill writes it).

When STRATUM_HOME is set, the server entry gets "env": {"STRATUM_HOME": …} so the server uses
the same store. Run from a temporary "go run" build, install refuses (the path would vanish)
unless --command names what the client should run.`
}

// InstallExamples are the examples of `stratum install`'s help.
const InstallExamples = `  stratum install
  stratum install --codex --dry-run
  stratum install --command stratum   # rely on PATH instead of this binary's path
  stratum install --hooks             # also keep .claude/memory/MEMORY.md with Claude Code hooks`

// UninstallHelp is the long help of `stratum uninstall`.
const UninstallHelp = `Uninstall removes what "stratum install" added, and nothing else: the stratum server entry
of .mcp.json (an entry that does not run "… mcp" is kept), the block between the stratum
markers in CLAUDE.md, the skills whose SKILL.md is still what install wrote (an edited one
is kept and reported), and the hooks "install --hooks" added to .claude/settings.json. With --codex also the [mcp_servers.stratum] table of Codex's config.toml
and AGENTS.md's block. A file left configuring nothing (.mcp.json without servers or other keys,
a CLAUDE.md that held only the block) is removed, and so are directories left empty. A file
that cannot be parsed is reported and nothing is changed.`

// UninstallExamples are the examples of `stratum uninstall`'s help.
const UninstallExamples = `  stratum uninstall --dry-run
  stratum uninstall --keep-skills
  stratum uninstall --codex`

// HookHelp is the long help of `stratum hook`.
const HookHelp = `Hook runs one of the Claude Code hooks "stratum install --hooks" registers; Claude Code starts
it with the event's JSON on stdin. They keep the project memory file ` + MemoryFile + `
(under the event's cwd) as the original stratum's hooks do, and never create it:
  session-start      prints the file; Claude Code adds it to the new session's context
  session-stop       appends "## Session note <UTC time>" and the first 400 characters of the
                     session's last answer
  post-tool-failure  appends "## Tool failure <UTC time>" with the tool and the first 300
                     characters of its error (not when the user interrupted it)
Stdin that is not JSON is an error (exit 1, which Claude Code shows without blocking).`

// HookExamples are the examples of `stratum hook`'s help.
const HookExamples = `  echo '{"cwd": "."}' | stratum hook session-start
  echo '{"cwd": ".", "tool_name": "Bash", "error": "exit 1"}' | stratum hook post-tool-failure`
