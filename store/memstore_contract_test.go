package store_test

import (
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/store/storetest"
)

// The engine's in-memory store, used by the engine's own tests, must behave
// like the bbolt store: one contract suite runs against both.
func TestMemStoreContract(t *testing.T) {
	storetest.Run(t, func(_ *testing.T, now func() time.Time) engine.Store {
		s := enginetest.New()
		s.Now = now
		return s
	})
}
