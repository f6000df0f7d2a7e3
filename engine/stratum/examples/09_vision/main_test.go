package main

import (
	"context"
	"encoding/base64"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

var record = flag.Bool("record", false, "re-record recording.replay against a scripted local server")

var script = []demo.Answer{{Match: "Read the chart in the image", Answers: []string{`{"kind":"bar","bars":3,"values":[8,20,28],"trend":"rising"}`}}}

const want = "a bar chart, 3 bars [8 20 28], rising\n"

// TestOffline reads chart.png from the recording. The recorded request
// carries the image as an image part (a data URL of the PNG) and the
// prompt's text does not: the recording would not replay otherwise.
func TestOffline(t *testing.T) {
	runPNG := func(ctx context.Context, w io.Writer) error { return run(ctx, w, chartPNG) }
	rt := demo.Check(t, *record, recording, script, runPNG, want)
	if tr := rt.Trace(); len(tr) != 1 || tr[0].Attempts != 1 {
		t.Fatalf("trace: %+v", tr)
	}
	rec, err := os.ReadFile("recording.replay")
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(chartPNG)
	part := `{"image_url":{"url":"data:image/png;base64,` + b64 + `"},"type":"image_url"}`
	if !strings.Contains(string(rec), part) {
		t.Errorf("the recorded request has no image part %s", part)
	}
	if strings.Count(string(rec), b64) != 1 {
		t.Errorf("the image is in the request %d times, want once (as its part, not in the text)", strings.Count(string(rec), b64))
	}
}
