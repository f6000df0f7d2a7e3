package store

import (
	"bufio"
	"bytes"
	"os"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

// storedEventsFile holds one event of every kind and shape, as the
// map-based build (Event.Data a map[string]any) stored them: the bytes
// must keep decoding, and re-encode the same (testdata/events/README.md).
const storedEventsFile = "../testdata/events/stored-v1.jsonl"

// currentEventsFile is, line for line, what this build writes for them.
const currentEventsFile = "../testdata/events/current.jsonl"

func storedEventLines(tb testing.TB, name string) [][]byte {
	tb.Helper()
	f, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(f))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return lines
}

// BenchmarkEventCodec encodes and decodes every stored event shape as
// Append and Events do per event; ns/event is the mean over the shapes.
func BenchmarkEventCodec(b *testing.B) {
	lines := storedEventLines(b, storedEventsFile)
	events := make([]engine.Event, len(lines))
	for i, l := range lines {
		if err := unmarshalJSON(bytes.Clone(l), &events[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range events {
				if _, err := encodeEvent(&events[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			for _, l := range lines {
				buf = append(buf[:0], l...)
				var ev engine.Event
				if err := unmarshalJSON(buf, &ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/event")
	})
}
