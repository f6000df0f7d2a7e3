package tui

import (
	"testing"

	"github.com/stratum-go/stratum/engine/e2e"
)

// These tests run the stratum binary built from the whole module; reading
// its sources lets go test's cache invalidate their results when it changes.
func TestBinarySourcesTracked(t *testing.T) { e2e.ReadSources(t) }
