package shared_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store/shared"
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
		o, err := shared.OpenDefault(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if o.Name() != "bbolt "+o.Location.Path {
			t.Errorf("Name = %q", o.Name())
		}
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
	if _, err := shared.OpenDefault(context.Background()); err == nil {
		t.Error("a bad STRATUM_STORE_TIMEOUT was accepted")
	}
}

// Without store/team linked in (this test binary does not import it), an
// etcd:// store is refused at once, naming the import that enables it,
// before any connection is tried.
func TestEtcdNeedsTeamMode(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	t.Setenv("STRATUM_STORE", "etcd://127.0.0.1:9/team")
	_, err := shared.OpenDefault(context.Background())
	if err == nil || !strings.Contains(err.Error(), `import _ "github.com/stratum-go/stratum/store/team"`) ||
		!strings.Contains(err.Error(), "etcd://127.0.0.1:9/team") {
		t.Fatalf("OpenDefault of an etcd store without team mode: %v", err)
	}
}
