package watch

import (
	"slices"
	"testing"
	"time"
)

func TestDebouncer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type event struct {
		ms   int
		path string
	}
	tests := []struct {
		name     string
		events   []event
		nextMS   int // expected earliest deadline; -1: nothing pending
		checkMS  int
		wantDue  []string
		leftover int
	}{
		{name: "nothing pending", nextMS: -1, checkMS: 1000},
		{
			name:   "single event due after quiet period",
			events: []event{{0, "a"}}, nextMS: 100, checkMS: 100, wantDue: []string{"a"},
		},
		{
			name:   "not due before quiet period",
			events: []event{{0, "a"}}, nextMS: 100, checkMS: 99, leftover: 1,
		},
		{
			name:   "burst extends the deadline",
			events: []event{{0, "a"}, {50, "a"}, {90, "a"}}, nextMS: 190, checkMS: 150, leftover: 1,
		},
		{
			name:   "burst fires once after last event",
			events: []event{{0, "a"}, {50, "a"}, {90, "a"}}, nextMS: 190, checkMS: 190, wantDue: []string{"a"},
		},
		{
			name: "continuous writes capped at max delay",
			events: func() []event {
				var evs []event
				for ms := 0; ms <= 1500; ms += 50 {
					evs = append(evs, event{ms, "a"})
				}
				return evs
			}(),
			nextMS: 1000, checkMS: 1000, wantDue: []string{"a"},
		},
		{
			name:   "paths are debounced independently",
			events: []event{{0, "b"}, {0, "a"}, {80, "c"}}, nextMS: 100, checkMS: 120, wantDue: []string{"a", "b"}, leftover: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDebouncer(100 * time.Millisecond)
			for _, e := range tt.events {
				d.add(e.path, at(e.ms))
			}
			next, ok := d.next()
			if tt.nextMS < 0 {
				if ok {
					t.Fatalf("next() = %v, want nothing pending", next)
				}
			} else if !ok || !next.Equal(at(tt.nextMS)) {
				t.Fatalf("next() = %v, %v; want %v", next.Sub(t0), ok, time.Duration(tt.nextMS)*time.Millisecond)
			}
			got := d.due(at(tt.checkMS))
			if !slices.Equal(got, tt.wantDue) {
				t.Errorf("due() = %v, want %v", got, tt.wantDue)
			}
			if d.len() != tt.leftover {
				t.Errorf("pending after due() = %d, want %d", d.len(), tt.leftover)
			}
		})
	}
}

func TestOutboxCoalescesAndKeepsGenOrder(t *testing.T) {
	o := newOutbox()
	if _, ok := o.head(); ok {
		t.Fatal("empty outbox has a head")
	}
	o.pop() // must not panic
	o.put(Update{Path: "a", Gen: 1})
	o.put(Update{Path: "b", Gen: 2})
	o.put(Update{Path: "a", Gen: 3}) // replaces a@1, moves behind b
	o.put(Update{Path: "c", Gen: 4})
	o.put(Update{Path: "b", Gen: 5, Removed: true})
	if o.len() != 3 {
		t.Fatalf("len = %d, want 3", o.len())
	}
	var got []Update
	for {
		u, ok := o.head()
		if !ok {
			break
		}
		got = append(got, u)
		o.pop()
	}
	want := []Update{{Path: "a", Gen: 3}, {Path: "c", Gen: 4}, {Path: "b", Gen: 5, Removed: true}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Path != want[i].Path || got[i].Gen != want[i].Gen || got[i].Removed != want[i].Removed {
			t.Errorf("update %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
