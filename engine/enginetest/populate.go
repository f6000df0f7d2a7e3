package enginetest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// PopulateOptions configure Populate.
type PopulateOptions struct {
	// Flows is how many flows to write (at least 2).
	Flows int
	// GateEvery puts every GateEvery-th flow at its gate (0: 4, a quarter
	// of the flows), the others running.
	GateEvery int
	// RunningEvery leaves every RunningEvery-th flow of those not at a
	// gate running and the others complete (approved at their gate); 0:
	// every one running.
	RunningEvery int
	// Batch is the number of flows written per transaction (0: 5,000).
	Batch int
	// BrokenSpec stores the flows with a spec text that no longer parses
	// (their summaries stay those of the valid spec, as after an upgrade
	// that rejects what an older version accepted).
	BrokenSpec bool
}

// PopulateSpec is the spec of Populate's flows: ten steps with ensures and
// a human gate at the end, a few KiB of text like a real project's.
var PopulateSpec = func() string {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\ncontracts:\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "  Out%d:\n    summary: {type: string}\n    score: {type: number}\n    notes: {type: string}\n", i)
	}
	b.WriteString("functions:\n  approval:\n    mode: gate\n    intent: \"Ship the reviewed change?\"\n    timeout: 86400\n")
	b.WriteString("flows:\n  review_pr:\n    input: {pr: {type: string}}\n    steps:\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "      - id: s%d\n        intent: \"Review part %d of the pull request and score it\"\n        inputs: {pr: \"$.input.pr\"}\n        output_contract: Out%d\n        ensure: [\"result.score > 0.5\"]\n        retries: 3\n", i, i, i)
		if i > 0 {
			fmt.Fprintf(&b, "        depends_on: [s%d]\n", i-1)
		}
	}
	b.WriteString("      - id: ship\n        function: approval\n        depends_on: [s9]\n        on_approve: ~\n        on_revise: s0\n        on_kill: ~\n")
	return b.String()
}()

// Populate writes opt.Flows flows of PopulateSpec into st, through the
// store port: two template flows are driven by an engine.Service over st
// (one running at its sixth step, one waiting at its gate after ten steps
// with outputs; with RunningEvery, a third approved there: complete), then
// copied under new ids (00000002-0000-4000-8000-…, 00000003-… with three),
// opt.Batch flows per Update, each with its summary (engine.Summarize)
// and one event. A fixture generator for benchmarks of large stores:
// every state is a real one the engine wrote, every summary the engine's.
func Populate(ctx context.Context, st engine.Store, opt PopulateOptions) error {
	if opt.Flows < 2 {
		return fmt.Errorf("enginetest.Populate: %d flows, want at least 2", opt.Flows)
	}
	if opt.GateEvery <= 0 {
		opt.GateEvery = 4
	}
	if opt.Batch <= 0 {
		opt.Batch = 5000
	}
	running, waiting, complete, err := populateTemplates(ctx, &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}, opt.RunningEvery > 0)
	if err != nil {
		return err
	}
	sp, ds := specs.Parse("review.stratum.yaml", []byte(PopulateSpec), exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		return fmt.Errorf("enginetest.Populate: the spec does not parse: %v", ds)
	}
	flow := sp.Flows["review_pr"]
	start := running.CreatedAt
	copied := 2 // the templates
	if complete != nil {
		copied = 3
	}
	for first := copied; first < opt.Flows; first += opt.Batch {
		err := st.Update(ctx, func(tx engine.Tx) error {
			for i := first; i < min(first+opt.Batch, opt.Flows); i++ {
				tmpl := running
				switch {
				case i%opt.GateEvery == 0:
					tmpl = waiting
				case complete != nil && i%opt.RunningEvery != 0:
					tmpl = complete
				}
				cp := *tmpl
				cp.FlowID = fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i)
				cp.Version, cp.CreatedAt = 0, time.Time{}
				at := start.Add(time.Duration(i) * time.Millisecond)
				if cp.Gate != nil {
					g := *cp.Gate
					g.DispatchedAt = at
					if g.Deadline != nil {
						d := at.Add(24 * time.Hour)
						g.Deadline = &d
					}
					cp.Gate = &g
				}
				expect := cp.Stamp(at)
				sum := engine.Summarize(&cp, flow)
				if opt.BrokenSpec {
					cp.RawSpec = "version: \"0.2\"\nflows: [this is not a mapping\n"
				}
				if err := tx.Put(&cp, sum, expect); err != nil {
					return err
				}
				if err := tx.Append(engine.Event{FlowID: cp.FlowID, Type: engine.EventFlowCreated, Time: at}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// populateTemplates drives Populate's template flows through svc: one
// running at its sixth step, one waiting at its gate after ten steps and,
// withComplete, one approved there.
func populateTemplates(ctx context.Context, svc *engine.Service, withComplete bool) (running, waiting, complete *state.FlowState, err error) {
	output := func(i int) map[string]any {
		return map[string]any{"summary": fmt.Sprintf("Part %d reads well; two nits about naming and one missing test for the error path.", i),
			"score": 0.8, "notes": strings.Repeat("Checked the diff line by line. ", 4)}
	}
	template := func(steps int) (*state.FlowState, error) {
		out, err := svc.Plan(ctx, PopulateSpec, "review_pr", map[string]any{"pr": "https://example.com/pr/1234"}, engine.PlanOptions{SpecFile: "review.stratum.yaml"})
		if err != nil {
			return nil, err
		}
		id := engine.FlowIDOf(out)
		for i := 0; i < steps; i++ {
			if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: fmt.Sprintf("s%d", i), Result: output(i)}); err != nil {
				return nil, err
			}
		}
		return svc.Query().Get(ctx, id)
	}
	if running, err = template(5); err != nil {
		return nil, nil, nil, err
	}
	if waiting, err = template(10); err != nil {
		return nil, nil, nil, err
	}
	if waiting.Status != state.StatusAwaitingGate {
		return nil, nil, nil, fmt.Errorf("enginetest.Populate: the gate template is %s, want awaiting_gate", waiting.Status)
	}
	if withComplete {
		if complete, err = template(10); err != nil {
			return nil, nil, nil, err
		}
		if _, err := svc.GateResolve(ctx, complete.FlowID, review.Decision{StepID: "ship", Outcome: review.Approve,
			ResolvedBy: review.Human, Channel: review.ChannelTUI, Rationale: "ship it"}); err != nil {
			return nil, nil, nil, err
		}
		if complete, err = svc.Query().Get(ctx, complete.FlowID); err != nil {
			return nil, nil, nil, err
		}
		if complete.Status != state.StatusComplete {
			return nil, nil, nil, fmt.Errorf("enginetest.Populate: the complete template is %s", complete.Status)
		}
	}
	return running, waiting, complete, nil
}
