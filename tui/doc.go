// Package tui is `stratum tui`, the operator console for flows and human
// gates (DESIGN.md §8), and its plain line mode (`stratum tui --plain`).
//
// # Architecture
//
// Model is the one Bubble Tea (v1) model. It owns the layout, the focus and
// the routing of keys and messages; the panes (Flows, Trace, Gates,
// Checkpoints, Iterations, Specs) are small imperative structs the root calls
// directly, each rendering from the data the root holds. Dialogs live on an
// overlay stack. Update does no I/O: every read or write of the store runs in
// a tea.Cmd whose result comes back as a message.
//
// The package never imports the store: it reads and writes through Source,
// an interface defined here; ServiceSource implements it over
// engine.Service, whatever store the service runs on.
//
// # Live updates across processes
//
// The console follows the store's append-only event log by sequence number
// through Source.Watch (engine.Service.Watch): events of transitions this
// process commits (a flow run from the Specs pane, a decision) arrive from
// the engine's in-process broker at once; those of other processes arrive
// through the store's change notification — for the bbolt store, fsnotify on
// the database file, with a slow poll (store.DefaultWatchPoll) only as a
// fallback. Each batch reaches the model through a re-arming wait command;
// the model then reloads its snapshot (flows, pending gates, the selected
// flow) in one command, coalescing bursts, so a gate decided in another
// process leaves the Gates pane on the next frame.
//
// # Safety of decisions
//
// Approve (a), revise (r) and kill (x) each open a dialog that shows the
// gate's context and asks for a rationale (required for revise and kill).
// Enter only moves to the confirmation step; the decision is recorded only
// when the outcome's own key is pressed again there. A dialog that opens
// asynchronously (a gate arriving through the review.Sink) while the user is
// typing ignores keys until the typing pauses (GraceQuiet), at most
// GraceMax after it opened. Decisions carry the reviewer's identity ($USER)
// and channel "tui", and are first-writer-wins in the engine: a gate decided
// elsewhere in the meantime yields a clear message, never a second decision.
//
// # Keys and styles
//
// Keys are defined once in KeyMap (DefaultKeyMap), remappable from the
// `keys:` section of $STRATUM_HOME/config.yaml (LoadKeyMap). Styles are
// defined once in Styles with semantic colours; NO_COLOR (or Options.NoColor)
// renders without any colour or attribute. Frames are rendered by Bubble
// Tea's line-diffing renderer without full clears, so tmux does not flicker.
package tui
