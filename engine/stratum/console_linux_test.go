package stratum

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// pty is a pseudo-terminal opened from /dev/ptmx: the console reads and
// writes the terminal (tty); the test types into master and reads what
// the console shows (echo included).
type pty struct {
	master, tty *os.File
	mu          sync.Mutex
	shown       bytes.Buffer
}

func openPTY(t *testing.T) *pty {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), req, uintptr(arg)); errno != 0 {
			t.Skipf("pseudo-terminal ioctl %#x: %v", req, errno)
		}
	}
	var unlock int32
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Skipf("no pseudo-terminal: %v", err)
	}
	p := &pty{master: master, tty: tty}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.shown.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		master.Close()
		<-done
	})
	return p
}

// waitFor waits until the terminal has shown s (after what it showed
// before mark), and returns the new mark.
func (p *pty) waitFor(t *testing.T, mark int, s string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		got := p.shown.String()
		p.mu.Unlock()
		if i := strings.Index(got[mark:], s); i >= 0 {
			return mark + i + len(s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("the terminal did not show %q; it shows:\n%s", s, p.shown.String())
	return 0
}

func (p *pty) typeLine(t *testing.T, s string) {
	t.Helper()
	if _, err := p.master.WriteString(s + "\n"); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleOnTerminal: on a real terminal (a pty) the console sink
// decides a review — an option, then a rationale — and an Approver
// "human" review only after the typed confirmation, asking again after a
// wrong one; the decision's channel is "console".
func TestConsoleOnTerminal(t *testing.T) {
	p := openPTY(t)
	ctx := consoleRuntime(t, p.tty, p.tty)

	ch := await(ctx, Review[string]{Question: "Which plan?", Options: []string{"left", "right"}})
	mark := p.waitFor(t, 0, "decision (1–2, or reject): ")
	p.typeLine(t, "7")
	mark = p.waitFor(t, mark, "type a number from 1 to 2")
	p.typeLine(t, "2")
	mark = p.waitFor(t, mark, "rationale (optional): ")
	p.typeLine(t, "right is better")
	a := result(t, ch)
	if a.err != nil || a.d.Value != "right" || a.d.Channel != "console" || a.d.Rationale != "right is better" {
		t.Fatalf("AwaitHuman = %+v, %v", a.d, a.err)
	}

	flow := NewFlow("release", Budget{}, func(ctx context.Context, _ struct{}) (string, error) {
		d, err := AwaitHuman(ctx, Review[string]{Question: "Ship?", Options: []string{"yes", "no"}, Approver: "human"})
		return d.Value + " by " + d.Channel, err
	})
	done := make(chan error, 1)
	var got string
	go func() {
		var err error
		got, err = flow.Run(ctx, struct{}{})
		done <- err
	}()
	mark = p.waitFor(t, mark, "Ship?")
	p.typeLine(t, "1")
	mark = p.waitFor(t, mark, "rationale (optional): ")
	p.typeLine(t, "checked")
	mark = p.waitFor(t, mark, "type the gate's step id (review-2)")
	p.typeLine(t, "yes please")
	mark = p.waitFor(t, mark, "not confirmed")
	// Asked again: the review is not shown twice.
	mark = p.waitFor(t, mark, "decision (1–2, or reject): ")
	p.typeLine(t, "1")
	mark = p.waitFor(t, mark, "rationale (optional): ")
	p.typeLine(t, "checked")
	p.waitFor(t, mark, "type the gate's step id (review-2)")
	p.typeLine(t, "review-2")
	select {
	case err := <-done:
		if err != nil || got != "yes by console" {
			t.Fatalf("Flow.Run = %q, %v", got, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the confirmed decision did not end the review")
	}
	p.mu.Lock()
	shown := p.shown.String()
	p.mu.Unlock()
	if n := strings.Count(shown, "Ship?"); n != 1 {
		t.Errorf("the review was shown %d times", n)
	}
}
