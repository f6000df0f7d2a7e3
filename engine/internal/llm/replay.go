package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	pathpkg "path"
	"sync"

	"github.com/stratum-go/stratum/engine/internal/redact"
)

// The record/replay file. Format 2 (written by Recorder) is JSON Lines: a
// header {"version": 2, "note": …}, then one Exchange per line, each
// appended when its exchange ends, so the file is never rewritten and a run
// that dies mid-write leaves a record whose complete lines replay (a cut
// short last line is ignored). A later {"note": …} line replaces the note.
// Format 1, one indented ReplayFile object, is still read.
const (
	ReplayFormat   = 2
	replayFormatV1 = 1
)

// ReplayFile is a record's content, and the whole of a format 1 file.
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

// Recorder is an http.RoundTripper that forwards requests to Base and
// appends every final exchange (not the 429/5xx a transport retry absorbs,
// nor an answer over the response cap, which fails the call as in a normal
// run) to File, one line each.
type Recorder struct {
	File string
	Base http.RoundTripper // default http.DefaultTransport
	// Redact masks configured secrets in what is written (the request's own
	// Authorization / x-api-key values are always masked).
	Redact *redact.Redactor

	mu sync.Mutex
	f  *os.File
}

// NewRecorder returns a Recorder writing path (truncated now and given its
// header, so a run that makes no call leaves an empty record).
func NewRecorder(path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) // prompts may be private, as the temporary file of format 1 was
	if err != nil {
		return nil, fmt.Errorf("record file: %w", err)
	}
	r := &Recorder{File: path, f: f}
	if err := r.appendLine(replayHeader{Version: ReplayFormat}); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// replayHeader is the first line of a format 2 file; a line with only a
// note replaces the note.
type replayHeader struct {
	Version int    `json:"version,omitempty"`
	Note    string `json:"note,omitempty"`
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
	rb, err := readBounded(resp.Body, resp.ContentLength, maxResponseBytes)
	resp.Body.Close()
	var big *TooLargeError
	if errors.As(err, &big) {
		return nil, big // refused as in a normal run, and not recorded
	}
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	resp.ContentLength = int64(len(rb))
	if retryable(resp.StatusCode) {
		return resp, nil // the transport retries it: not a final exchange
	}
	canon, hash, model, err := CanonicalRequest(req.Method, req.URL.Path, body)
	if err != nil {
		return resp, nil // not an LLM JSON request: pass through unrecorded
	}
	// The hash is of the request as sent; what is written has every secret
	// masked (a provider may echo the key in an error body).
	red := redact.New(credentialHeaders(req.Header)...)
	mask := func(b []byte) []byte { return r.Redact.Bytes(red.Bytes(b)) }
	rbw := mask(rb)
	respJSON := json.RawMessage(rbw)
	if !json.Valid(rbw) {
		respJSON, _ = json.Marshal(string(rbw))
	}
	if c := mask(canon); json.Valid(c) {
		canon = c
	}
	ex := Exchange{Hash: hash, Model: model, PromptHash: promptHash(req.Context()),
		Request: canon, Status: resp.StatusCode, Response: respJSON}
	if err := r.appendLine(ex); err != nil {
		return nil, fmt.Errorf("recording the exchange: %w", err)
	}
	return resp, nil
}

// SetNote records the file's note.
func (r *Recorder) SetNote(note string) error { return r.appendLine(replayHeader{Note: note}) }

// Exchanges returns what was recorded so far, read back from the file.
func (r *Recorder) Exchanges() []Exchange {
	f, err := ReadReplayFile(r.File)
	if err != nil {
		return nil
	}
	return f.Exchanges
}

// Close closes the file; the record is complete without it.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// appendLine writes v as one line, in one write.
func (r *Recorder) appendLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return fmt.Errorf("record file %s: closed", r.File)
	}
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("record file: %w", err)
	}
	return nil
}

// ReadReplayFile reads a record of either format.
func ReadReplayFile(path string) (ReplayFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ReplayFile{}, fmt.Errorf("replay file: %w", err)
	}
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	var h replayHeader
	if json.Unmarshal(first, &h) != nil || h.Version == replayFormatV1 {
		var f ReplayFile
		if err := json.Unmarshal(b, &f); err != nil {
			return ReplayFile{}, fmt.Errorf("replay file %s: %w", path, err)
		}
		if f.Version != replayFormatV1 {
			return ReplayFile{}, fmt.Errorf("replay file %s: version %d, want %d or %d", path, f.Version, replayFormatV1, ReplayFormat)
		}
		return f, nil
	}
	if h.Version != ReplayFormat {
		return ReplayFile{}, fmt.Errorf("replay file %s: version %d, want %d or %d", path, h.Version, replayFormatV1, ReplayFormat)
	}
	f := ReplayFile{Version: ReplayFormat, Note: h.Note, Exchanges: []Exchange{}}
	for n := 2; len(rest) > 0; n++ {
		var line []byte
		var complete bool
		line, rest, complete = bytes.Cut(rest, []byte("\n"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Exchange
		if err := json.Unmarshal(line, &e); err != nil {
			if !complete {
				break // the last line, cut short by a run that died writing it
			}
			return ReplayFile{}, fmt.Errorf("replay file %s:%d: %w", path, n, err)
		}
		if e.Hash == "" {
			var note replayHeader
			if json.Unmarshal(line, &note) == nil && note.Note != "" {
				f.Note = note.Note
			}
			continue
		}
		f.Exchanges = append(f.Exchanges, e)
	}
	return f, nil
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

// NewReplayer loads path (either format).
func NewReplayer(path string) (*Replayer, error) {
	f, err := ReadReplayFile(path)
	if err != nil {
		return nil, err
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
	e, ok := r.next(hash)
	if !ok {
		return nil, &ReplayMissError{Hash: hash, Model: model, PromptHash: promptHash(req.Context()), File: r.File}
	}
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

// record appends one exchange of a program's model (no HTTP: endpoint,
// request body and answer as given).
func (r *Recorder) record(ctx context.Context, endpoint string, body []byte, status int, resp []byte) error {
	canon, hash, model, err := CanonicalRequest(http.MethodPost, endpoint, body)
	if err != nil {
		return err
	}
	ex := Exchange{Hash: hash, Model: model, PromptHash: promptHash(ctx),
		Request: r.Redact.Bytes(canon), Status: status, Response: r.Redact.Bytes(resp)}
	if !json.Valid(ex.Request) {
		ex.Request = canon
	}
	if !json.Valid(ex.Response) {
		ex.Response = resp
	}
	if err := r.appendLine(ex); err != nil {
		return fmt.Errorf("recording the exchange: %w", err)
	}
	return nil
}

// answer is the recorded answer to a program's model's request.
func (r *Replayer) answer(ctx context.Context, endpoint string, body []byte) (int, []byte, error) {
	_, hash, model, err := CanonicalRequest(http.MethodPost, endpoint, body)
	if err != nil {
		return 0, nil, err
	}
	e, ok := r.next(hash)
	if !ok {
		return 0, nil, &ReplayMissError{Hash: hash, Model: model, PromptHash: promptHash(ctx), File: r.File}
	}
	return e.Status, []byte(e.Response), nil
}

// next is the next recorded exchange of hash (the last one repeats).
func (r *Replayer) next(hash string) (Exchange, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.byID[hash]
	if len(list) == 0 {
		return Exchange{}, false
	}
	i := r.used[hash]
	if i < len(list) {
		r.used[hash] = i + 1
	} else {
		i = len(list) - 1
	}
	return list[i], true
}
