package run

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Progress event kinds.
const (
	EventFlowStarted   = "flow_started"
	EventStepStarted   = "step_started"
	EventAttemptFailed = "attempt_failed"
	EventStepDone      = "step_done"
	EventStepFailed    = "step_failed"
	EventIteration     = "iteration"
	EventGateOpen      = "gate_open"
	EventGateWait      = "gate_wait"
	EventGateResolved  = "gate_resolved"
	EventFlowFinished  = "flow_finished"
)

// Event is one progress event of a run.
type Event struct {
	Kind     string
	FlowID   string
	FlowName string
	// ParentFlowID is set on flow_started of a child flow.
	ParentFlowID string
	Step         *specs.Step
	Spec         *specs.Spec
	// Attempt counts the step's attempts in the flow's Round (as its
	// retries and STRATUM_ATTEMPT do); Round is how many revises sent the
	// flow back so far.
	Attempt    int
	Round      int
	Iteration  int
	Elapsed    time.Duration
	CostUSD    *float64
	Tokens     int64 // step_done: tokens the step's attempts spent
	CacheHit   bool
	Violations []string
	Status     string
	Message    string
	Gate       *review.PendingReview
	Resumed    bool
}

// Progress receives the run's progress events. Implementations must be
// quick; they run on the runner's goroutine.
type Progress interface {
	Event(e Event)
}

type nopProgress struct{}

func (nopProgress) Event(Event) {}

// Printer is the stderr progress reporter. On a terminal it shows a live
// line per running step (elapsed time, attempt) that is replaced by the
// step's result line (attempts, time, cost); otherwise it prints one line
// per event. With GitHub set, failures are also printed as GitHub Actions
// `::error file=…,line=…::` annotations pointing at the step in the spec.
type Printer struct {
	W        io.Writer
	Terminal bool
	GitHub   bool

	mu      sync.Mutex
	start   time.Time
	stepT0  time.Time
	live    bool
	stopped chan struct{}
	cur     string
}

func (p *Printer) since() string {
	if p.start.IsZero() {
		return "0.0s"
	}
	return fmt.Sprintf("%.1fs", time.Since(p.start).Seconds())
}

func stepName(e Event) string {
	if e.Step == nil {
		return "-"
	}
	return specs.EscapeControl(e.Step.ID)
}

// escapeEvent escapes the untrusted text of e (names, messages, violations:
// they come from specs, commands, agents and providers) before it is
// printed.
func escapeEvent(e Event) Event {
	e.FlowID = specs.EscapeControl(e.FlowID)
	e.FlowName = specs.EscapeControl(e.FlowName)
	e.Status = specs.EscapeControl(e.Status)
	if e.Kind == EventTask {
		// One line per task: a task id's newline must not start a line of
		// its own ("✓ build complete").
		e.Message = specs.EscapeControl(e.Message)
	} else {
		e.Message = specs.EscapeControlLines(e.Message)
	}
	if len(e.Violations) > 0 {
		vs := make([]string, len(e.Violations))
		for i, v := range e.Violations {
			vs[i] = specs.EscapeControl(v)
		}
		e.Violations = vs
	}
	return e
}

// Event prints e.
func (p *Printer) Event(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		p.start = time.Now()
	}
	e = escapeEvent(e)
	switch e.Kind {
	case EventFlowStarted:
		verb := "running"
		if e.Resumed {
			verb = "resuming"
		}
		p.println(fmt.Sprintf("stratum: %s flow %s (%s)", verb, e.FlowName, e.FlowID))
	case EventStepStarted:
		p.stepT0 = time.Now()
		what := fmt.Sprintf("▸ %s", stepName(e))
		var tags []string
		if e.Attempt > 1 {
			tags = append(tags, fmt.Sprintf("attempt %d", e.Attempt))
		}
		if e.Round > 0 {
			tags = append(tags, fmt.Sprintf("round %d", e.Round))
		}
		if e.Iteration > 0 {
			tags = append(tags, fmt.Sprintf("iteration %d", e.Iteration))
		}
		if len(tags) > 0 {
			what += " (" + strings.Join(tags, ", ") + ")"
		}
		if e.Message != "" {
			what += " — " + e.Message
		}
		if p.Terminal {
			p.cur = what
			p.showLive()
			p.startTicker()
		} else {
			p.println(fmt.Sprintf("[%s] %s", p.since(), strings.TrimPrefix(what, "▸ ")+" started"))
		}
	case EventAttemptFailed:
		p.println(fmt.Sprintf("[%s] ✗ %s attempt %d%s failed: %s", p.since(), stepName(e), e.Attempt, inRound(e), strings.Join(e.Violations, "; ")))
	case EventTask:
		p.println(fmt.Sprintf("[%s] %s", p.since(), taskLine(e)))
	case EventIteration:
		p.println(fmt.Sprintf("[%s] ↻ %s iteration %d: %s", p.since(), stepName(e), e.Iteration, e.Message))
	case EventStepDone:
		extra := stepCost(e)
		if e.CacheHit {
			extra += ", cached"
		}
		p.println(fmt.Sprintf("[%s] ✓ %s (%d attempt%s%s, %s%s)", p.since(), stepName(e), e.Attempt, plural(e.Attempt), inRound(e), e.Elapsed.Round(time.Millisecond), extra))
	case EventStepFailed:
		msg := strings.Join(e.Violations, "; ")
		if e.Message != "" {
			msg += " (" + e.Message + ")"
		}
		p.println(fmt.Sprintf("[%s] ✗ %s failed after %d attempt%s%s: %s", p.since(), stepName(e), e.Attempt, plural(e.Attempt), inRound(e), msg))
		p.annotate(e.Spec, e.Step, fmt.Sprintf("step %s failed: %s", stepName(e), msg))
	case EventGateOpen:
		p.println(fmt.Sprintf("[%s] ⏸ gate %s is waiting for a decision", p.since(), stepName(e)))
	case EventGateWait, EventGateResolved:
		p.println(fmt.Sprintf("[%s] ⏵ gate %s: %s", p.since(), stepName(e), e.Message))
	case EventFlowFinished:
		status := e.Status
		switch status {
		case EndError:
			status = "stopped with an error"
		case EndGate:
			status = "stopped at a gate"
		}
		line := fmt.Sprintf("stratum: flow %s %s after %s", e.FlowID, status, p.since())
		if e.Message != "" && e.Status != EndComplete {
			line += "\n" + e.Message
		}
		p.println(line)
		if e.Status != EndComplete && e.Status != EndInterrupted {
			step := e.Step
			if e.Gate != nil {
				step = findStep(e.Spec, e.Gate.StepID)
			}
			first, _, _ := strings.Cut(e.Message, "\n")
			p.annotate(e.Spec, step, fmt.Sprintf("flow %s %s: %s", e.FlowID, e.Status, first))
		}
	}
}

// inRound names the round of a step's attempts once a revise sent the
// flow back (" in round 1"); the attempts are counted within it.
func inRound(e Event) string {
	if e.Round == 0 {
		return ""
	}
	return fmt.Sprintf(" in round %d", e.Round)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// println ends the live line (if any) and prints a line.
func (p *Printer) println(s string) {
	if p.live {
		fmt.Fprint(p.W, "\r\033[K")
		p.live = false
		p.stopTicker()
	}
	fmt.Fprintln(p.W, s)
}

func (p *Printer) showLive() {
	fmt.Fprintf(p.W, "\r\033[K%s  %s", p.cur, time.Since(p.stepT0).Round(100*time.Millisecond))
	p.live = true
}

func (p *Printer) startTicker() {
	if p.stopped != nil {
		return
	}
	stop := make(chan struct{})
	p.stopped = stop
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				if p.live && p.stopped == stop {
					p.showLive()
				}
				p.mu.Unlock()
			}
		}
	}()
}

func (p *Printer) stopTicker() {
	if p.stopped != nil {
		close(p.stopped)
		p.stopped = nil
	}
}

// annotate prints a GitHub Actions error annotation at the step's line.
func (p *Printer) annotate(sp *specs.Spec, step *specs.Step, msg string) {
	if !p.GitHub {
		return
	}
	file := ""
	if sp != nil {
		file = relToCwd(sp.File)
	}
	props := []string{}
	if file != "" {
		props = append(props, "file="+ghProp(file))
	}
	if l := stepLine(step); l > 0 {
		props = append(props, fmt.Sprintf("line=%d", l))
	}
	props = append(props, "title="+ghProp("stratum run"))
	fmt.Fprintf(p.W, "::error %s::%s\n", strings.Join(props, ","), ghData(msg))
}

func ghData(s string) string {
	r := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	return r.Replace(s)
}

func ghProp(s string) string {
	r := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
	return r.Replace(s)
}

// relToCwd shows an absolute path under the working directory relative to
// it (annotations and reports want repository-relative paths).
func relToCwd(file string) string {
	if !filepath.IsAbs(file) {
		return file
	}
	wd, err := os.Getwd()
	if err != nil {
		return file
	}
	if rel, err := filepath.Rel(wd, file); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return file
}

// stepCost is the cost part of a step's result line: ", $0.0123" when the
// step cost something, ", cost ?" when it spent tokens at an unknown price,
// and nothing for a step that cost nothing (a command, an agent CLI that
// reports no usage, a cache hit).
func stepCost(e Event) string {
	switch {
	case e.CostUSD != nil && *e.CostUSD > 0:
		if *e.CostUSD < 0.00005 {
			return ", <$0.0001"
		}
		return fmt.Sprintf(", $%.4f", *e.CostUSD)
	case e.CostUSD == nil && e.Tokens > 0:
		return ", cost ?"
	}
	return ""
}
