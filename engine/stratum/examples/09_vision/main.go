// Command 09_vision reads a chart: a typed LLM function whose input holds
// an image (a stratum.Media field). The image goes to the model as an
// image part of the request, never in the prompt's text; the answer is a
// typed Chart, checked like any Call's. A provider that cannot take an
// image is refused before any request.
//
//	go run ./engine/stratum/examples/09_vision                    # offline: the recording, chart.png
//	go run ./engine/stratum/examples/09_vision --live [--image F] # a real provider (a model that sees images)
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

//go:embed recording.replay
var recording []byte

//go:embed chart.png
var chartPNG []byte

// Question is what is asked of the image.
type Question struct {
	Ask   string        `json:"ask"`
	Image stratum.Media `json:"image"`
}

// Chart is what the model reads off it.
type Chart struct {
	Kind   string    `json:"kind" stratum:"enum=bar|line|pie|other"`
	Bars   int       `json:"bars" stratum:"min=0"`
	Values []float64 `json:"values"`
	Trend  string    `json:"trend" stratum:"enum=rising|falling|flat|mixed"`
}

var readChart = stratum.MustInfer("read_chart", stratum.Spec[Question, Chart]{
	Intent: "Read the chart in the image: its kind, how many bars, their heights in pixels from left to right, and the trend",
	Ensure: []stratum.Check[Chart]{
		stratum.Ensure("values must have one height per bar", func(c Chart) bool { return len(c.Values) == c.Bars }),
	},
})

func run(ctx context.Context, w io.Writer, img []byte) error {
	c, err := readChart.Call(ctx, Question{Ask: "What does this chart show?",
		Image: stratum.Media{MIMEType: http.DetectContentType(img), Data: img}})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "a %s chart, %d bars %v, %s\n", c.Kind, c.Bars, c.Values, c.Trend)
	return nil
}

func main() {
	live := flag.Bool("live", false, "call a real provider (STRATUM_MODEL, <PROVIDER>_API_KEY) instead of the recording")
	image := flag.String("image", "", "an image file to read instead of chart.png (with --live)")
	flag.Parse()
	img := chartPNG
	if *image != "" {
		b, err := os.ReadFile(*image)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		img = b
	}
	rt, closeRT, err := demo.Runtime(recording, *live)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer closeRT()
	if err := run(stratum.WithRuntime(context.Background(), rt), os.Stdout, img); err != nil {
		fmt.Fprintln(os.Stderr, err)
		closeRT()
		os.Exit(1)
	}
}
