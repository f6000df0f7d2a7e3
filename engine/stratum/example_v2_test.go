package stratum_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/stratum-go/stratum/engine/stratum"
)

// cannedModel is a Model of a program's own: it answers every request
// with the same JSON, streamed in pieces when asked to.
type cannedModel struct{ answer string }

func (m cannedModel) Generate(ctx context.Context, req *stratum.ModelRequest) (*stratum.ModelResponse, error) {
	if req.OnChunk != nil {
		for i := 0; i < len(m.answer); i += 8 {
			if err := req.OnChunk(stratum.Chunk{Text: m.answer[i:min(i+8, len(m.answer))]}); err != nil {
				return nil, err
			}
		}
	}
	return &stratum.ModelResponse{
		Message: stratum.Message{Role: stratum.RoleAssistant, Parts: []stratum.Part{{Text: m.answer}}},
		Usage:   stratum.Usage{InputTokens: 40, OutputTokens: 12, CostUSD: 0.0001},
	}, nil
}

// runtimeWith is a Runtime whose default model is m, reading no
// environment.
func runtimeWith(m stratum.Model) *stratum.Runtime {
	rt, err := stratum.New(stratum.Options{
		Model:  "mine/canned",
		Models: map[string]stratum.Model{"mine/canned": m},
		Getenv: func(string) string { return "" },
	})
	if err != nil {
		log.Fatal(err)
	}
	return rt
}

// A Model of the program's own (a test double here) answers the calls of
// the names Options.Models routes to it; its answers are checked, priced
// and traced like any provider's.
func ExampleModel() {
	rt := runtimeWith(cannedModel{answer: `{"label":"positive","confidence":0.9,"reasoning":"praise"}`})
	defer rt.Close(context.Background())
	ctx := stratum.WithRuntime(context.Background(), rt)

	s, err := classify.Call(ctx, Feedback{Text: "Works like a charm."})
	if err != nil {
		log.Fatal(err)
	}
	tr := rt.Trace()[0]
	fmt.Println(s.Label, tr.Model, *tr.CostUSD)
	// Output:
	// positive mine/canned 0.0001
}

// Stream yields each attempt's answer as it arrives, then the checked
// value.
func ExampleFn_Stream() {
	rt := runtimeWith(cannedModel{answer: `{"label":"negative","confidence":0.8,"reasoning":"outage"}`})
	defer rt.Close(context.Background())
	ctx := stratum.WithRuntime(context.Background(), rt)

	var text strings.Builder
	for p, err := range classify.Stream(ctx, Feedback{Text: "Down again."}) {
		if err != nil {
			log.Fatal(err)
		}
		if p.Final {
			fmt.Println("streamed:", text.String())
			fmt.Println("checked:", p.Value.Label, p.Value.Confidence)
			break
		}
		text.WriteString(p.Delta)
	}
	// Output:
	// streamed: {"label":"negative","confidence":0.8,"reasoning":"outage"}
	// checked: negative 0.8
}

type StockQuery struct {
	Symbol string `json:"symbol"`
}

type Quote struct {
	Symbol string  `json:"symbol"`
	Price  float64 `json:"price"`
}

type Advice struct {
	Advice string `json:"advice"`
}

// toolUser is a Model that calls the quote tool once, then answers with
// what the tool returned.
type toolUser struct{}

func (toolUser) Generate(ctx context.Context, req *stratum.ModelRequest) (*stratum.ModelResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role != stratum.RoleTool {
		call := &stratum.ToolCall{ID: "call_1", Name: req.Tools[0].Name, Args: json.RawMessage(`{"symbol":"ACME"}`)}
		return &stratum.ModelResponse{Message: stratum.Message{Role: stratum.RoleAssistant, Parts: []stratum.Part{{ToolCall: call}}}}, nil
	}
	var q Quote
	if err := json.Unmarshal(last.Parts[0].ToolResult.Content, &q); err != nil {
		return nil, err
	}
	answer := fmt.Sprintf(`{"advice":"%s trades at %.2f: hold"}`, q.Symbol, q.Price)
	return &stratum.ModelResponse{Message: stratum.Message{Role: stratum.RoleAssistant, Parts: []stratum.Part{{Text: answer}}}}, nil
}

// A tool is a typed Go function the model may call before it answers;
// its arguments are checked against In's schema, and each call is traced.
func ExampleNewTool() {
	quote := stratum.NewTool("quote", "The last price of a stock",
		func(ctx context.Context, q StockQuery) (Quote, error) {
			return Quote{Symbol: q.Symbol, Price: 12.5}, nil
		})
	advise := stratum.MustInfer("advise", stratum.Spec[StockQuery, Advice]{
		Intent: "Advise on the stock, using its last price",
		Tools:  []stratum.Tool{quote},
	})
	rt := runtimeWith(toolUser{})
	defer rt.Close(context.Background())
	ctx := stratum.WithRuntime(context.Background(), rt)

	a, err := advise.Call(ctx, StockQuery{Symbol: "ACME"})
	if err != nil {
		log.Fatal(err)
	}
	call := rt.Trace()[0].ToolCalls[0]
	fmt.Println(a.Advice)
	fmt.Println(call.Name, string(call.Args), string(call.Result))
	// Output:
	// ACME trades at 12.50: hold
	// quote {"symbol":"ACME"} {"symbol":"ACME","price":12.5}
}

// NewProvider builds a built-in provider from values alone (here an
// OpenAI-compatible server on the loopback); the Model can be called
// directly or routed to by Options.Models.
func ExampleNewProvider() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, `{"model":"local-1","choices":[{"finish_reason":"stop","message":{"content":"{\"ok\":true}"}}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`)
	}))
	defer srv.Close()
	m, err := stratum.NewProvider("local/local-1", stratum.ProviderConfig{BaseURL: srv.URL})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), &stratum.ModelRequest{
		Messages: []stratum.Message{{Role: stratum.RoleUser, Parts: []stratum.Part{{Text: "Are you there?"}}}},
		Schema:   map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Parts[0].Text, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// {"ok":true} 5 3
}
