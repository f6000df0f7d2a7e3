// Command 04_refine is seed Example 04: the refine loop. Until checks each
// answer in the program (here: the generated function's name and doc
// comment); Feedback's text goes into the next prompt; MaxIterations
// bounds it (running out is a *stratum.ConvergenceError).
//
//	go run ./engine/stratum/examples/04_refine          # from the recording
//	go run ./engine/stratum/examples/04_refine --live   # a real provider
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

//go:embed recording.replay
var recording []byte

// Task describes the function to write.
type Task struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Code is the generated source.
type Code struct {
	Source string `json:"source"`
}

// problems lists what is wrong with the code (empty: good enough).
func problems(t Task, c Code) []string {
	var out []string
	if !strings.Contains(c.Source, "func "+t.Name+"(") {
		out = append(out, "the function must be named "+t.Name)
	}
	if !strings.HasPrefix(c.Source, "// "+t.Name+" ") {
		out = append(out, "it needs a doc comment starting with its name")
	}
	return out
}

var task = Task{Name: "Reverse", Description: "reverse a string by runes"}

var generate = stratum.MustInfer("generate_code", stratum.Spec[Task, Code]{
	Intent: "Write the Go function described",
	Ensure: []stratum.Check[Code]{stratum.Ensure("the source must not be empty", func(c Code) bool { return c.Source != "" })},
	Refine: &stratum.Refine[Code]{
		Until:         func(c Code) bool { return len(problems(task, c)) == 0 },
		Feedback:      func(c Code) string { return strings.Join(problems(task, c), "; ") },
		MaxIterations: 4,
	},
})

func run(ctx context.Context, w io.Writer) error {
	c, err := generate.Call(ctx, task)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, c.Source)
	return nil
}

func main() {
	live := flag.Bool("live", false, "call a real provider (STRATUM_MODEL, <PROVIDER>_API_KEY) instead of the recording")
	flag.Parse()
	rt, closeRT, err := demo.Runtime(recording, *live)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer closeRT()
	if err := run(stratum.WithRuntime(context.Background(), rt), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		closeRT()
		os.Exit(1)
	}
	fmt.Printf("iterations: %d\n", rt.Trace()[0].Attempts)
}
