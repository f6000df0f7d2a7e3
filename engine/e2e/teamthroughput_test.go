package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

// throughputSpec is the flow the throughput clients drive: ten steps in a
// chain, each with an output contract and an ensure.
var throughputSpec = func() string {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\ncontracts:\n  Out:\n    summary: {type: string}\n    score: {type: number}\n")
	b.WriteString("flows:\n  main:\n    input: {}\n    steps:\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "      - id: s%d\n        intent: \"part %d\"\n        output_contract: Out\n        ensure: [\"result.score > 0.5\"]\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "        depends_on: [s%d]\n", i-1)
		}
	}
	return b.String()
}()

// BenchmarkTeamThroughput measures team mode as a team runs it: separate
// `stratum mcp` processes, each driven by its own MCP client calling
// stratum_plan and stratum_step_done back to back through ten-step flows,
// against an etcd cluster in other processes. The cluster is the one
// STRATUM_BENCH_ETCD names (comma-separated client URLs of members run
// apart, e.g. etcd itself), else members that fsync in this benchmark's
// process (1 and 3). STRATUM_BENCH_SECONDS sets the run's length (default
// 20; the figure is over 100), in windows of 5 s. Reported:
// step_done/s over the run, in its first and its last window, and
// last/first (a cost that grows with history shows below 1); with
// STRATUM_BENCH_ETCD_PIDS (the members' process ids, comma-separated, on
// Linux), the CPU time the members spent per step_done in the first and
// the last window, which other work on the machine inflates less than
// the rates. b.N is ignored: one run is the measurement.
//
//	go test ./engine/e2e -run '^$' -bench TeamThroughput -benchtime 1x -timeout 60m
func BenchmarkTeamThroughput(b *testing.B) {
	secs := 20
	if v, err := strconv.Atoi(os.Getenv("STRATUM_BENCH_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	type cluster struct {
		name string
		url  func(prefix string) string
	}
	var clusters []cluster
	if eps := os.Getenv("STRATUM_BENCH_ETCD"); eps != "" {
		hosts := strings.ReplaceAll(strings.ReplaceAll(eps, "http://", ""), "https://", "")
		clusters = append(clusters, cluster{"external", func(p string) string { return "etcd://" + hosts + "/" + p }})
	} else {
		for _, n := range []int{1, 3} {
			c := etcdtest.StartFsync(b, n)
			clusters = append(clusters, cluster{fmt.Sprintf("members=%d", n), c.URL})
		}
	}
	run := 0
	for _, c := range clusters {
		for _, clients := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/clients=%d", c.name, clients), func(b *testing.B) {
				run++
				windows, cpu := teamRun(b, c.url(fmt.Sprintf("bench-%d-%d", os.Getpid(), run)), clients, secs)
				total := 0.0
				for _, w := range windows {
					total += w
				}
				first, last := windows[0], windows[len(windows)-1]
				b.ReportMetric(total/float64(len(windows)), "step_done/s")
				b.ReportMetric(first, "first-window/s")
				b.ReportMetric(last, "last-window/s")
				b.ReportMetric(last/first, "last/first")
				b.Logf("windows of 5 s: %v", windows)
				if len(cpu) > 0 {
					b.ReportMetric(cpu[0], "etcd-cpu-ms/step_done-first")
					b.ReportMetric(cpu[len(cpu)-1], "etcd-cpu-ms/step_done-last")
					b.Logf("etcd CPU ms per step_done: %.2f", cpu)
				}
			})
		}
	}
}

// teamRun runs clients `stratum mcp` processes on storeURL for secs
// seconds and returns the step_done calls per second in each 5 s window
// and, with STRATUM_BENCH_ETCD_PIDS, the members' CPU milliseconds per
// step_done in each.
func teamRun(b *testing.B, storeURL string, clients, secs int) (windows, cpu []float64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var count atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	ready := make(chan struct{})
	for i := 0; i < clients; i++ {
		cmd := exec.Command(filepath.Join(binDir, "stratum"), "mcp")
		cmd.Env = append(os.Environ(), "STRATUM_HOME="+b.TempDir(), "STRATUM_STORE="+storeURL)
		sess, err := mcp.NewClient(&mcp.Implementation{Name: "throughput", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer sess.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			if err := teamClient(ctx, sess, &count); err != nil && ctx.Err() == nil {
				errs <- err
				cancel()
			}
		}()
	}
	close(ready)
	prev, prevCPU := count.Load(), etcdCPU()
	for w := 0; w < max(secs/5, 1); w++ {
		select {
		case <-time.After(5 * time.Second):
		case err := <-errs:
			b.Fatal(err)
		}
		cur, curCPU := count.Load(), etcdCPU()
		windows = append(windows, float64(cur-prev)/5)
		if curCPU > 0 && cur > prev {
			cpu = append(cpu, float64((curCPU-prevCPU).Microseconds())/1000/float64(cur-prev))
		}
		prev, prevCPU = cur, curCPU
	}
	cancel()
	wg.Wait()
	return windows, cpu
}

// etcdCPU is the CPU time (user and system) of the processes
// STRATUM_BENCH_ETCD_PIDS names, from /proc (0: none named, or not Linux).
func etcdCPU() time.Duration {
	var total time.Duration
	for _, pid := range strings.Split(os.Getenv("STRATUM_BENCH_ETCD_PIDS"), ",") {
		data, err := os.ReadFile("/proc/" + strings.TrimSpace(pid) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: utime and stime
		// are the 12th and 13th (clock ticks, 100 a second on Linux).
		rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
		f := strings.Fields(rest)
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+st) * 10 * time.Millisecond
	}
	return total
}

// teamClient drives flows through their steps until ctx ends, counting
// each step_done.
func teamClient(ctx context.Context, sess *mcp.ClientSession, count *atomic.Int64) error {
	call := func(name string, args map[string]any) (map[string]any, error) {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out, _ := res.StructuredContent.(map[string]any)
		if res.IsError {
			return nil, fmt.Errorf("%s: %v", name, out)
		}
		return out, nil
	}
	for ctx.Err() == nil {
		r, err := call("stratum_plan", map[string]any{"spec": throughputSpec, "flow": "main"})
		if err != nil {
			return err
		}
		id, _ := r["flow_id"].(string)
		for r["status"] == "execute_step" && ctx.Err() == nil {
			step, _ := r["step_id"].(string)
			r, err = call("stratum_step_done", map[string]any{"flow_id": id, "step_id": step,
				"result": map[string]any{"summary": "done " + step, "score": 0.9}})
			if err != nil {
				return err
			}
			count.Add(1)
		}
	}
	return nil
}
