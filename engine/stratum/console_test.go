package stratum

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/review"
)

// consoleRuntime is a Runtime without a store or sinks (reviews go to the
// console sink) whose console reads in and writes out.
func consoleRuntime(t *testing.T, in, out *os.File) context.Context {
	t.Helper()
	t.Setenv("STRATUM_HOME", t.TempDir())
	rt, err := New(Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	rt.reviews.consoleIn, rt.reviews.consoleOut = in, out
	t.Cleanup(func() { rt.Close(context.Background()) })
	return WithRuntime(context.Background(), rt)
}

// TestConsoleWithoutTerminal: the console sink decides nothing when stdin
// or stderr is not a terminal — /dev/null (a character device, which the
// console once took for a terminal), a pipe — whatever the approver:
// AwaitHuman fails at once, saying nobody can decide the review here,
// and nothing is read from the input or shown.
func TestConsoleWithoutTerminal(t *testing.T) {
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	// What a program piped in: it must stay unread.
	if _, err := inW.WriteString("1\nlooks good\nreview\n"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		in, out *os.File
	}{
		{"/dev/null", devnull, devnull},
		{"stdin /dev/null", devnull, outW},
		{"a pipe", inR, outW},
	} {
		for _, approver := range []review.Approver{"", review.HumanApprover} {
			ctx := consoleRuntime(t, c.in, c.out)
			start := time.Now()
			_, err := AwaitHuman(ctx, Review[string]{Question: "Ship?", Options: []string{"yes", "no"}, Approver: approver})
			if err == nil || !strings.Contains(err.Error(), "nobody can decide this review here") || !errors.Is(err, ErrStratum) {
				t.Errorf("%s, approver %q: AwaitHuman = %v", c.name, approver, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%s: refused after %s, not at once", c.name, d)
			}
		}
	}
	outW.Close()
	if shown, _ := io.ReadAll(outR); len(shown) != 0 {
		t.Errorf("the console showed %q", shown)
	}
	inW.Close()
	if left, _ := io.ReadAll(inR); string(left) != "1\nlooks good\nreview\n" {
		t.Errorf("the console read the pipe: %q left", left)
	}
}
