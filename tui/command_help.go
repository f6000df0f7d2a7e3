package tui

// CommandHelp is the long help of `stratum tui` (cobra's Long): what the
// console follows, its keys and --plain.
const CommandHelp = `tui opens the operator console on the store ($STRATUM_HOME/stratum.db). It follows
every stratum process live: flows driven over MCP, by stratum run or from a shell update
as they move, and a gate decided elsewhere leaves the Gates pane.

Keys: tab/1-6 panes · ? help · / filter · : command · esc back · q quit.
Gates: a approve, r revise, x kill — each asks for a rationale and a second press
of the same key; enter alone never decides. Decisions are recorded with $USER and
channel tui. Keys are remappable in the keys: section of $STRATUM_HOME/config.yaml.

--plain streams the same state and events as plain text lines (logs, screen readers).`

// CommandExamples are the examples of `stratum tui`'s help.
const CommandExamples = "  stratum tui\n  stratum tui specs/examples\n  stratum tui --plain"
