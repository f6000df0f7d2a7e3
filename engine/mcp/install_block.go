package mcp

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The execution-model block in CLAUDE.md (and, for Codex, AGENTS.md) lives
// between two marker lines. Install replaces what is between them (or
// appends the block to a file without it), uninstall removes it; the bytes
// outside the markers are never touched, and a CRLF file gets CRLF lines.

const (
	blockBegin = "<!-- stratum:begin (written by `stratum install`, removed by `stratum uninstall`; edit outside these markers) -->"
	blockEnd   = "<!-- stratum:end -->"
	// Markers are found by these prefixes, so a block written by another
	// version of stratum is found too.
	blockBeginPrefix = "<!-- stratum:begin"
	blockEndPrefix   = "<!-- stratum:end"
)

// blockText is the block, markers included, without a final line ending.
func blockText() string {
	return blockBegin + "\n\n" + strings.TrimRight(mustAsset("assets/block.md"), "\n") + "\n\n" + blockEnd
}

// markedFile is a file split around its block.
type markedFile struct {
	text        string
	eol         string // "\r\n" when the file uses CRLF
	begin, end  int    // byte range of the block's lines, end after the end marker's line ending; begin -1 when absent
	hasFinalEOL bool
}

// readMarked finds the block; markers out of order, repeated or unpaired
// are an error (the file is left to the user).
func readMarked(path string, old []byte) (*markedFile, error) {
	if !utf8.Valid(old) {
		return nil, fmt.Errorf("%s is not valid UTF-8; fix it, it was left untouched", path)
	}
	m := &markedFile{text: string(old), eol: "\n", begin: -1}
	if strings.Contains(m.text, "\r\n") {
		m.eol = "\r\n"
	}
	m.hasFinalEOL = m.text == "" || strings.HasSuffix(m.text, "\n")
	end := -1
	for off, line := 0, ""; off < len(m.text); off += len(line) {
		line = m.text[off:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		switch t := strings.TrimSpace(line); {
		case strings.HasPrefix(t, blockBeginPrefix):
			if m.begin >= 0 {
				return nil, fmt.Errorf("%s: the stratum block's begin marker appears twice; fix it by hand, the file was left untouched", path)
			}
			m.begin = off
		case strings.HasPrefix(t, blockEndPrefix):
			if m.begin < 0 || end >= 0 {
				return nil, fmt.Errorf("%s: a stratum block end marker without its begin marker; fix it by hand, the file was left untouched", path)
			}
			end = off + len(line)
		}
	}
	if m.begin >= 0 && end < 0 {
		return nil, fmt.Errorf("%s: the stratum block has no end marker; fix it by hand, the file was left untouched", path)
	}
	m.end = end
	return m, nil
}

// planBlock computes a file with the current block.
func planBlock(path string) (fileChange, error) {
	f := fileChange{Path: path, Action: ActionCreated}
	old, err := readExisting(path)
	if err != nil {
		return f, err
	}
	if old == nil {
		f.Content = blockText() + "\n"
		return f, nil
	}
	m, err := readMarked(path, old)
	if err != nil {
		return f, err
	}
	block := strings.ReplaceAll(blockText(), "\n", m.eol)
	f.Action = ActionUpdated
	switch {
	case m.begin >= 0:
		tail := m.eol
		if !strings.HasSuffix(m.text[:m.end], "\n") { // the end marker is the last line, without a line ending
			tail = ""
		}
		f.Content = m.text[:m.begin] + block + tail + m.text[m.end:]
	case m.text == "":
		f.Content = block + m.eol
	default:
		sep := ""
		if !m.hasFinalEOL {
			sep = m.eol
		}
		f.Content = m.text + sep + block + m.eol
	}
	if f.Content == m.text {
		f.Action = ActionUnchanged
	}
	return f, nil
}

// unplanBlock computes the file without the block's lines; a file left
// empty is removed.
func unplanBlock(path string) (fileChange, error) {
	f := fileChange{Path: path, Action: ActionUnchanged}
	old, err := readExisting(path)
	if err != nil || old == nil {
		return f, err
	}
	m, err := readMarked(path, old)
	if err != nil {
		return f, err
	}
	f.Content = m.text
	if m.begin < 0 {
		return f, nil
	}
	f.Action, f.Content = ActionUpdated, m.text[:m.begin]+m.text[m.end:]
	if f.Content == "" {
		f.Action = ActionRemoved
	}
	return f, nil
}
