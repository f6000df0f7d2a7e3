// Package redact masks secret values (API keys, tokens, passwords) in text
// stratum writes: stderr, --json, the --record file, the store and OTLP
// spans. A Redactor is built once per process from the configured secrets
// (FromEnv) and applied where text leaves; the LLM clients also mask the
// Authorization / x-api-key values they sent wherever a provider echoes
// them back (the source of most leaks).
//
// A secret shows as its key-shape prefix, if any, and "…[redacted]":
// "sk-…[redacted]", "ghp_…[redacted]", else "[redacted]". Values shorter
// than MinLen are not masked (they would mask ordinary words). The package
// imports nothing else of stratum.
package redact

import (
	"io"
	"sort"
	"strings"
)

// MinLen is the shortest value masked.
const MinLen = 8

// Redactor replaces secret values in text. The zero value and nil mask
// nothing.
type Redactor struct {
	r *strings.Replacer
}

// New returns a Redactor of secrets (each value at least MinLen long;
// shorter ones and duplicates are ignored). A value given as "Bearer X"
// masks X too.
func New(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var vals []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) >= MinLen && !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	for _, s := range secrets {
		add(s)
		if k, v, ok := strings.Cut(s, " "); ok && strings.EqualFold(k, "bearer") {
			add(v)
		}
	}
	if len(vals) == 0 {
		return &Redactor{}
	}
	// Longest first, so a secret containing another is masked whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, Mask(v))
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// Mask is how a secret value shows: its key-shape prefix ("sk-",
// "sk-ant-", "ghp_", "xoxb-": letters ending in - or _, at most 8
// characters, kept only for values of at least 20) and "…[redacted]".
func Mask(secret string) string {
	if len(secret) >= 20 {
		end := 0
		for i, r := range secret {
			if i >= 8 {
				break
			}
			if r == '-' || r == '_' {
				end = i + 1
				continue
			}
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				break
			}
		}
		if end > 0 {
			return secret[:end] + "…[redacted]"
		}
	}
	return "[redacted]"
}

// String masks the secrets in s.
func (x *Redactor) String(s string) string {
	if x == nil || x.r == nil {
		return s
	}
	return x.r.Replace(s)
}

// Bytes masks the secrets in b (b itself when there are none).
func (x *Redactor) Bytes(b []byte) []byte {
	if x == nil || x.r == nil {
		return b
	}
	s := string(b)
	if out := x.r.Replace(s); out != s {
		return []byte(out)
	}
	return b
}

// Empty reports whether x masks nothing.
func (x *Redactor) Empty() bool { return x == nil || x.r == nil }

// secretSuffixes name the environment variables whose values are secrets.
var secretSuffixes = []string{"_API_KEY", "_APIKEY", "_TOKEN", "_SECRET", "_SECRET_KEY", "_PASSWORD", "_PASSWD", "_AUTH"}

// FromEnv returns a Redactor of the secrets in the environment (environ is
// os.Environ()): the values of variables named *_API_KEY, *_TOKEN,
// *_SECRET, *_PASSWORD, *_AUTH (OPENAI_API_KEY, ANTHROPIC_API_KEY,
// GITHUB_TOKEN, …), the header values of OTEL_EXPORTER_OTLP_HEADERS and
// OTEL_EXPORTER_OTLP_TRACES_HEADERS, and extra (configured secrets).
func FromEnv(environ []string, extra ...string) *Redactor {
	var secrets []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			continue
		}
		uk := strings.ToUpper(k)
		switch uk {
		case "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS":
			for _, h := range strings.Split(v, ",") {
				if _, hv, ok := strings.Cut(h, "="); ok {
					secrets = append(secrets, strings.ReplaceAll(hv, "%20", " "))
				}
			}
			continue
		}
		for _, suf := range secretSuffixes {
			if strings.HasSuffix(uk, suf) {
				secrets = append(secrets, v)
				break
			}
		}
	}
	return New(append(secrets, extra...)...)
}

// Writer returns a writer that masks each Write's text before passing it
// to w (a secret split across two writes is not seen: stratum writes whole
// lines and documents). With nothing to mask it returns w itself.
func (x *Redactor) Writer(w io.Writer) io.Writer {
	if x.Empty() {
		return w
	}
	return &writer{x: x, w: w}
}

type writer struct {
	x *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.x.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap returns the underlying writer (to test whether it is a terminal).
func (w *writer) Unwrap() io.Writer { return w.w }
