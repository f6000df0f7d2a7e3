package tui

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/specs/watch"
)

// specUpdates are two watched spec files: one valid, one with diagnostics.
func specUpdates(t testing.TB) []watch.Update {
	sp, ds := specs.Parse("deploy.stratum.yaml", []byte(gateSpec), exprlang.Compile)
	if sp == nil {
		t.Fatalf("fixture spec invalid: %v", ds)
	}
	bad := "version: \"0.2\"\nflows:\n  main:\n    steps:\n      - id: a\n        intent: x\n        next: nowhere\n"
	bsp, bds := specs.Parse("broken.stratum.yaml", []byte(bad), exprlang.Compile)
	return []watch.Update{
		{Path: "/work/specs/deploy.stratum.yaml", Gen: 1, Spec: sp, Diags: ds},
		{Path: "/work/specs/broken.stratum.yaml", Gen: 2, Spec: bsp, Diags: bds},
	}
}

// TestGoldenFrames renders every pane at 80×24 and 120×40, colour off.
func TestGoldenFrames(t *testing.T) {
	f := newFixture(t)
	panes := []struct {
		name  string
		key   string
		setup func(m *Model)
	}{
		{"flows", "1", nil},
		{"trace", "2", func(m *Model) { press(m, "down", "down", "enter") }},
		{"gates", "3", nil},
		{"checkpoints", "4", nil},
		{"iterations", "5", nil},
		{"specs", "6", nil},
		{"help", "?", nil},
		{"decision", "3", func(m *Model) { press(m, "x"); typeText(m, "not tested") }},
		{"confirm", "3", func(m *Model) { press(m, "a"); typeText(m, "ship it"); press(m, "enter") }},
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, p := range panes {
			name := fmt.Sprintf("%s_%dx%d", p.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				m := newModel(t, f.src, size[0], size[1])
				for _, u := range specUpdates(t) {
					m.Update(specMsg(u))
				}
				// Select the hunt flow for the detail panes (flows are newest first).
				if p.name == "checkpoints" || p.name == "iterations" {
					press(m, "down")
				}
				// The deploy flow at its gate (after a failed attempt) for the trace.
				if p.name == "trace" {
					press(m, "down", "down")
				}
				press(m, p.key)
				if p.setup != nil {
					p.setup(m)
				}
				frame := m.View()
				checkFrame(t, frame, size[0], size[1])
				golden(t, name, frame)
			})
		}
	}
}

// checkFrame asserts the frame fills exactly the terminal: h lines, none
// wider than w, no colour escape codes.
func checkFrame(t *testing.T, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Errorf("frame has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d is %d cells wide (> %d): %q", i+1, n, w, l)
		}
	}
	if strings.Contains(frame, "\x1b[") {
		t.Errorf("monochrome frame contains escape codes: %q", frame)
	}
}

// TestTinyTerminals: every pane and dialog renders in tiny terminals
// without panicking and without overflowing the width.
func TestTinyTerminals(t *testing.T) {
	f := newFixture(t)
	for _, size := range [][2]int{{1, 1}, {10, 3}, {20, 5}, {40, 10}} {
		for _, keys := range [][]string{{"1"}, {"2", "enter"}, {"3"}, {"3", "a"}, {"4"}, {"5"}, {"6"}, {"?"}, {"4", "n"}, {"4", "v"}} {
			m := newModel(t, f.src, size[0], size[1])
			for _, u := range specUpdates(t) {
				m.Update(specMsg(u))
			}
			press(m, keys...)
			frame := m.View()
			lines := strings.Split(frame, "\n")
			if len(lines) > max(size[1], 1) {
				t.Errorf("%v %v: %d lines", size, keys, len(lines))
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Errorf("%v %v: line %q is %d wide", size, keys, l, w)
				}
			}
		}
	}
}

// The Flows pane drops columns by priority as the terminal narrows
// (UPDATED, DRIVER, ROUND, AGE, K/N); status, flow, step and the short id
// always show; at 80 columns everything but UPDATED fits.
func TestFlowColumnsByWidth(t *testing.T) {
	for _, c := range []struct {
		width int
		want  string
	}{
		{118, "STATUS FLOW STEP K/N ROUND ID AGE DRIVER UPDATED"},
		{78, "STATUS FLOW STEP K/N ROUND ID AGE DRIVER"},
		{70, "STATUS FLOW STEP K/N ROUND ID AGE"},
		{64, "STATUS FLOW STEP K/N ID AGE"},
		{58, "STATUS FLOW STEP K/N ID"},
		{40, "STATUS FLOW STEP ID"},
	} {
		cols := flowColumns(c.width)
		var titles []string
		total := len(cols) - 1
		for _, col := range cols {
			titles = append(titles, strings.TrimSpace(col.title))
			total += col.width
		}
		if got := strings.Join(titles, " "); got != c.want {
			t.Errorf("width %d: columns %q, want %q", c.width, got, c.want)
		}
		if total > c.width && c.width >= 60 {
			t.Errorf("width %d: the columns take %d", c.width, total)
		}
	}
}

// The console's commands name this stratum as it was invoked: a console
// started with go run tells a stalled flow's `go run . run --resume ID`.
func TestResumeCommandAsInvoked(t *testing.T) {
	f := newFixture(t)
	m := New(Options{Source: f.src, Keys: DefaultKeyMap(), Reviewer: "alice", Invocation: "go run .",
		Styles: DefaultStyles(NewRenderer(os.Stdout, true)), Now: func() time.Time { return base.Add(10 * time.Minute) }, Tick: -1})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	drive(m, m.Init())
	if v := m.View(); !strings.Contains(v, "continue it with: go run . run --resume "+f.runID) {
		t.Fatalf("the stalled flow's command:\n%s", v)
	}
}
