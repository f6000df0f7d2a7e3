package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/watch"
)

// PlainOptions configure RunPlain.
type PlainOptions struct {
	Source Source
	Out    io.Writer
	// Specs, when set, streams spec validation results too.
	Specs <-chan watch.Update
	// Once prints the current state and returns without following.
	Once bool
	// Backend names the store ("etcd etcd://…/team"), printed in the state
	// line as store="…" when set.
	Backend string
	// Invocation runs this stratum in the commands printed ("stratum"
	// when empty).
	Invocation string
}

// RunPlain is the line mode (`stratum tui --plain`): it prints the state of
// the store at a glance (counts, then one line per waiting gate), then one
// line per new event until ctx ends, for logs and screen readers. Lines are
// plain text, never coloured, and each stands alone:
//
//	2026-11-22T05:00:00Z gate_opened flow=3f2a9c1e name=deploy step=review round=0
func RunPlain(ctx context.Context, opt PlainOptions) error {
	src := opt.Source
	after, err := src.LastSeq(ctx)
	if err != nil {
		return err
	}
	// The names of the flows of followed events, read when first seen.
	names := map[string]string{}
	// The counts (readCounts: the number of flows from the listing's
	// index, the rest from the active flows' listings, page by page), and
	// the stalled flows to list after them (read a second time when there
	// are more than plainStalledKeep), never every summary at once.
	now := time.Now()
	var stalled []state.FlowSummary
	more := false
	counts, err := readCounts(ctx, src, now, func(f *state.FlowSummary) {
		if f.Stalled(now) {
			if len(stalled) < plainStalledKeep {
				stalled = append(stalled, *f)
			} else {
				more = true
			}
		}
	})
	if err != nil {
		return err
	}
	reviews, err := src.PendingReviews(ctx)
	if err != nil {
		return err
	}
	store := ""
	if opt.Backend != "" {
		store = fmt.Sprintf(" store=%q", opt.Backend)
	}
	// running counts only flows something drives; a flow whose runner is
	// gone is stalled, with the command that continues it.
	fmt.Fprintf(opt.Out, "%s state flows=%d running=%d stalled=%d waiting_gates=%d%s\n", stamp(now), counts.total, counts.running, counts.stalled, len(reviews), store)
	printStalled := func(f *state.FlowSummary) bool {
		cont, _ := resumeCommand(opt.Invocation, func(id string) string { return rootOf(ctx, src, id, f.ParentFlowID) }, f)
		if f.Driver == state.DriverLibrary {
			cont = "run the Go program again"
		}
		fmt.Fprintf(opt.Out, "%s flow_stalled flow=%s name=%s status=%s step=%s continue=%q\n",
			stamp(now), specs.EscapeControl(f.FlowID), specs.EscapeControl(f.FlowName), f.Status, specs.EscapeControl(f.CurrentStep), cont)
		return true
	}
	if more {
		err = scanActive(ctx, src, func(f *state.FlowSummary) bool { return !f.Stalled(now) || printStalled(f) })
		if err != nil {
			return err
		}
	} else {
		for i := range stalled {
			printStalled(&stalled[i])
		}
	}
	for _, r := range reviews {
		fmt.Fprintf(opt.Out, "%s gate_waiting flow=%s name=%s step=%s round=%d deadline=%q question=%q\n",
			stamp(now), specs.EscapeControl(r.FlowID), specs.EscapeControl(r.FlowName), specs.EscapeControl(r.StepID), r.Round, deadlineText(r, now), r.Question)
	}
	if opt.Once {
		return nil
	}
	evs, err := src.Watch(ctx, after)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case batch, ok := <-evs:
			if !ok {
				return nil
			}
			for _, ev := range batch {
				if _, ok := names[ev.FlowID]; !ok {
					if len(names) >= plainNames {
						clear(names) // bounded: names are read again
					}
					if st, err := src.Get(ctx, ev.FlowID); err == nil {
						names[ev.FlowID] = st.FlowName
					}
				}
				fmt.Fprintln(opt.Out, PlainEventLine(ev, names[ev.FlowID]))
			}
		case u, ok := <-opt.Specs:
			if !ok {
				opt.Specs = nil
				continue
			}
			for _, l := range plainSpecLines(u) {
				fmt.Fprintln(opt.Out, l)
			}
		}
	}
}

// plainNames bounds the flow names RunPlain remembers for event lines.
const plainNames = 4096

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// PlainEventLine renders one event as a line: time, type, flow, flow name,
// step, then the event's data as sorted key=value pairs.
func PlainEventLine(ev engine.Event, flowName string) string {
	var b strings.Builder
	// Names, ids and data come from specs, steps, agents and reviewers:
	// escaped (specs.EscapeControl; a quoted value is escaped by %q).
	fmt.Fprintf(&b, "%s %s flow=%s", stamp(ev.Time), specs.EscapeControl(string(ev.Type)), specs.EscapeControl(ev.FlowID))
	if flowName != "" {
		fmt.Fprintf(&b, " name=%s", specs.EscapeControl(flowName))
	}
	if ev.StepID != "" {
		fmt.Fprintf(&b, " step=%s", specs.EscapeControl(ev.StepID))
	}
	fields, err := ev.DataFields()
	if err != nil {
		fmt.Fprintf(&b, " data_error=%q", err.Error())
	}
	for _, f := range fields {
		k := f.Key
		var s string
		switch {
		case string(f.JSON) == "null":
			continue
		case f.JSON[0] == '"':
			if json.Unmarshal(f.JSON, &s) != nil {
				continue
			}
		default:
			s = string(f.JSON)
		}
		if s == "" {
			continue
		}
		if strings.ContainsAny(s, " \t\"=") {
			s = fmt.Sprintf("%q", s) // strconv.Quote escapes every control character
		} else {
			s = specs.EscapeControl(s)
		}
		fmt.Fprintf(&b, " %s=%s", specs.EscapeControl(k), s)
	}
	return b.String()
}

func plainSpecLines(u watch.Update) []string {
	now := stamp(time.Now())
	switch {
	case u.Removed:
		return []string{now + " spec_removed file=" + specs.EscapeControl(u.Path)}
	case specValid(u):
		return []string{now + " spec_valid file=" + specs.EscapeControl(u.Path)}
	}
	out := []string{fmt.Sprintf("%s spec_invalid file=%s problems=%d", now, specs.EscapeControl(u.Path), len(u.Diags))}
	for _, d := range u.Diags {
		out = append(out, fmt.Sprintf("%s diagnostic %s:%d:%d %s %s: %s", now, specs.EscapeControl(u.Path), d.Line, d.Column, d.Severity, d.Code, specs.EscapeControl(d.Message)))
	}
	return out
}
