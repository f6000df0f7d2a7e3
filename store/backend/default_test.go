package backend_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratum-go/stratum/store/backend"
)

// OpenDefault opens the store a command would: $STRATUM_HOME/stratum.db,
// else the project config's store:, else STRATUM_STORE over both.
func TestOpenDefaultSelectsAsTheCLI(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STRATUM_HOME", home)
	t.Setenv("STRATUM_STORE", "")
	project := t.TempDir()
	t.Chdir(project)
	where := func() string {
		t.Helper()
		st, err := backend.OpenDefault(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		o := st.(*backend.Opened)
		defer o.Close()
		return o.Location.Path
	}
	if got, want := where(), filepath.Join(home, "stratum.db"); got != want {
		t.Errorf("default: %s, want %s", got, want)
	}
	cfgPath := filepath.Join(project, "other.db")
	if err := os.MkdirAll(filepath.Join(project, ".stratum"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".stratum", "config.yaml"), []byte("store: "+cfgPath+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := where(); got != cfgPath {
		t.Errorf("config store: %s, want %s", got, cfgPath)
	}
	envPath := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("STRATUM_STORE", envPath)
	if got := where(); got != envPath {
		t.Errorf("STRATUM_STORE: %s, want %s", got, envPath)
	}
	t.Setenv("STRATUM_STORE_TIMEOUT", "soon")
	if _, err := backend.OpenDefault(context.Background()); err == nil {
		t.Error("a bad STRATUM_STORE_TIMEOUT was accepted")
	}
}
