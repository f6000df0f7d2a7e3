package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/shared"
)

// TestDecisionNotStarvedOnEtcd: on a 3-member etcd cluster a Go program's
// flow runs 30 concurrent Calls every 300 ms (each Call a commit of the
// flow) while its review waits; three `stratum gate approve` processes
// decide the review at once. Exactly one decision is recorded, every
// time: the other two answer the review already decided, or the flow it
// completed (exit 2, a conflict), and no
// decider fails with "the flow was changed by another writer before each
// of 5 attempts could be written" — what happened in 6 of 8 trials when a
// decision had 5 immediate attempts against the program's writes.
func TestDecisionNotStarvedOnEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	cluster := etcdtest.Start(t, 3)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": `{"label": "ok"}`}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	defer provider.Close()
	env := map[string]string{"OPENAI_BASE_URL": provider.URL + "/v1", "OPENAI_API_KEY": "sk-test", "STRATUM_MODEL": "openai/gpt-4o-mini"}
	type label struct {
		Label string `json:"label"`
	}
	classify := stratum.MustInfer("classify", stratum.Spec[string, label]{Intent: "Label the text"})

	trials := 5
	if n, err := strconv.Atoi(os.Getenv("STARVE_TRIALS")); err == nil && n > 0 {
		trials = n // to measure: STARVE_TRIALS=20
	}
	for trial := range trials {
		home := t.TempDir()
		storeURL := cluster.URL(fmt.Sprintf("starve-%d", trial))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		st, err := backend.Open(ctx, shared.Settings{Home: home, Store: storeURL})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := stratum.New(stratum.Options{Store: st, Getenv: func(k string) string { return env[k] }, Stderr: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		flow := stratum.NewFlow("busy", stratum.Budget{}, func(ctx context.Context, _ string) (string, error) {
			busy, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // 30 concurrent Calls every 300 ms until the review is decided
				defer wg.Done()
				tick := time.NewTicker(300 * time.Millisecond)
				defer tick.Stop()
				for {
					branches := make([]stratum.Branch[label], 30)
					for i := range branches {
						branches[i] = func(ctx context.Context) (label, error) { calls.Add(1); return classify.Call(ctx, "text") }
					}
					_, _ = stratum.All(busy, branches...)
					select {
					case <-busy.Done():
						return
					case <-tick.C:
					}
				}
			}()
			d, err := stratum.AwaitHuman(ctx, stratum.Review[string]{Question: "Ship it?", Options: []string{"yes", "no"}})
			stop()
			wg.Wait()
			return d.Value, err
		})
		done := make(chan error, 1)
		go func() {
			_, err := flow.Run(stratum.WithRuntime(ctx, rt), "go")
			done <- err
		}()
		svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
		flowID := waitForReview(t, ctx, svc)
		for calls.Load() < 60 { // the program is busy writing
			time.Sleep(20 * time.Millisecond)
		}

		type result struct {
			code     int
			out, err string
			took     time.Duration
		}
		results := make([]result, 3)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(filepath.Join(binDir, "stratum"), "gate", "approve", flowID, "review-1", "--option", "1", "--note", fmt.Sprintf("decider %d", i))
				cmd.Env = append(os.Environ(), "STRATUM_HOME="+home, "STRATUM_STORE="+storeURL, "NO_COLOR=1")
				var out, errb strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errb
				began := time.Now()
				err := cmd.Run()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Error(err)
				}
				results[i] = result{code, out.String(), errb.String(), time.Since(began)}
			}()
		}
		wg.Wait()
		won := 0
		for i, r := range results {
			switch {
			case r.code == 0 && strings.Contains(r.out, `"ok": true`):
				won++
			case r.code == 2 && strings.Contains(r.out, `"conflict": true`) &&
				(strings.Contains(r.out, "review_closed") || strings.Contains(r.out, "flow_already_complete")):
				// Decided by another: the review closed, or the program
				// already finished its flow with that decision.
			default:
				t.Errorf("trial %d, decider %d: exit %d\n%s%s", trial, i, r.code, r.out, r.err)
			}
		}
		if won != 1 {
			cancel()
			t.Fatalf("trial %d: %d deciders recorded a decision, want exactly 1", trial, won)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("trial %d: the flow: %v", trial, err)
			}
		case <-ctx.Done():
			t.Fatalf("trial %d: the flow never saw the decision", trial)
		}
		fs, err := svc.Query().Get(ctx, flowID)
		if err != nil {
			t.Fatal(err)
		}
		gates := 0
		for _, rec := range fs.Records {
			if rec.Type == "gate" && rec.StepID == "review-1" {
				gates++
			}
		}
		if gates != 1 {
			t.Errorf("trial %d: %d gate records of review-1, want 1", trial, gates)
		}
		t.Logf("trial %d: %d calls recorded; the deciders took %v, %v, %v", trial, calls.Load(),
			results[0].took.Round(time.Millisecond), results[1].took.Round(time.Millisecond), results[2].took.Round(time.Millisecond))
		_ = rt.Close(ctx)
		_ = st.Close()
		cancel()
	}
}

// waitForReview is the id of the one flow of svc's store, once its review
// review-1 is open.
func waitForReview(t *testing.T, ctx context.Context, svc *engine.Service) string {
	t.Helper()
	for ctx.Err() == nil {
		if list, err := svc.Query().List(ctx, engine.ListFilter{}); err == nil && len(list) == 1 && list[0].Gate != nil {
			return list[0].FlowID
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the review never opened")
	return ""
}
