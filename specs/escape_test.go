package specs

import "testing"

// EscapeControl escapes every C0/C1 control (\xNN) and every bidirectional
// formatting character or line separator (\uNNNN): U+202E passed
// everywhere, so "abc\u202Egnp.exe" showed as "abcexe.png".
func TestEscapeControlBidi(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain ünïcode ✓", "plain ünïcode ✓"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"a\u0085b\u009bc", `a\x85b\x9bc`},
		{"abc\u202egnp.exe", `abc\u202egnp.exe`},
		{"\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"line\u2028forged\u2029", `line\u2028forged\u2029`},
		{"a\nb", `a\x0ab`},
	}
	for _, tt := range tests {
		if got := EscapeControl(tt.in); got != tt.want {
			t.Errorf("EscapeControl(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := EscapeControlLines("ok\nabc\u202egnp\r\n✓ x"); got != "ok\n"+`abc\u202egnp\x0d`+"\n✓ x" {
		t.Errorf("EscapeControlLines = %q", got)
	}
}

// A name with a bidirectional formatting character is an invalid-name
// error, as one with a control character is.
func TestBidiNameRefused(t *testing.T) {
	src := "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - {id: \"build\u202etxt\", intent: hi}\n"
	_, ds := Parse("t.yaml", []byte(src), testCompile)
	if len(ds) != 1 || ds[0].Code != CodeInvalidName {
		t.Fatalf("want one invalid-name, got:\n%s", dumpDiags(ds))
	}
}
