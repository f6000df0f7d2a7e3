package run

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestPrinterTerminalAndGitHub(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: slow, intent: "slow", run: "sleep 0.5; echo 1"}
      - {id: bad, intent: "bad", run: "exit 2"}
`)
	out := &syncBuf{}
	o := e.start(sp, "main", nil, func(o *Options) { o.Progress = &Printer{W: out, Terminal: true, GitHub: true} })
	wantStatus(t, o, EndFailed, 1)
	s := out.String()
	for _, want := range []string{
		"\r\033[K▸ slow  ",    // the live line, redrawn with the elapsed time
		"✓ slow (1 attempt, ", // replaced by the result line
		"✗ bad failed after 1 attempt: command exited with status 2",
		"::error file=" + sp.File + ",line=7,title=stratum run::step bad failed: command exited with status 2",
		"stratum: flow " + o.FlowID + " failed after",
		"::error file=" + sp.File + ",line=7,title=stratum run::flow " + o.FlowID + " failed: Step 'bad' exhausted all retries",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%q", want, s)
		}
	}
	if strings.Count(s, "▸ slow") < 2 {
		t.Errorf("the live line was not refreshed:\n%q", s)
	}
}

func TestGitHubEscaping(t *testing.T) {
	if got := ghData("50% done\nnext"); got != "50%25 done%0Anext" {
		t.Fatal(got)
	}
	if got := ghProp("a:b,c"); got != "a%3Ab%2Cc" {
		t.Fatal(got)
	}
}
