package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// fakeProvider is the testscript command
//
//	fakeprovider answer|refuse VAR
//
// answer starts an HTTP server on loopback for the rest of the script that
// answers every request (404 but to GET /v1: 200) and logs each, as
// "METHOD PATH", to $WORK/provider.log; refuse takes a loopback port and
// closes it, so connections to it are refused. Either sets VAR to the
// server's base URL, http://127.0.0.1:PORT/v1 (a provider's
// <PROVIDER>_BASE_URL).
func fakeProvider(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || (args[0] != "answer" && args[0] != "refuse") {
		ts.Fatalf("usage: fakeprovider answer|refuse VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	base := fmt.Sprintf("http://%s/v1", ln.Addr())
	if args[0] == "refuse" {
		ts.Check(ln.Close())
		ts.Setenv(args[1], base)
		return
	}
	logPath := filepath.Join(ts.Getenv("WORK"), "provider.log")
	var mu sync.Mutex
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "%s %s\n", r.Method, r.URL.Path)
			f.Close()
		}
		mu.Unlock()
		if r.Method == http.MethodGet && r.URL.Path == "/v1" {
			fmt.Fprintln(w, "ok")
			return
		}
		http.NotFound(w, r)
	})}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
	ts.Setenv(args[1], base)
}
