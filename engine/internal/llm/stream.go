package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
)

// StreamError ends a streamed answer that failed after it began: the
// events could not be read or parsed, the caller's OnDelta returned an
// error (Err), or it grew past MaxResponseBytes. It is never retried: its
// first pieces may have been passed on.
type StreamError struct {
	Provider string
	Err      error
}

func (e *StreamError) Error() string {
	return e.Provider + ": the streamed answer failed: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *StreamError) Unwrap() error { return e.Err }

// readSSE calls event with the data of each server-sent event of r (its
// "data:" lines joined by newlines), until r ends, the data is "[DONE]" or
// event returns an error.
func readSSE(r io.Reader, event func(data []byte) error) error {
	br := bufio.NewReaderSize(r, 16<<10)
	var data []byte
	flush := func() error {
		if len(data) == 0 {
			return nil
		}
		d := data
		data = data[:0]
		if string(d) == "[DONE]" {
			return io.EOF
		}
		return event(d)
	}
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0 && err == nil:
			if ferr := flush(); ferr != nil {
				return ignoreEOF(ferr)
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		if err == io.EOF {
			return ignoreEOF(flush())
		}
		if err != nil {
			return err
		}
	}
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// --- OpenAI-compatible ---

// openAIStream sends body with "stream": true and rebuilds the whole
// answer from its chunks, passing the content deltas to req.OnDelta;
// headers are requestHeaders' (which made c.endpoint).
func (c *OpenAI) stream(ctx context.Context, req Request, body map[string]any, headers map[string]string) (*Response, error) {
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	b, err := marshal(body)
	if err != nil {
		return nil, err
	}
	acc := openAIStreamState{calls: map[int]*openAIStreamCall{}}
	_, tries, err := send(ctx, c.Client, c.Name, c.endpoint, headers, b, c.Retry,
		func(r io.Reader) error { return readSSE(r, func(d []byte) error { return acc.add(d, req.OnDelta) }) })
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(acc.whole())
	if err != nil {
		return nil, err
	}
	resp, err := c.parse(raw, len(req.Tools) > 0)
	if resp != nil {
		resp.Tries = tries
	}
	return resp, err
}

type openAIStreamCall struct {
	ID, Name string
	Args     strings.Builder
}

type openAIStreamState struct {
	id, model, finish string
	content, refusal  strings.Builder
	calls             map[int]*openAIStreamCall
	usage             json.RawMessage
}

type openAIChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
		Delta        struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (s *openAIStreamState) add(data []byte, onDelta func(string) error) error {
	var ch openAIChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return errors.New("malformed event: " + err.Error())
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return errors.New(errorMessage(data))
	}
	if ch.ID != "" {
		s.id = ch.ID
	}
	if ch.Model != "" {
		s.model = ch.Model
	}
	if len(ch.Usage) > 0 && string(ch.Usage) != "null" {
		s.usage = ch.Usage
	}
	for _, c := range ch.Choices {
		if c.FinishReason != nil {
			s.finish = *c.FinishReason
		}
		if c.Delta.Refusal != nil {
			s.refusal.WriteString(*c.Delta.Refusal)
		}
		for _, tc := range c.Delta.ToolCalls {
			call := s.calls[tc.Index]
			if call == nil {
				call = &openAIStreamCall{}
				s.calls[tc.Index] = call
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Function.Name != "" {
				call.Name = tc.Function.Name
			}
			call.Args.WriteString(tc.Function.Arguments)
		}
		if c.Delta.Content != nil && *c.Delta.Content != "" {
			s.content.WriteString(*c.Delta.Content)
			if err := onDelta(*c.Delta.Content); err != nil {
				return err
			}
		}
	}
	return nil
}

// whole is the streamed answer in the shape of a non-streamed one.
func (s *openAIStreamState) whole() map[string]any {
	msg := map[string]any{"content": s.content.String()}
	if s.refusal.Len() > 0 {
		msg["refusal"] = s.refusal.String()
	}
	idx := make([]int, 0, len(s.calls))
	for i := range s.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var calls []any
	for _, i := range idx {
		c := s.calls[i]
		calls = append(calls, map[string]any{"id": c.ID, "function": map[string]any{"name": c.Name, "arguments": c.Args.String()}})
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	out := map[string]any{"id": s.id, "model": s.model,
		"choices": []any{map[string]any{"finish_reason": s.finish, "message": msg}}}
	if len(s.usage) > 0 {
		out["usage"] = s.usage
	}
	return out
}

// --- Anthropic ---

func (c *Anthropic) stream(ctx context.Context, req Request, body map[string]any, url string, headers map[string]string) (*Response, error) {
	body["stream"] = true
	b, err := marshal(body)
	if err != nil {
		return nil, err
	}
	s := &anthropicStreamState{}
	_, tries, err := send(ctx, c.Client, c.name(), url, headers, b, c.Retry,
		func(r io.Reader) error { return readSSE(r, func(d []byte) error { return s.add(d, req.OnDelta) }) })
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(s.whole())
	if err != nil {
		return nil, err
	}
	resp, err := c.parse(raw)
	if resp != nil {
		resp.Tries = tries
	}
	return resp, err
}

type anthropicBlock struct {
	Type, ID, Name string
	Text, JSON     strings.Builder
}

type anthropicStreamState struct {
	id, model, stop string
	usage           map[string]any
	blocks          []*anthropicBlock
}

type anthropicEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		ID    string         `json:"id"`
		Model string         `json:"model"`
		Usage map[string]any `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage map[string]any `json:"usage"`
}

func (s *anthropicStreamState) add(data []byte, onDelta func(string) error) error {
	var ev anthropicEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return errors.New("malformed event: " + err.Error())
	}
	switch ev.Type {
	case "error":
		return errors.New(errorMessage(data))
	case "message_start":
		s.id, s.model, s.usage = ev.Message.ID, ev.Message.Model, ev.Message.Usage
	case "content_block_start":
		for len(s.blocks) <= ev.Index {
			s.blocks = append(s.blocks, &anthropicBlock{})
		}
		b := s.blocks[ev.Index]
		b.Type, b.ID, b.Name = ev.ContentBlock.Type, ev.ContentBlock.ID, ev.ContentBlock.Name
		b.Text.WriteString(ev.ContentBlock.Text)
	case "content_block_delta":
		if ev.Index >= len(s.blocks) {
			return errors.New("a delta of a block that never started")
		}
		b := s.blocks[ev.Index]
		b.Text.WriteString(ev.Delta.Text)
		b.JSON.WriteString(ev.Delta.PartialJSON)
		if b.Type == "tool_use" && b.Name == OutputTool && ev.Delta.PartialJSON != "" {
			return onDelta(ev.Delta.PartialJSON)
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			s.stop = ev.Delta.StopReason
		}
		if s.usage == nil {
			s.usage = map[string]any{}
		}
		for k, v := range ev.Usage {
			s.usage[k] = v
		}
	}
	return nil
}

func (s *anthropicStreamState) whole() map[string]any {
	content := []any{}
	for _, b := range s.blocks {
		switch b.Type {
		case "tool_use":
			in := json.RawMessage(argsObject(json.RawMessage(b.JSON.String())))
			content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": in})
		case "text":
			content = append(content, map[string]any{"type": "text", "text": b.Text.String()})
		}
	}
	return map[string]any{"id": s.id, "model": s.model, "stop_reason": s.stop, "content": content, "usage": s.usage}
}

// --- Gemini ---

func (c *Gemini) stream(ctx context.Context, req Request, body []byte) (*Response, error) {
	acc := &geminiAnswer{}
	tools := len(req.Tools) > 0
	_, tries, err := send(ctx, c.Client, c.name(), c.url(req.Model, "streamGenerateContent"), c.headers(), body, c.Retry,
		func(r io.Reader) error {
			return readSSE(r, func(d []byte) error {
				var piece geminiResponse
				if err := json.Unmarshal(d, &piece); err != nil {
					return errors.New("malformed event: " + err.Error())
				}
				before, calls := acc.text.Len(), len(acc.calls)
				acc.add(&piece)
				if !tools && acc.text.Len() > before {
					return req.OnDelta(acc.text.String()[before:])
				}
				for _, tc := range acc.calls[calls:] {
					if tc.Name == OutputTool {
						return req.OnDelta(string(tc.Args))
					}
				}
				return nil
			})
		})
	if err != nil {
		return nil, err
	}
	resp, err := acc.response(c.name(), tools)
	if resp != nil {
		resp.Tries = tries
	}
	return resp, err
}
