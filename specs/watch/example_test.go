package watch_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/watch"
)

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "specs")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "a.stratum.yaml"), []byte("version: \"0.3\"\n"), 0o644)

	opts := watch.DefaultOptions()
	opts.Parse = func(path string) (*specs.Spec, specs.Diagnostics) { // normally specs.ParseFile
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, specs.Diagnostics{{File: path, Severity: specs.SeverityError, Message: err.Error()}}
		}
		return &specs.Spec{File: path, Source: src}, nil
	}
	w, err := watch.New([]string{dir}, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()

	u := <-w.Updates() // the initial scan
	fmt.Println(filepath.Base(u.Path), u.Gen, u.Spec != nil)

	_ = os.Remove(u.Path)
	u = <-w.Updates() // the change
	fmt.Println(filepath.Base(u.Path), u.Gen, u.Removed)
	// Output:
	// a.stratum.yaml 1 true
	// a.stratum.yaml 2 true
}
