package stratum

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync"
)

// Partial is one element of a Stream.
type Partial[T any] struct {
	// Attempt counts from 1.
	Attempt int
	// Delta is the new text of this attempt (a piece of its JSON answer).
	Delta string
	// Value is a best-effort decoding of the attempt's text so far: the
	// zero value until a prefix decodes, then the last prefix that did.
	// It is not checked: only the Final element's is.
	Value T
	// Retry is set once, on its own element, when the attempt failed: its
	// violations. The next attempt's deltas follow.
	Retry []string
	// Final marks the last element: Value is the checked answer.
	Final bool
}

// Stream calls the function as Call does — the same preconditions,
// cache, attempts, checks, budgets, trace and recording — and yields each
// attempt's answer as it arrives: its deltas with a best-effort partial
// Value, an element with Retry when the attempt failed, and last a Final
// element with the checked value. An error ends the sequence as its last
// element (with the zero Partial). Breaking out of the loop cancels the
// request in flight and returns once the call has ended: no goroutine
// outlives the loop.
//
// The built-in providers stream over server-sent events; a Model that
// does not stream (it ignores ModelRequest.OnChunk), a cache hit and a
// replayed recording yield their answer whole.
func (f *Fn[In, Out]) Stream(ctx context.Context, in In) iter.Seq2[Partial[Out], error] {
	return func(yield func(Partial[Out], error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		elems := make(chan Partial[Out])
		type ended struct {
			out Out
			err error
		}
		done := make(chan ended, 1)
		s := &streamState[Out]{send: func(p Partial[Out]) error {
			select {
			case elems <- p:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
		go func() {
			out, err := f.callWith(ctx, in, s.hook())
			done <- ended{out, err}
		}()
		for {
			select {
			case p := <-elems:
				if !yield(p, nil) {
					cancel()
					<-done
					return
				}
			case e := <-done:
				if e.err != nil {
					yield(Partial[Out]{}, e.err)
					return
				}
				yield(Partial[Out]{Attempt: max(s.attempt(), 1), Value: e.out, Final: true}, nil)
				return
			}
		}
	}
}

// streamHook is what a streamed Call tells its stream: each attempt's
// deltas and failures.
type streamHook struct {
	delta  func(attempt int, text string) error
	failed func(attempt int, violations []string)
}

// streamState turns a Call's deltas into Partials.
type streamState[Out any] struct {
	send func(Partial[Out]) error

	mu    sync.Mutex
	last  int
	text  strings.Builder
	value Out
}

func (s *streamState[Out]) attempt() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *streamState[Out]) hook() *streamHook {
	return &streamHook{
		delta: func(attempt int, text string) error {
			s.mu.Lock()
			if attempt != s.last {
				var zero Out
				s.last, s.value = attempt, zero
				s.text.Reset()
			}
			s.text.WriteString(text)
			if v, ok := decodePrefix[Out](s.text.String()); ok {
				s.value = v
			}
			p := Partial[Out]{Attempt: attempt, Delta: text, Value: s.value}
			s.mu.Unlock()
			return s.send(p)
		},
		failed: func(attempt int, violations []string) {
			s.mu.Lock()
			s.last = attempt
			s.mu.Unlock()
			_ = s.send(Partial[Out]{Attempt: attempt, Retry: append([]string(nil), violations...)})
		},
	}
}

// decodePrefix decodes the longest complete-looking prefix of a JSON
// answer into T: the text with its open string, arrays and objects
// closed, a dangling key, colon or comma dropped.
func decodePrefix[T any](text string) (T, bool) {
	var v T
	for cut := strings.TrimSpace(text); cut != ""; {
		if closed, ok := closeJSON(cut); ok && json.Unmarshal([]byte(closed), &v) == nil {
			return v, true
		}
		// Drop the last member or element begun and try again.
		i := strings.LastIndexAny(cut, ",{[")
		next := cut[:max(i, 0)]
		if i >= 0 && cut[i] != ',' {
			next = cut[:i+1]
		}
		if i < 0 || next == cut {
			break
		}
		cut = next
	}
	return v, false
}

// closeJSON closes the open string, arrays and objects of a JSON prefix;
// ok is false when the prefix ends where no value can be closed (after a
// key or a colon).
func closeJSON(s string) (string, bool) {
	var stack []byte
	in, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in:
		case c == '{' || c == '[':
			stack = append(stack, c)
		case c == '}' || c == ']':
			if len(stack) == 0 {
				return "", false
			}
			stack = stack[:len(stack)-1]
		}
	}
	if esc {
		s = s[:len(s)-1]
	}
	if in {
		s += `"`
	}
	t := strings.TrimRight(s, " \t\r\n")
	if strings.HasSuffix(t, ":") || strings.HasSuffix(t, ",") {
		return "", false
	}
	var b strings.Builder
	b.WriteString(t)
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.String(), true
}
