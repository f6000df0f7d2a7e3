package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The hooks `stratum install --hooks` registers, by the name `stratum hook`
// takes.
const (
	// HookSessionStart prints the project memory file, which Claude Code
	// adds to the new session's context.
	HookSessionStart = "session-start"
	// HookSessionStop appends the start of the session's last answer to the
	// memory file as a dated note.
	HookSessionStop = "session-stop"
	// HookPostToolFailure appends a failed tool call (tool and error) to the
	// memory file; a call the user interrupted is not recorded.
	HookPostToolFailure = "post-tool-failure"
)

// HookNames are the hooks RunHook knows.
func HookNames() []string { return []string{HookSessionStart, HookSessionStop, HookPostToolFailure} }

// MemoryFile is the project memory file the hooks keep, relative to the
// project directory: the original's location, which its skills read too.
const MemoryFile = ".claude/memory/MEMORY.md"

// hookInput is what Claude Code passes a hook on stdin (the fields the
// hooks read).
type hookInput struct {
	Cwd                  string `json:"cwd"`
	IsInterrupt          bool   `json:"is_interrupt"`
	ToolName             string `json:"tool_name"`
	Error                string `json:"error"`
	LastAssistantMessage string `json:"last_assistant_message"`
}

// RunHook runs one hook: it reads Claude Code's JSON from in and writes
// what the session should see on out. The memory file is never created
// by a hook (stratum-onboard or the user does that): without it, a hook
// does nothing. now stamps the notes.
func RunHook(name string, in io.Reader, out io.Writer, now time.Time) error {
	known := false
	for _, n := range HookNames() {
		known = known || n == name
	}
	if !known {
		return fmt.Errorf("unknown hook %q (want one of %s)", name, strings.Join(HookNames(), ", "))
	}
	var h hookInput
	b, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("hook %s: reading stdin: %w", name, err)
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &h); err != nil {
			return fmt.Errorf("hook %s: stdin is not the JSON object Claude Code sends: %v", name, err)
		}
	}
	dir := h.Cwd
	if dir == "" {
		dir = "."
	}
	memory := filepath.Join(dir, filepath.FromSlash(MemoryFile))
	stamp := now.UTC().Format("2006-01-02T15:04:05Z")
	switch name {
	case HookSessionStart:
		m, err := os.ReadFile(memory)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		} else if err != nil {
			return fmt.Errorf("hook %s: %w", name, err)
		}
		_, err = out.Write(m)
		return err
	case HookSessionStop:
		msg := firstRunes(h.LastAssistantMessage, 400)
		if msg == "" {
			return nil
		}
		return appendMemory(memory, fmt.Sprintf("\n## Session note %s\n\n%s\n", stamp, msg))
	case HookPostToolFailure:
		msg := firstRunes(h.Error, 300)
		if h.IsInterrupt || msg == "" {
			return nil
		}
		tool := h.ToolName
		if tool == "" {
			tool = "unknown"
		}
		return appendMemory(memory, fmt.Sprintf("\n## Tool failure %s\n\nTool: %s\nError: %s\n", stamp, tool, msg))
	}
	return nil
}

// appendMemory appends text to the memory file when it exists.
func appendMemory(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("hook: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("hook: appending to %s: %w", path, err)
	}
	return f.Close()
}

// firstRunes is s cut to at most n characters.
func firstRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}
