package stratum_test

import (
	"os"
	"testing"
)

// TestMain gives the whole test binary (Examples included) a temporary
// STRATUM_HOME; tests that need their own set it with t.Setenv.
// NOTE(core): the package's only TestMain.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "stratum-lib-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("STRATUM_HOME", home)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
