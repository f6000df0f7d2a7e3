package tui

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{benchDir, big100kDir} {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
