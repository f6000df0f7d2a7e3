package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
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
// plain text, never coloured, and each stands alone: a time, a kind, then
// key=value fields, each value one visible word or quoted (plainValue), so
// no name, step, question or rationale can forge a field or a line:
//
//	2026-11-22T05:00:00Z gate_opened flow=3f2a9c1e name=deploy step=review round=0
//	2026-11-22T05:00:01Z gate_waiting flow=3f2a9c1e name="x flow=FAKE" step=review round=0 deadline="59m left, then kill" question="Ship it?"
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
		store = " store=" + plainValue(opt.Backend)
	}
	// running counts only flows something drives; a flow whose runner is
	// gone is stalled, with the command that continues it.
	fmt.Fprintf(opt.Out, "%s state flows=%d running=%d stalled=%d waiting_gates=%d%s\n", stamp(now), counts.total, counts.running, counts.stalled, len(reviews), store)
	printStalled := func(f *state.FlowSummary) bool {
		cont, _ := resumeCommand(opt.Invocation, func(id string) string { return rootOf(ctx, src, id, f.ParentFlowID) }, f)
		if f.Driver == state.DriverLibrary {
			cont = "stratum kill " + f.FlowID + " --reason TEXT (a Go program's flow is not resumed)"
		}
		fmt.Fprintf(opt.Out, "%s flow_stalled flow=%s name=%s status=%s step=%s continue=%s\n",
			stamp(now), plainValue(f.FlowID), plainValue(f.FlowName), plainValue(string(f.Status)), plainValue(f.CurrentStep), plainValue(cont))
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
		fmt.Fprintf(opt.Out, "%s gate_waiting flow=%s name=%s step=%s round=%d deadline=%s question=%s\n",
			stamp(now), plainValue(r.FlowID), plainValue(r.FlowName), plainValue(r.StepID), r.Round, plainValue(deadlineText(r, now)), plainValue(r.Question))
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
	// every value goes through plainValue.
	fmt.Fprintf(&b, "%s %s flow=%s", stamp(ev.Time), plainValue(string(ev.Type)), plainValue(ev.FlowID))
	if flowName != "" {
		fmt.Fprintf(&b, " name=%s", plainValue(flowName))
	}
	if ev.StepID != "" {
		fmt.Fprintf(&b, " step=%s", plainValue(ev.StepID))
	}
	fields, err := ev.DataFields()
	if err != nil {
		fmt.Fprintf(&b, " data_error=%s", plainValue(err.Error()))
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
		fmt.Fprintf(&b, " %s=%s", plainKey(k), plainValue(s))
	}
	return b.String()
}

func plainSpecLines(u watch.Update) []string {
	now := stamp(time.Now())
	switch {
	case u.Removed:
		return []string{now + " spec_removed file=" + plainValue(u.Path)}
	case specValid(u):
		return []string{now + " spec_valid file=" + plainValue(u.Path)}
	}
	out := []string{fmt.Sprintf("%s spec_invalid file=%s problems=%d", now, plainValue(u.Path), len(u.Diags))}
	for _, d := range u.Diags {
		out = append(out, fmt.Sprintf("%s diagnostic file=%s line=%d col=%d severity=%s code=%s message=%s", now,
			plainValue(u.Path), d.Line, d.Column, plainValue(string(d.Severity)), plainValue(d.Code), plainValue(d.Message)))
	}
	return out
}

// plainValue is a field value of a --plain line, the one rule for all of
// them: as it is when it is one visible word (valid UTF-8, graphic
// characters only, no space of any kind, no '"', '=' or '\\'), otherwise
// quoted with strconv.Quote, which escapes every control, bidirectional
// and invisible character. So no value — a flow named "x flow=FAKE
// step=deploy", a rationale with a newline — can add a field or a line of
// its own: a reader splits each line on spaces outside quotes and reads
// key=value pairs.
func plainValue(s string) string {
	if s != "" && utf8.ValidString(s) && !strings.ContainsAny(s, "\"=\\") &&
		strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// plainKey is a field name of a --plain line: the event data's keys are
// the engine's, but a key is never allowed to carry a space or an '='.
func plainKey(k string) string {
	if v := plainValue(k); v == k {
		return k
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			return r
		}
		return '_'
	}, k)
}
