// Command 06_human_review is seed Example 06: a typed LLM function drafts a
// release announcement and the program waits for someone to pick what
// happens to it (stratum.AwaitHuman). After ten minutes without an answer
// the program holds the release itself (the review's timeout).
//
// Who decides:
//
//	go run ./engine/stratum/examples/06_human_review                # offline: the recording, and an
//	                                                                # auto-reviewer that picks option 1
//	                                                                # through Runtime.Resolve
//	go run ./engine/stratum/examples/06_human_review --decide 2     # the auto-reviewer picks option 2
//	go run ./engine/stratum/examples/06_human_review --decide 0     # a person decides on the console
//	go run ./engine/stratum/examples/06_human_review --decide 0 --store
//	    # the review waits in the shared store (the one `stratum` commands open):
//	    # decide it in `stratum tui` (Gates pane) or with
//	    # `stratum gate approve FLOW review-1 --option N --note why` / `stratum gate reject …`
//	go run ./engine/stratum/examples/06_human_review --live         # a real provider for the draft
//
// With --decide 0 the review has Approver "human": only a person may decide
// it (the console on a terminal, with a typed confirmation; the TUI;
// `stratum gate` on a terminal), never a program such as the
// auto-reviewer, an agent, or the deadline. The auto-reviewer's review is
// one anyone may decide (Approver "any", the default).
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/store/shared"
)

//go:embed recording.replay
var recording []byte

// Release is what the announcement is about.
type Release struct {
	Version string   `json:"version"`
	Changes []string `json:"changes"`
}

// Announcement is the draft.
type Announcement struct {
	Title string `json:"title" stratum:"maxlen=80"`
	Body  string `json:"body" stratum:"minlen=1,maxlen=600"`
}

// Verdict is what the reviewer decides.
type Verdict struct {
	Action string `json:"action" stratum:"enum=publish|edit|hold"`
	Note   string `json:"note"`
}

var draft = stratum.MustInfer("draft_announcement", stratum.Spec[Release, Announcement]{
	Intent: "Draft a short, factual release announcement for users",
	Ensure: []stratum.Check[Announcement]{
		stratum.Ensure("the title must name the version", func(a Announcement) bool { return len(a.Title) > 0 }),
	},
	Budget: stratum.Budget{Time: 30 * time.Second, USD: 0.002},
})

var hold = Verdict{Action: "hold", Note: "nobody answered in time"}

// announce drafts the announcement and asks approver ("human": only a
// person; "any": a program too) what to do with it. The time waiting for
// the answer is not charged to the flow's budget.
func announce(approver review.Approver) *stratum.Flow[Release, Verdict] {
	return stratum.NewFlow("announce_release", stratum.Budget{Time: time.Minute},
		func(ctx context.Context, r Release) (Verdict, error) {
			a, err := draft.Call(ctx, r)
			if err != nil {
				return Verdict{}, err
			}
			d, err := stratum.AwaitHuman(ctx, stratum.Review[Verdict]{
				Question:  "Publish this announcement of " + r.Version + "?",
				Artifacts: map[string]any{"title": a.Title, "body": a.Body},
				Options: []Verdict{
					{Action: "publish", Note: "as drafted"},
					{Action: "edit", Note: "needs a human pass first"},
					{Action: "hold", Note: "not this week"},
				},
				// No OnTimeout: a deadline never decides a review only a
				// person may decide; the program holds the release itself.
				Timeout:  10 * time.Minute,
				Approver: approver,
			})
			var timedOut *stratum.ReviewTimeoutError
			if errors.As(err, &timedOut) {
				return hold, nil
			}
			if err != nil {
				return Verdict{}, err
			}
			return d.Value, nil
		})
}

var release = Release{Version: "1.4.0", Changes: []string{"typed human reviews", "reviews in the TUI"}}

func run(ctx context.Context, w io.Writer, approver review.Approver) error {
	v, err := announce(approver).Run(ctx, release)
	var rejected *stratum.ReviewRejectedError
	if errors.As(err, &rejected) {
		fmt.Fprintf(w, "rejected by %s: %s\n", rejected.Reviewer, rejected.Rationale)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "decision: %s (%s)\n", v.Action, v.Note)
	return nil
}

// autoReviewer decides every review it is told about by picking one option
// through Runtime.Resolve: the offline run's reviewer (a program's own web
// form or chat bot would do the same). A program may decide only reviews
// anyone may decide: Resolve refuses one with Approver "human".
type autoReviewer struct {
	rt     *stratum.Runtime
	option int
	w      io.Writer
}

// Emit implements stratum.ReviewSink: it shows the review and decides it
// with the configured option through Runtime.Resolve.
func (a *autoReviewer) Emit(ctx context.Context, p stratum.PendingReview) error {
	fmt.Fprintf(a.w, "review: %s\n", p.Question)
	for i, o := range p.Options {
		fmt.Fprintf(a.w, "  %d. %s\n", i+1, o)
	}
	if a.option < 1 || a.option > len(p.Options) {
		return fmt.Errorf("--decide %d: the review has options 1–%d", a.option, len(p.Options))
	}
	value := json.RawMessage(p.Options[a.option-1])
	// Resolve records the decision; AwaitHuman, waiting, returns it.
	go a.rt.Resolve(context.WithoutCancel(ctx), stratum.Resolution{ReviewID: p.ReviewID, Value: value, Reviewer: "auto-reviewer", Rationale: "picked by --decide"})
	return nil
}

func main() {
	live := flag.Bool("live", false, "call a real provider (STRATUM_MODEL, <PROVIDER>_API_KEY) instead of the recording")
	decide := flag.Int("decide", 1, "the option an auto-reviewer picks (Runtime.Resolve); 0: a person decides (the console, or the store with --store)")
	useStore := flag.Bool("store", false, "persist the flow and its review in the shared store (stratum tui, stratum gate)")
	flag.Parse()
	var opts stratum.Options
	auto := &autoReviewer{option: *decide, w: os.Stdout}
	approver := review.HumanApprover // a person decides
	if *decide != 0 {
		opts.Sinks = []stratum.ReviewSink{auto}
		approver = review.AnyApprover // so may a program: the auto-reviewer
	}
	if *useStore {
		st, err := shared.OpenDefault(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer st.Close()
		opts.Store = st
		fmt.Fprintln(os.Stderr, "the review waits in the shared store: decide it in `stratum tui` or with `stratum gate`")
	}
	rt, closeRT, err := demo.RuntimeWith(recording, *live, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer closeRT()
	auto.rt = rt
	// Ctrl-C withdraws the review (AwaitHuman's context ends).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(stratum.WithRuntime(ctx, rt), os.Stdout, approver); err != nil {
		fmt.Fprintln(os.Stderr, err)
		closeRT()
		os.Exit(1)
	}
}
