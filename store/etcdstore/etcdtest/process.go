package etcdtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// memberEnv carries a member's settings from StartProcesses to the test
// binary it starts again; MemberMain serves the member when it is set.
const memberEnv = "STRATUM_ETCDTEST_MEMBER"

// memberSpec is one member of a cluster whose members run as processes.
type memberSpec struct {
	Name    string `json:"name"`
	Dir     string `json:"dir"`
	Peer    string `json:"peer"`
	Client  string `json:"client"`
	Initial string `json:"initial"`
	Fsync   bool   `json:"fsync"`
}

// MemberMain serves an etcd member when this process was started by
// StartProcesses, and never returns then; otherwise it returns at once. A
// package whose tests call StartProcesses calls it first in its TestMain:
//
//	func TestMain(m *testing.M) { etcdtest.MemberMain(); os.Exit(m.Run()) }
//
// The member stops when its standard input closes (the test process
// ended, however it ended).
func MemberMain() {
	v := os.Getenv(memberEnv)
	if v == "" {
		return
	}
	var s memberSpec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		fmt.Fprintln(os.Stderr, "etcdtest member:", err)
		os.Exit(2)
	}
	if err := serveMember(s); err != nil {
		fmt.Fprintln(os.Stderr, "etcdtest member:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveMember runs the member until standard input closes.
func serveMember(s memberSpec) error {
	cfg, err := memberConfig(s)
	if err != nil {
		return err
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		return fmt.Errorf("member %s not ready in 30s", s.Name)
	}
	fmt.Println("ready")
	stdin := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdin) }()
	select {
	case <-stdin:
		return nil
	case err := <-e.Err():
		return err
	}
}

// Processes is a cluster whose members each run in a process of their
// own (this test binary started again), as a team runs etcd: their CPU is
// theirs alone, and nothing of them shares the test's Go runtime.
type Processes struct {
	// Endpoints are the members' client URLs (http://127.0.0.1:PORT).
	Endpoints []string
	// PIDs are the members' process ids.
	PIDs  []int
	cmds  []*exec.Cmd
	stdin []io.WriteCloser
}

// StartProcesses runs an n-member cluster with one process per member and
// waits until every member serves; the processes end with the test. The
// test binary must call MemberMain in its TestMain.
func StartProcesses(t testing.TB, o Options) *Processes {
	t.Helper()
	if o.TLS != nil || o.MaxTxnOps > 0 || o.QuotaBackendBytes > 0 || o.AuthTokenTTL > 0 {
		t.Fatal("etcdtest: StartProcesses takes Members and Fsync only")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	specs, err := memberSpecs(t.TempDir(), o.Members, o.Fsync, "http")
	if err != nil {
		t.Fatal(err)
	}
	n := len(specs)
	p := &Processes{}
	t.Cleanup(p.stop)
	ready := make(chan error, n)
	for i := range specs {
		env, _ := json.Marshal(specs[i])
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), memberEnv+"="+string(env))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.cmds, p.stdin = append(p.cmds, cmd), append(p.stdin, in)
		p.PIDs = append(p.PIDs, cmd.Process.Pid)
		p.Endpoints = append(p.Endpoints, specs[i].Client)
		go func(s memberSpec) {
			sc := bufio.NewScanner(out)
			if sc.Scan() && sc.Text() == "ready" {
				ready <- nil
				_, _ = io.Copy(io.Discard, out)
				return
			}
			ready <- fmt.Errorf("member %s ended before it served (its log: %s.log)", s.Name, s.Dir)
		}(specs[i])
	}
	for range specs {
		select {
		case err := <-ready:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("etcdtest: members not ready in 60s")
		}
	}
	return p
}

// URL is the store URL of the cluster with prefix: etcd://127.0.0.1:P1,…/prefix.
func (p *Processes) URL(prefix string) string { return storeURL(p.Endpoints, prefix) }

// stop kills the members and waits for them: their data is temporary,
// and a member closing gracefully waits seconds for a quorum its peers,
// closing too, no longer give it.
func (p *Processes) stop() {
	for _, cmd := range p.cmds {
		_ = cmd.Process.Kill()
	}
	for i, cmd := range p.cmds {
		_ = p.stdin[i].Close()
		_ = cmd.Wait()
	}
}
