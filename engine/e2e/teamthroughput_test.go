package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// apart, e.g. etcd itself; STRATUM_BENCH_ETCD_PIDS their process ids,
// comma-separated), else a fresh one member and then three, each member a
// process of its own that fsyncs (this test binary started again).
// STRATUM_BENCH_SECONDS sets the run's length (default 20; the published
// figures are over 100), in windows of 5 s. Reported: step_done/s over
// the run, in its first and its last window, and last/first (a cost that
// grows with history shows below 1); on Linux, when the members' process
// ids are known, the CPU time the members spent per step_done in the
// first and the last window, which other work on the machine inflates
// less than the rates. On Linux also the CPU per step_done of the stratum
// processes, of the MCP clients (this process) and of the whole machine,
// and the machine's busy share over the run (near 1: the rate is bound by
// the cores, not by waiting). b.N is ignored: one run is the measurement.
//
//	go test ./engine/e2e -run '^$' -bench TeamThroughput -benchtime 1x -timeout 60m
func BenchmarkTeamThroughput(b *testing.B) {
	secs := 20
	if v, err := strconv.Atoi(os.Getenv("STRATUM_BENCH_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	// cluster starts the members (or names the external ones) for the
	// benchmark b: their store URL and process ids (none: unknown).
	type cluster func(b *testing.B) (url func(prefix string) string, pids []string)
	clusters := map[string]cluster{}
	if eps := os.Getenv("STRATUM_BENCH_ETCD"); eps != "" {
		hosts := strings.ReplaceAll(strings.ReplaceAll(eps, "http://", ""), "https://", "")
		pids := strings.Split(os.Getenv("STRATUM_BENCH_ETCD_PIDS"), ",")
		clusters["external"] = func(*testing.B) (func(string) string, []string) {
			return func(p string) string { return "etcd://" + hosts + "/" + p }, pids
		}
	} else {
		for _, n := range []int{1, 3} {
			clusters[fmt.Sprintf("members=%d", n)] = func(b *testing.B) (func(string) string, []string) {
				p := etcdtest.StartProcesses(b, etcdtest.Options{Members: n, Fsync: true})
				var pids []string
				for _, pid := range p.PIDs {
					pids = append(pids, strconv.Itoa(pid))
				}
				return p.URL, pids
			}
		}
	}
	run := 0
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		// The members live as long as their sub-benchmark: one cluster at
		// a time.
		b.Run(name, func(b *testing.B) {
			url, pids := clusters[name](b)
			for _, clients := range []int{1, 4} {
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
					run++
					windows, cpu := teamRun(b, url(fmt.Sprintf("bench-%d-%d", os.Getpid(), run)), pids, clients, secs)
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
		})
	}
}

// teamRun runs clients `stratum mcp` processes on storeURL for secs
// seconds and returns the step_done calls per second in each 5 s window
// and, when etcdPIDs names the members' processes, their CPU
// milliseconds per step_done in each. It also reports, over the whole
// run, the CPU each side spent per step_done (the members, the stratum
// processes, this benchmark's MCP clients) and how busy the machine was:
// with every core busy, the rate is CPU-bound and more clients cannot
// raise it.
func teamRun(b *testing.B, storeURL string, etcdPIDs []string, clients, secs int) (windows, cpu []float64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var count atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	ready := make(chan struct{})
	var stratumPIDs []string
	for i := 0; i < clients; i++ {
		cmd := exec.Command(filepath.Join(binDir, "stratum"), "mcp")
		cmd.Env = append(os.Environ(), "STRATUM_HOME="+b.TempDir(), "STRATUM_STORE="+storeURL)
		sess, err := mcp.NewClient(&mcp.Implementation{Name: "throughput", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer sess.Close()
		stratumPIDs = append(stratumPIDs, strconv.Itoa(cmd.Process.Pid))
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
	start := sampleCPU(etcdPIDs, stratumPIDs)
	prev, prevCPU := count.Load(), start.etcd
	for w := 0; w < max(secs/5, 1); w++ {
		select {
		case <-time.After(5 * time.Second):
		case err := <-errs:
			b.Fatal(err)
		}
		cur, curCPU := count.Load(), procCPU(etcdPIDs)
		windows = append(windows, float64(cur-prev)/5)
		if curCPU > 0 && cur > prev {
			cpu = append(cpu, float64((curCPU-prevCPU).Microseconds())/1000/float64(cur-prev))
		}
		prev, prevCPU = cur, curCPU
	}
	end := sampleCPU(etcdPIDs, stratumPIDs)
	cancel()
	wg.Wait()
	reportCPU(b, start, end, count.Load())
	return windows, cpu
}

// cpuSample is the CPU time spent so far by each side of a run, and by
// the machine (busy and in all, summed over its cores).
type cpuSample struct {
	etcd, stratum, bench, busy, all time.Duration
}

// sampleCPU reads the CPU time of the members, the stratum processes,
// this process and the machine.
func sampleCPU(etcdPIDs, stratumPIDs []string) cpuSample {
	s := cpuSample{etcd: procCPU(etcdPIDs), stratum: procCPU(stratumPIDs), bench: procCPU([]string{"self"})}
	s.busy, s.all = machineCPU()
	return s
}

// reportCPU reports the CPU milliseconds per step_done of each side and
// of the machine between start and end, and the machine's busy share
// (1: every core busy for the whole run). Nothing is reported off Linux.
func reportCPU(b *testing.B, start, end cpuSample, steps int64) {
	if steps == 0 || end.all <= start.all {
		return
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(steps) }
	b.ReportMetric(per(end.stratum-start.stratum), "stratum-cpu-ms/step_done")
	b.ReportMetric(per(end.bench-start.bench), "client-cpu-ms/step_done")
	b.ReportMetric(per(end.busy-start.busy), "machine-cpu-ms/step_done")
	b.ReportMetric(float64(end.busy-start.busy)/float64(end.all-start.all), "machine-busy")
}

// procCPU is the CPU time (user and system) of the processes pids names
// ("self": this one), from /proc (0: none found, or not Linux).
func procCPU(pids []string) time.Duration {
	var total time.Duration
	for _, pid := range pids {
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

// machineCPU is the CPU time of every core so far, busy and in all, from
// /proc/stat's first line (idle and iowait are not busy; 0, 0 off Linux).
func machineCPU() (busy, all time.Duration) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:8] { // user nice system idle iowait irq softirq
		n, _ := strconv.ParseInt(v, 10, 64)
		d := time.Duration(n) * 10 * time.Millisecond
		all += d
		if i != 3 && i != 4 {
			busy += d
		}
	}
	return busy, all
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
