package run

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the run as a JUnit XML report: one test suite per flow
// (the root and each child flow run), one test case per step. Failed steps
// carry their violations; steps never reached are skipped; a run that
// stopped at a gate or was interrupted reports the pending steps skipped
// with the reason.
func WriteJUnit(w io.Writer, o *Outcome) error {
	file := ""
	if o.Spec != nil {
		file = relToCwd(o.Spec.File)
	}
	byFlow := map[string]*junitSuite{}
	var suites []*junitSuite
	total := 0.0
	for _, s := range o.Steps {
		su := byFlow[s.FlowID]
		if su == nil {
			name := o.FlowName
			if s.FlowID != o.FlowID {
				name += " (child flow " + s.FlowID + ")"
			} else {
				name += " (" + s.FlowID + ")"
			}
			su = &junitSuite{Name: name}
			byFlow[s.FlowID] = su
			suites = append(suites, su)
		}
		c := junitCase{Name: s.StepID, Classname: o.FlowName, File: file, Line: s.Line, Time: secs(s.Duration.Seconds())}
		total += s.Duration.Seconds()
		switch s.Status {
		case "failed":
			c.Failure = &junitFailure{Message: fmt.Sprintf("step %s failed after %d attempt(s)", s.StepID, s.Attempts),
				Type: "stratum.step_failed", Text: strings.Join(s.Violations, "\n")}
			su.Failures++
		case "killed":
			c.Failure = &junitFailure{Message: fmt.Sprintf("gate %s killed the flow", s.StepID), Type: "stratum.gate_killed"}
			su.Failures++
		case "skipped":
			c.Skipped = &junitSkipped{Message: "not run (skipped)"}
			su.Skipped++
		case "pending":
			c.Skipped = &junitSkipped{Message: "not run: the run ended " + o.Status}
			su.Skipped++
		}
		if s.Attempts > 1 {
			c.SystemOut = fmt.Sprintf("attempts: %d", s.Attempts)
		}
		su.Cases = append(su.Cases, c)
		su.Tests++
	}
	out := junitSuites{Name: "stratum run " + o.FlowName, Time: secs(total)}
	for _, su := range suites {
		su.Time = "0"
		out.Tests += su.Tests
		out.Failures += su.Failures
		out.Skipped += su.Skipped
		out.Suites = append(out.Suites, *su)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func secs(f float64) string { return fmt.Sprintf("%.3f", f) }
