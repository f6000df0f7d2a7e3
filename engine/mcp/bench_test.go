package mcp_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

const benchSpec = `version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
    n: {type: integer}
functions:
  review:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: s1
        intent: "one"
        output_contract: Out
        ensure: ["result.ok == True", "result.n > 0"]
        retries: 3
      - id: s2
        intent: "two"
        depends_on: [s1]
        output_contract: Out
        ensure: ["result.ok == True", "result.n > 0"]
      - id: s3
        intent: "three"
        depends_on: [s2]
        output_contract: Out
        ensure: ["result.ok == True", "result.n > 0"]
      - id: s4
        intent: "four"
        depends_on: [s3]
        output_contract: Out
        ensure: ["result.ok == True", "result.n > 0"]
      - id: s5
        intent: "five"
        depends_on: [s4]
        output_contract: Out
        ensure: ["result.ok == True", "result.n > 0"]
      - id: gate
        function: review
        depends_on: [s5]
        on_approve: ~
        on_revise: s1
        on_kill: ~
`

// BenchmarkToolCalls measures tool calls over stdio against the built binary
// and a real store in a temp dir, driving 100 flows of 5 steps and a gate per
// iteration: plan, 6 step_done (s1 fails its ensures once), resume,
// gate_resolve, audit, and a ping after each flow. It reports, per tool, the
// p50/p95 latency of the call and the server time: the latency minus the
// p50 of a ping round trip (the transport's share). The client is raw
// (rawClient, over rawServer): a call's latency ends when its answer's line is read, and
// the answer is decoded and checked after, so the client's decoding (an
// SDK client decodes each answer twice, more for a long audit) is not in
// it. Run with -benchtime=1x; STRATUM_CPUPROFILE=file profiles the server;
// STRATUM_TEST_BIN=path measures another binary (the A/B of a change:
// build the base commit into /tmp and alternate runs of both).
func BenchmarkToolCalls(b *testing.B) {
	c := startRawClient(b)
	lat := map[string][]time.Duration{}
	timed := func(tool string, args map[string]any, want map[string]any) map[string]any {
		params, err := json.Marshal(map[string]any{"name": tool, "arguments": args})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		line := c.call("tools/call", params)
		lat[tool] = append(lat[tool], time.Since(t0))
		var resp struct {
			Result struct {
				StructuredContent map[string]any `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			b.Fatalf("%s: %v: %.300s", tool, err, line)
		}
		expect(b, tool, resp.Result.StructuredContent, want)
		return resp.Result.StructuredContent
	}
	ping := func() {
		t0 := time.Now()
		c.call("ping", json.RawMessage(`{}`))
		lat["ping"] = append(lat["ping"], time.Since(t0))
	}
	for i := 0; i < 20; i++ { // warm up the connection and the store
		ping()
	}
	delete(lat, "ping")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for f := 0; f < 100; f++ {
			r := timed("stratum_plan", map[string]any{"spec": benchSpec, "flow": "main", "inputs": map[string]any{}}, map[string]any{"step_id": "s1"})
			id := r["flow_id"].(string)
			timed("stratum_step_done", map[string]any{"flow_id": id, "step_id": "s1", "result": map[string]any{"ok": false, "n": 0}},
				map[string]any{"status": "ensure_failed"})
			for k, step := range []string{"s1", "s2", "s3", "s4", "s5"} {
				want := map[string]any{"status": "execute_step"}
				if k == 4 {
					want = map[string]any{"status": "await_gate"}
				}
				timed("stratum_step_done", map[string]any{"flow_id": id, "step_id": step, "result": map[string]any{"ok": true, "n": k + 1}}, want)
			}
			timed("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "await_gate"})
			timed("stratum_gate_resolve", map[string]any{"flow_id": id, "step_id": "gate", "outcome": "approve", "rationale": "ok", "resolved_by": "agent"},
				map[string]any{"status": "complete"})
			timed("stratum_audit", map[string]any{"flow_id": id}, map[string]any{"status": "complete"})
			ping()
		}
	}
	b.StopTimer()
	pingP50, _ := percentiles(lat["ping"])
	var all []time.Duration
	var report strings.Builder
	tools := make([]string, 0, len(lat))
	for tool := range lat {
		tools = append(tools, tool)
	}
	sort.Strings(tools)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, tool := range tools {
		ds := lat[tool]
		p50, p95 := percentiles(ds)
		name := strings.TrimPrefix(tool, "stratum_")
		if tool == "ping" {
			fmt.Fprintf(&report, "%-22s n=%-5d p50=%-8s p95=%s\n", tool, len(ds), p50.Round(time.Microsecond), p95.Round(time.Microsecond))
			b.ReportMetric(ms(p50), "ping-p50-ms")
			continue
		}
		all = append(all, ds...)
		fmt.Fprintf(&report, "%-22s n=%-5d p50=%-8s p95=%-8s server p50=%-8s p95=%s\n", tool, len(ds),
			p50.Round(time.Microsecond), p95.Round(time.Microsecond), (p50 - pingP50).Round(time.Microsecond), (p95 - pingP50).Round(time.Microsecond))
		b.ReportMetric(ms(p50), name+"-p50-ms")
		b.ReportMetric(ms(p50-pingP50), name+"-server-p50-ms")
		b.ReportMetric(ms(p95-pingP50), name+"-server-p95-ms")
	}
	p50, p95 := percentiles(all)
	fmt.Fprintf(&report, "%-22s n=%-5d p50=%-8s p95=%-8s server p50=%s\n", "all", len(all), p50.Round(time.Microsecond), p95.Round(time.Microsecond), (p50 - pingP50).Round(time.Microsecond))
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(0, "ns/op")
	b.Logf("tool-call latency over stdio (%d flows):\n%s", 100*b.N, report.String())
}

// percentiles returns the 50th and 95th percentiles (nearest rank).
func percentiles(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(s) {
			i = len(s) - 1
		}
		return s[i]
	}
	return rank(0.50), rank(0.95)
}

// rawClient is `stratum mcp` driven with raw frames (rawServer), one call at
// a time.
type rawClient struct {
	*rawServer
	id int
}

// startRawClient starts the server on a store of its own and initialises the
// session.
func startRawClient(tb testing.TB) *rawClient {
	tb.Helper()
	c := &rawClient{rawServer: startRaw(tb), id: 1}
	c.initialize() // id 1
	return c
}

// call sends one request and returns its answer's line, failing on an
// error answer or one with another id.
func (c *rawClient) call(method string, params json.RawMessage) []byte {
	c.t.Helper()
	c.id++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id, method, params))
	var line string
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("%s: the server closed stdout", method)
		}
		line = l
	case <-time.After(60 * time.Second):
		c.t.Fatalf("%s: no answer", method)
	}
	if head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":`, c.id); !strings.HasPrefix(line, head) {
		c.t.Fatalf("%s: answer %.300s", method, line)
	}
	return []byte(line)
}
