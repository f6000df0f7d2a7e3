package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	pathpkg "path"
	"path/filepath"
	"sync"
)

// ReplayFormat is the version of the record/replay file.
const ReplayFormat = 1

// ReplayFile is the on-disk record of a run's LLM exchanges.
type ReplayFile struct {
	Version int `json:"version"`
	// Note says where the recording came from (free text).
	Note      string     `json:"note,omitempty"`
	Exchanges []Exchange `json:"exchanges"`
}

// Exchange is one recorded HTTP exchange.
type Exchange struct {
	// Hash identifies the canonical request (see CanonicalRequest).
	Hash       string          `json:"hash"`
	Model      string          `json:"model,omitempty"`
	PromptHash string          `json:"prompt_hash,omitempty"`
	Request    json.RawMessage `json:"request"`
	Status     int             `json:"status"`
	Response   json.RawMessage `json:"response"`
}

type promptHashKey struct{}

// WithPromptHash attaches a compiled-prompt hash to ctx; record/replay note
// it with each exchange and in replay-miss errors.
func WithPromptHash(ctx context.Context, hash string) context.Context {
	return context.WithValue(ctx, promptHashKey{}, hash)
}

func promptHash(ctx context.Context) string {
	h, _ := ctx.Value(promptHashKey{}).(string)
	return h
}

// CanonicalRequest is the request as recorded and hashed: method, endpoint
// (the last element of the URL path: "completions", "messages") and the
// JSON body with sorted keys; never the host, base path, query or headers
// (so no API key, and a replay does not depend on base URL settings). Hash
// is the first 16 hex digits of its SHA-256.
func CanonicalRequest(method, path string, body []byte) (canonical []byte, hash string, model string, err error) {
	var v any
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, "", "", fmt.Errorf("request body is not JSON: %w", err)
		}
	}
	if m, ok := v.(map[string]any); ok {
		model, _ = m["model"].(string)
	}
	// encoding/json sorts map keys.
	canonical, err = marshal(map[string]any{"method": method, "endpoint": pathpkg.Base(path), "body": v})
	if err != nil {
		return nil, "", "", err
	}
	sum := sha256.Sum256(canonical)
	return canonical, hex.EncodeToString(sum[:])[:16], model, nil
}

// ReplayMissError is returned in replay mode for a request the file has no
// answer for.
type ReplayMissError struct {
	Hash, Model, PromptHash, File string
}

func (e *ReplayMissError) Error() string {
	ph := e.PromptHash
	if ph == "" {
		ph = "unknown"
	}
	return fmt.Sprintf("no recorded response for request %s (model %s, prompt hash %s) in %s: the request differs from the recorded run (changed spec, inputs or model?); record it again with --record", e.Hash, e.Model, ph, e.File)
}

// Recorder is an http.RoundTripper that forwards requests to Base and saves
// every final exchange (not the 429/5xx a transport retry absorbs) to File,
// rewriting the file after each exchange so a killed run keeps what it got.
type Recorder struct {
	File string
	Base http.RoundTripper // default http.DefaultTransport

	mu  sync.Mutex
	rec ReplayFile
}

// NewRecorder returns a Recorder writing path (truncated now, so a run that
// makes no call leaves an empty record).
func NewRecorder(path string) (*Recorder, error) {
	r := &Recorder{File: path, rec: ReplayFile{Version: ReplayFormat, Exchanges: []Exchange{}}}
	if err := r.save(); err != nil {
		return nil, err
	}
	return r, nil
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	base := r.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	if retryable(resp.StatusCode) {
		return resp, nil
	}
	canon, hash, model, err := CanonicalRequest(req.Method, req.URL.Path, body)
	if err != nil {
		return resp, nil // not an LLM JSON request: pass through unrecorded
	}
	respJSON := json.RawMessage(rb)
	if !json.Valid(rb) {
		respJSON, _ = json.Marshal(string(rb))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Exchanges = append(r.rec.Exchanges, Exchange{Hash: hash, Model: model, PromptHash: promptHash(req.Context()),
		Request: canon, Status: resp.StatusCode, Response: respJSON})
	if err := r.save(); err != nil {
		return nil, fmt.Errorf("recording the exchange: %w", err)
	}
	return resp, nil
}

// SetNote sets the file's note (written with the next exchange, and now).
func (r *Recorder) SetNote(note string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Note = note
	return r.save()
}

// Exchanges returns a copy of what was recorded so far.
func (r *Recorder) Exchanges() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exchange(nil), r.rec.Exchanges...)
}

func (r *Recorder) save() error {
	b, err := json.MarshalIndent(r.rec, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(r.File)
	f, err := os.CreateTemp(dir, ".stratum-record-*")
	if err != nil {
		return fmt.Errorf("record file: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("record file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("record file: %w", err)
	}
	if err := os.Rename(f.Name(), r.File); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("record file: %w", err)
	}
	return nil
}

// Replayer is an http.RoundTripper that answers from a recorded file and
// never touches the network. Identical requests are answered in recorded
// order; once a request's answers are used up its last answer repeats.
type Replayer struct {
	File string

	mu   sync.Mutex
	byID map[string][]Exchange
	used map[string]int
}

// NewReplayer loads path.
func NewReplayer(path string) (*Replayer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("replay file: %w", err)
	}
	var f ReplayFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("replay file %s: %w", path, err)
	}
	if f.Version != ReplayFormat {
		return nil, fmt.Errorf("replay file %s: version %d, want %d", path, f.Version, ReplayFormat)
	}
	r := &Replayer{File: path, byID: map[string][]Exchange{}, used: map[string]int{}}
	for _, e := range f.Exchanges {
		r.byID[e.Hash] = append(r.byID[e.Hash], e)
	}
	return r, nil
}

// RoundTrip implements http.RoundTripper.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	_, hash, model, err := CanonicalRequest(req.Method, req.URL.Path, body)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	list := r.byID[hash]
	i := r.used[hash]
	if i < len(list) {
		r.used[hash] = i + 1
	} else {
		i = len(list) - 1
	}
	r.mu.Unlock()
	if len(list) == 0 {
		return nil, &ReplayMissError{Hash: hash, Model: model, PromptHash: promptHash(req.Context()), File: r.File}
	}
	e := list[i]
	rb := []byte(e.Response)
	var s string
	if json.Unmarshal(rb, &s) == nil {
		rb = []byte(s)
	}
	return &http.Response{
		StatusCode:    e.Status,
		Status:        fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(rb)),
		ContentLength: int64(len(rb)),
		Request:       req,
	}, nil
}
