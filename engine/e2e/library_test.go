package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/shared"
)

// TestLibraryScripts runs testdata/script/library: `stratum gate` on the
// reviews of a Go program's flow (engine/stratum), which the scripts open
// with the libreview command — what a program's AwaitHuman persists.
func TestLibraryScripts(t *testing.T) {
	root := repoRoot(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join(root, "testdata", "script", "library"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			env.Setenv("STRATUM_HOME", filepath.Join(env.WorkDir, ".stratum"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("GOCOVERDIR", os.Getenv("GOCOVERDIR"))
			env.Setenv("STRATUM_BIN", filepath.Join(binDir, filepath.Base(stratumExe())))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"libreview": libreview, "libnested": libnested, "libcall": libcall},
	})
}

// libreview [-stalled=AGO] QUESTION [OPTIONS_JSON [APPROVER]] opens a
// review in a new library flow of the script's store, as
// stratum.AwaitHuman does, and writes the flow id to the file fid. With no
// options the value is an object {ship: boolean} (additional properties
// refused). With -stalled the program's lease expired AGO ago: what a
// program killed with kill -9 leaves once its lease runs out (the flow
// reads stalled).
func libreview(ts *testscript.TestScript, neg bool, args []string) {
	expires := time.Now().Add(time.Hour)
	if len(args) > 0 && strings.HasPrefix(args[0], "-stalled=") {
		ago, err := time.ParseDuration(strings.TrimPrefix(args[0], "-stalled="))
		ts.Check(err)
		expires, args = time.Now().Add(-ago), args[1:]
	}
	if neg || len(args) < 1 {
		ts.Fatalf("usage: libreview [-stalled=AGO] QUESTION [OPTIONS_JSON [APPROVER]]")
	}
	ctx := context.Background()
	st, err := backend.Open(ctx, shared.Settings{Home: ts.Getenv("STRATUM_HOME"), Store: ts.Getenv("STRATUM_STORE")})
	ts.Check(err)
	defer st.Close()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	lease := state.Lease{ID: "lib-script", PID: os.Getpid(), ExpiresAt: expires}
	id, err := engine.NewLibrary(svc).StartFlow(ctx, engine.LibraryFlowOptions{Name: "program", Owner: &lease})
	ts.Check(err)
	req := engine.ReviewRequest{Question: args[0], Schema: map[string]any{"type": "object",
		"properties": map[string]any{"ship": map[string]any{"type": "boolean"}}, "required": []any{"ship"}, "additionalProperties": false}}
	if len(args) > 1 {
		ts.Check(json.Unmarshal([]byte(args[1]), &req.Options))
		req.Schema = map[string]any{"type": "string"}
	}
	if len(args) > 2 {
		req.Approver = args[2]
	}
	_, err = engine.NewLibrary(svc).OpenReview(ctx, id, req)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs("fid"), []byte(id), 0o644))
}

// libcall FILE records a Call in a new library flow of the script's
// store, its trace entry read from FILE (JSON, as engine/stratum stores
// it), and writes the flow id to the file fid.
func libcall(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: libcall FILE")
	}
	var tr state.TraceRecord
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &tr))
	ctx := context.Background()
	st, err := backend.Open(ctx, shared.Settings{Home: ts.Getenv("STRATUM_HOME"), Store: ts.Getenv("STRATUM_STORE")})
	ts.Check(err)
	defer st.Close()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	lease := state.Lease{ID: "lib-script", PID: os.Getpid(), ExpiresAt: time.Now().Add(time.Hour)}
	id, err := engine.NewLibrary(svc).StartFlow(ctx, engine.LibraryFlowOptions{Name: "program", Owner: &lease})
	ts.Check(err)
	c := engine.LibraryCall{Function: tr.Function, Attempts: tr.Attempts, DurationMS: tr.DurationMS, CostUSD: tr.CostUSD, Trace: &tr}
	if tr.Error != "" {
		c.Data = map[string]any{"error": tr.Error}
	}
	ts.Check(engine.NewLibrary(svc).RecordCall(ctx, id, c))
	ts.Check(os.WriteFile(ts.MkAbs("fid"), []byte(id), 0o644))
}
