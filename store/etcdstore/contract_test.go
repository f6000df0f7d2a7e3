package etcdstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/etcdstore"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

var prefixes atomic.Int64

// opener opens a fresh store on its own prefix of the cluster for each test.
func opener(c *etcdtest.Cluster) storetest.Open {
	return func(t *testing.T, now func() time.Time) engine.Store {
		t.Helper()
		s, err := etcdstore.Open(context.Background(), etcdstore.Options{
			Endpoints: c.Endpoints,
			Prefix:    fmt.Sprintf("/contract-%d/", prefixes.Add(1)),
			Now:       now,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func TestContractOneMember(t *testing.T) {
	storetest.Run(t, opener(etcdtest.Start(t, 1)))
}

func TestContractThreeMembers(t *testing.T) {
	storetest.Run(t, opener(etcdtest.Start(t, 3)))
}
