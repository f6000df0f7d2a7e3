// Package tui is `stratum tui`, the operator console for flows and human
// gates, and its plain line mode (`stratum tui --plain`). Command
// (command.go) is the command's body: main.go binds its flags, opens the
// service and maps Command's UsageError (engine/run's, the commands' one
// usage error) to exit 2 with runner.ErrorStatus; CommandHelp and
// CommandExamples are its help.
//
// # Architecture
//
// Model (model.go) is the one Bubble Tea (v1) model. It owns the layout,
// the focus, the routing of keys and messages, the overlay stack of dialogs
// (dialog.go, dialog_decision.go, rundialog.go) and common, the state every
// pane renders from: the window of the flows' listing and the header's
// counts (flowwindow.go), the pending gates, the watched specs, the detail
// flow (the one the Trace, Checkpoints and Iterations panes show), the
// keys, the styles, the clock and the terminal size. Only the root writes
// common, in Update.
//
// Each pane is a component behind one small interface, pane (pane.go):
//
//	Title() string                          tab, `:` command, tab-key action
//	SetSize(width, height int)              the body's size, from the root's layout
//	Len(c *common) int                      rows for the current shared state
//	View(c *common) []string                the body
//	Update(m *Model, msg tea.KeyMsg) tea.Cmd  the pane's own keys
//	ShortHelp(c *common) []key.Binding      its part of the footer
//
// plus base(), the cursor, filter and size every pane embeds (paneBase).
// A pane holds only view state (cursor, filter, what is expanded) and
// derives its rows from common on every call, so it is never stale. A few
// optional interfaces let the root treat panes alike without naming them:
// flowSelector (Flows, Gates: the detail panes follow their selection),
// detailPane (the cursor resets when the detail flow changes) and badged
// (a count on the tab, Gates(2)). One file per pane: pane_flows.go,
// pane_trace.go, pane_gates.go, pane_checkpoints.go, pane_iterations.go,
// pane_specs.go.
//
// Routing of a key: the top dialog takes it (once its grace period allows);
// else the `/` filter or `:` command input; else the global keys (help,
// filter, command, tab, esc, quit, a pane's tab key); else the list keys on
// the focused pane's cursor; else the focused pane's Update.
//
// # Adding a pane
//
// Write pane_NAME.go with the pane's type (embedding paneBase and
// implementing pane) and its paneDef — definePane(title, defaultKeys,
// newPane) when it has keys of its own, declared in the same file as a
// struct whose actions() names them for config.yaml — and add the paneDef
// to registeredPanes in pane.go. That is all: the tab, the tab key (its
// position, action = the title in lower case), the `:` command, the footer,
// the `?` help and the remappable actions follow. TestAddPane does exactly
// this with a test-only pane.
//
// # Where I/O happens
//
// Nowhere in Update or in a pane. Every read or write of the store, every
// wait on a channel and every in-process run is a tea.Cmd (commands.go,
// runFlowCmd) that captures what it needs when built and never touches the
// model; its result comes back as a message carrying what it was for (a
// flow id), so a stale answer is recognised. Decisions and checkpoints go
// through Source; flows started from the Specs pane go through FlowRunner
// (run.Background in the binary).
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
// through the store's change notification (for the bbolt store, fsnotify on
// the database file, with a slow poll only as a fallback). Each batch
// reaches the model through a re-arming wait command (waitEventsCmd); the
// model then reloads its snapshot (a pass over the flows' listing, the
// pending gates, the detail flow) in one command, coalescing bursts, so a
// gate decided in another process leaves the Gates pane on the next frame.
//
// # Work in flight
//
// The Flows pane marks a running flow whose step is under way (▶ running
// 12s; the footnote names the step and its dispatch time) from the store's
// events (inflight.go): each Watch batch updates the marks before the
// reload it triggers — step_dispatched starts one, the step's report, a
// gate opening or resolving, a checkpoint or the flow's end removes it. A
// stalled flow is never marked. Flows already in flight when the console
// starts are read once from their states' DispatchedAt (the running flows
// of the first window, at most inflightSeedMax).
//
// # Many flows
//
// The console never holds every flow. Source.ListFlows reads one page of
// the store's listing (newest first; engine.ListFilter.After resumes it).
// A pass over the listing, page by page, computes the number of flows the
// Flows pane's filter matches with a mark (a listing cursor) every
// windowPage of them, and keeps the window: the pages around the cursor,
// or around the flow the cursor was on, so a refresh keeps it there. A
// pass runs for the first frame, after store events and when the Flows
// filter changes (the filter is applied to the whole listing); moving the
// cursor out of the window reads the pages it needs from their marks
// (flowPagesCmd), the detail following when they arrive. The header's
// counts are read without every summary: the number of flows from the
// store's index (Source.CountFlows, engine.Tx.Count), running and stalled
// from the listings of the running flows and of those at a gate only
// (readCounts); with no filter, the pass then stops past the window, and
// the marks further down are taken as the cursor goes there. So a refresh
// reads the active flows and the pages on screen; a filter's pass reads
// every summary. The counts follow runners' leases expiring after the
// pass without reading again. The detail flow's summary and the root of
// its parents are read with it (the window may not hold them). `--plain`
// counts the same way. Memory holds a few pages of summaries, whatever
// the store holds. Spec files arrive the same way
// from a specs/watch Watcher, and gates opened by runs started here from a
// review.Queue (the runs' review.Sink), which opens their decision dialog
// at once.
//
// # Safety of decisions
//
// Approve (a), revise (r) and kill (x) each open a dialog that shows the
// gate's context (gatectx.go: the flow's inputs, the outputs and the
// violations that led to the gate, fixed ones marked fixed, where a revise
// goes and the rounds left, the approver and the deadline) and asks for a
// rationale (required for revise and kill). In the Gates pane they decide
// the selected gate (oldest first); in any other pane the gate of the
// selected flow and only that one: a flow waiting at no gate says so (and
// how many gates wait in the Gates pane), never opening another flow's.
// The dialog's title says what it does (REVISE sends back, KILL kills; the
// gate's own question, which may read "Approve …?", is labelled as the
// gate's), and the footer shows the dialog's own keys.
// The gate list comes from the flows' summaries (Source.PendingReviews,
// engine.Query.GateReviews: no state is decoded, so 25,000 waiting
// gates load as fast as 25); the inputs and outputs a gate shows are read
// from its flow's state with the rest of its context, only for the gates
// on screen (the Gates pane's selection and open dialogs).
// Enter only moves to the confirmation step; the decision is recorded only
// when the outcome's own key is pressed again there (another decision's
// key there says which key records this one). A dialog that opens
// asynchronously (a gate arriving through the review.Queue) while the user
// is typing ignores keys until the typing pauses (GraceQuiet), at most
// GraceMax after it opened. Decisions carry the reviewer's identity ($USER)
// and channel "tui", and are first-writer-wins in the engine: a gate decided
// elsewhere in the meantime is never decided a second time. Its dialog
// closes with a notice naming who decided, the outcome and the rationale
// (the flow's gate record) — unless a rationale or value was being typed:
// then the dialog stays, read-only, with the text kept and who decided. A
// gate that leaves the list because its deadline passed is announced (⏱),
// dialog or not. A flow whose runner has gone
// (state.FlowSummary.Stalled) reads "stalled", never running, with the
// `stratum run --resume ID` that continues it, on a line of its own so it
// copies whole; a child flow (which run --resume refuses) names its root
// parent's (resumeCommand, also for --plain). A Go program's flow, driver
// library, is never resumed: the console says to run the program again.
// Quitting stops the runs started here and waits (up to 10 s) for them to
// release their leases, so their flows read stalled at once elsewhere.
//
// A review a Go program opened (stratum.AwaitHuman, review.PendingReview
// with Library set) is a row of its own in the Gates pane, several per flow
// when several are open. Its context (review_view.go) reads as text, not
// JSON: the question, the trigger and deadline, the numbered options (or
// the type a value must fit) and the artifacts, each value as key: value
// words wrapped on spaces. What does not fit the pane is folded, artifacts
// first (to their first line), then options (to one line each), so at
// 80×24 up to five options and the first line of each artifact show
// without scrolling; enter unfolds it all. Its approve asks for the value
// first: an option's number (one key; with ten options or more, picked at
// the digit after which no other number can follow, or enter), or a JSON
// value typed and checked with engine.CheckReviewValue, the engine's own
// rule; then the rationale and the confirming key, as for any gate. The
// dialog lists every option whole and scrolls its context when it does
// not fit. Kill rejects it; it is never revised, and the footer offers no
// revise (the Gates pane's footer names only the keys that act on the
// selected gate).
//
// # Reading before deciding
//
// A pane with a detail implements reader: the Gates pane (the selected
// gate's context under the list) and the Trace pane (the selected entry,
// expanded with enter). The root offers it the list keys first: the page
// keys (pgdown/pgup, ctrl+d/ctrl+u) scroll a detail that does not fit, and
// top and bottom (g/G) go to its ends once it is opened; one scrollView
// does the scrolling and draws the "lines a–b of n" row. The Trace pane
// renders its entries and the lines of the expanded ones as rows and
// keeps the selected entry (and its window) on screen. Folded, a gate's
// output is a summary of at most three lines; expanded, nothing is cut:
// long lines wrap, and a string with line breaks reads as its lines
// (jsonText), escaped with specs.EscapeControlLines like all untrusted
// text. A gate's outputs are listed in execution order (the order of the
// steps' last step_done), not alphabetically. The pager key (o, a
// pagerPane) pipes the selection, whole and unstyled, to Options.Pager
// ($PAGER, else less) through tea.ExecProcess, built in a command.
//
// # Status and header
//
// A status message expires after Options.StatusTTL (5 s); an error stays
// until the next message, and the error of a store read goes with the next
// read that succeeds. While the store cannot be read the header says
// "store unreachable" and when it was last read, instead of counts that
// would be stale.
//
// # Keys and styles
//
// Keys are defined once in KeyMap (DefaultKeyMap), grouped: global keys,
// list keys, decision keys (the Gates pane and every decision dialog),
// dialog keys, and one group per pane (its tab key and its own keys,
// declared in the pane's file). They are remappable from the `keys:`
// section of $STRATUM_HOME/config.yaml (KeyMapFrom) by action name
// (KeyMap.Actions); a map in which enter decides or two actions share a
// key where both work is refused, naming the config line. Several keys
// arriving in one message (fast typing, a laggy link) are handled one by
// one, except text for a text input; a paste never presses keys. Styles are defined once in Styles with semantic
// colours; NO_COLOR (or RunOptions.NoColor) renders without any colour or
// attribute. Frames are rendered by Bubble Tea's line-diffing renderer
// without full clears, so tmux does not flicker.
//
// # Imports
//
// tui may import engine, engine/run, engine/config, review, specs and
// specs/watch; never store or bbolt (checked by .ci/imports).
package tui
