// Command stratum gives LLM calls and coding agents a formal execution model:
// typed specs, tracked flows, enforced postconditions, human gates and an
// auditable trace. main.go is the composition root: it builds the command tree
// and wires concrete types together; the work lives in the packages.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRootCommand()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "stratum:", err)
		return 2
	}
	return 0
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "stratum",
		Short:         "A formal execution model for LLM calls and coding agents",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	return root
}
