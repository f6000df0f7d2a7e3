package etcdtest

import (
	"context"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestMain(m *testing.M) {
	MemberMain()
	os.Exit(m.Run())
}

// TestStartProcesses runs three members in processes of their own: each
// is another process, the cluster commits a write, and every member reads
// it.
func TestStartProcesses(t *testing.T) {
	p := StartProcesses(t, Options{Members: 3})
	if len(p.PIDs) != 3 || len(p.Endpoints) != 3 {
		t.Fatalf("PIDs %v, endpoints %v", p.PIDs, p.Endpoints)
	}
	for _, pid := range p.PIDs {
		if pid == os.Getpid() {
			t.Fatal("a member runs in the test's process")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: p.Endpoints[:1], DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	for _, ep := range p.Endpoints {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Get(ctx, "k")
		c.Close()
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
			t.Fatalf("member %s: %v %v", ep, r, err)
		}
	}
	if got := p.URL("team"); got[:7] != "etcd://" {
		t.Fatalf("URL %q", got)
	}
}
