package run

import (
	"os"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/config"
)

// TestRedactorMasksConfigSecrets: the secrets a config file holds (the etcd
// password) are masked like the environment's.
func TestRedactorMasksConfigSecrets(t *testing.T) {
	t.Setenv("EXAMPLE_API_KEY", "sk-env-0123456789abcdef")
	cfg := config.Config{Etcd: config.Etcd{Password: "config-password-4242"}}
	got := Redactor(cfg).String("auth failed for config-password-4242 with sk-env-0123456789abcdef")
	if strings.Contains(got, "config-password-4242") || strings.Contains(got, "sk-env-0123456789abcdef") {
		t.Fatalf("a secret is not masked: %q", got)
	}
}

// TestUnmasked: the file behind a Redactor's writer is found (a front end
// asks it whether it is a terminal); any other writer is itself.
func TestUnmasked(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := Unmasked(Redactor(config.Config{}).Writer(f)); got != f {
		t.Fatalf("Unmasked(masked file) = %T, want the file", got)
	}
	var b strings.Builder
	if got := Unmasked(&b); got != &b {
		t.Fatalf("Unmasked(plain writer) = %T", got)
	}
}
