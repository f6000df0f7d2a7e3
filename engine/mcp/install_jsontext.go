package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Text-preserving edits of a JSON document: install adds one member to an
// object and uninstall removes it again, leaving every other byte of the
// file as it was (formatting, key order, numbers).

// jsonMember is one member of a JSON object, by byte offsets.
type jsonMember struct {
	key      string
	keyStart int // the key's opening quote
	valStart int
	valEnd   int // one past the value
}

// jsonObject is a JSON object's span and members.
type jsonObject struct {
	start, end int // the '{' and one past the '}'
	members    []jsonMember
}

// member returns the last member named key (encoding/json's choice for
// duplicates) and its index, or -1.
func (o jsonObject) member(key string) (jsonMember, int) {
	for i := len(o.members) - 1; i >= 0; i-- {
		if o.members[i].key == key {
			return o.members[i], i
		}
	}
	return jsonMember{}, -1
}

// jsonScanner walks a document that encoding/json already accepted.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) && strings.IndexByte(" \t\r\n", s.b[s.i]) >= 0 {
		s.i++
	}
}

// object parses the object at s.i (after whitespace).
func (s *jsonScanner) object() (jsonObject, error) {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return jsonObject{}, fmt.Errorf("offset %d: not an object", s.i)
	}
	o := jsonObject{start: s.i}
	s.i++
	for {
		s.space()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			o.end = s.i
			return o, nil
		}
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			s.space()
		}
		m := jsonMember{keyStart: s.i}
		end, err := s.skipValue()
		if err != nil {
			return o, err
		}
		if err := json.Unmarshal(s.b[m.keyStart:end], &m.key); err != nil {
			return o, fmt.Errorf("offset %d: bad key: %v", m.keyStart, err)
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return o, fmt.Errorf("offset %d: missing ':'", s.i)
		}
		s.i++
		s.space()
		m.valStart = s.i
		if m.valEnd, err = s.skipValue(); err != nil {
			return o, err
		}
		o.members = append(o.members, m)
	}
}

// skipValue moves past the value at s.i and returns its end.
func (s *jsonScanner) skipValue() (int, error) {
	if s.i >= len(s.b) {
		return 0, fmt.Errorf("unexpected end of JSON")
	}
	switch c := s.b[s.i]; c {
	case '"':
		for s.i++; s.i < len(s.b); s.i++ {
			switch s.b[s.i] {
			case '\\':
				s.i++
			case '"':
				s.i++
				return s.i, nil
			}
		}
		return 0, fmt.Errorf("unterminated string")
	case '{', '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		for s.i++; ; {
			s.space()
			if s.i >= len(s.b) {
				return 0, fmt.Errorf("unterminated %c", c)
			}
			switch s.b[s.i] {
			case closer:
				s.i++
				return s.i, nil
			case ',', ':':
				s.i++
			default:
				if _, err := s.skipValue(); err != nil {
					return 0, err
				}
			}
		}
	default:
		for s.i < len(s.b) && strings.IndexByte(",:]} \t\r\n", s.b[s.i]) < 0 {
			s.i++
		}
		return s.i, nil
	}
}

// parseObjectAt parses the object that starts at offset at of text.
func parseObjectAt(text string, at int) (jsonObject, error) {
	s := &jsonScanner{b: []byte(text), i: at}
	return s.object()
}

// insertMember adds "key": value as the last member of o, indented like the
// member before it (a one-line object stays on one line).
func insertMember(text string, o jsonObject, key, value string) string {
	k, _ := json.Marshal(key)
	member := string(k) + ": " + value
	if len(o.members) == 0 {
		return text[:o.start+1] + member + text[o.end-1:]
	}
	last := o.members[len(o.members)-1]
	// The whitespace before the last key: after '{' for the first member,
	// else after the ',' that precedes it.
	lead := text[o.start+1 : last.keyStart]
	if j := strings.LastIndexByte(lead, ','); j >= 0 {
		lead = lead[j+1:]
	}
	if !strings.Contains(lead, "\n") {
		lead = " "
	}
	return text[:last.valEnd] + "," + lead + member + text[last.valEnd:]
}

// removeMember removes member i of o with the separator that joins it to
// its neighbours: the inverse of insertMember for a last member.
func removeMember(text string, o jsonObject, i int) string {
	m := o.members[i]
	switch {
	case len(o.members) == 1:
		return text[:o.start+1] + text[o.end-1:]
	case i > 0:
		return text[:o.members[i-1].valEnd] + text[m.valEnd:]
	default:
		return text[:m.keyStart] + text[o.members[1].keyStart:]
	}
}

// isEmptyObject reports whether text is an object without members.
func isEmptyObject(text string) bool {
	o, err := parseObjectAt(text, 0)
	return err == nil && len(o.members) == 0
}

// jsonArray is a JSON array's span and its elements' spans.
type jsonArray struct {
	start, end int // the '[' and one past the ']'
	elems      [][2]int
}

// array parses the array at s.i (after whitespace).
func (s *jsonScanner) array() (jsonArray, error) {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return jsonArray{}, fmt.Errorf("offset %d: not an array", s.i)
	}
	a := jsonArray{start: s.i}
	s.i++
	for {
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			a.end = s.i
			return a, nil
		}
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			s.space()
		}
		start := s.i
		end, err := s.skipValue()
		if err != nil {
			return a, err
		}
		a.elems = append(a.elems, [2]int{start, end})
	}
}

// parseArrayAt parses the array that starts at offset at of text.
func parseArrayAt(text string, at int) (jsonArray, error) {
	s := &jsonScanner{b: []byte(text), i: at}
	return s.array()
}

// insertElement adds value as the last element of a, indented like the
// element before it (a one-line array stays on one line).
func insertElement(text string, a jsonArray, value string) string {
	if len(a.elems) == 0 {
		return text[:a.start+1] + value + text[a.end-1:]
	}
	last := a.elems[len(a.elems)-1]
	lead := text[a.start+1 : last[0]]
	if j := strings.LastIndexByte(lead, ','); j >= 0 {
		lead = lead[j+1:]
	}
	if !strings.Contains(lead, "\n") {
		lead = " "
	}
	return text[:last[1]] + "," + lead + value + text[last[1]:]
}

// removeElement removes element i of a with its separator: the inverse of
// insertElement for a last element.
func removeElement(text string, a jsonArray, i int) string {
	e := a.elems[i]
	switch {
	case len(a.elems) == 1:
		return text[:a.start+1] + text[a.end-1:]
	case i > 0:
		return text[:a.elems[i-1][1]] + text[e[1]:]
	default:
		return text[:e[0]] + text[a.elems[1][0]:]
	}
}
