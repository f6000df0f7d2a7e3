package tui

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// TestCommandRefusesWithoutTerminal: the full console without a terminal,
// or with a configuration that did not load, is a UsageError (exit 2)
// carrying the message main prints; --plain --once prints the state line.
func TestCommandRefusesWithoutTerminal(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Root: t.TempDir(), Store: enginetest.New()}
	var ue *UsageError

	err := Command(context.Background(), CommandOptions{Service: svc, Once: true, Out: &bytes.Buffer{}})
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "tui needs a terminal") || !strings.Contains(err.Error(), "--plain") {
		t.Fatalf("no terminal: %v", err)
	}
	bad := errors.New("config .stratum/config.yaml: bad")
	err = Command(context.Background(), CommandOptions{Service: svc, Once: true, Terminal: true, ConfigErr: bad, Out: &bytes.Buffer{}})
	if !errors.As(err, &ue) || !errors.Is(err, bad) {
		t.Fatalf("config error: %v", err)
	}

	var out bytes.Buffer
	if err := Command(context.Background(), CommandOptions{Service: svc, Plain: true, Once: true, Backend: "memory", Out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "state flows=0") || !strings.Contains(out.String(), "store=memory") {
		t.Errorf("--plain --once printed %q", out.String())
	}
}

// TestCommandWatchError: --plain following a directory that cannot be
// watched is a UsageError naming --watch.
func TestCommandWatchError(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Root: t.TempDir(), Store: enginetest.New()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	missing := t.TempDir() + "/gone"
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("the directory exists")
	}
	err := Command(ctx, CommandOptions{Service: svc, Plain: true, SpecDirs: []string{missing}, Out: &bytes.Buffer{}})
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "--watch: ") {
		t.Fatalf("watch error: %v", err)
	}
}
