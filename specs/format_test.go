package specs

import "testing"

func TestChooseFormat(t *testing.T) {
	for _, tc := range []struct {
		format            string
		set, json, github bool
		want, err         string
	}{
		{format: FormatHuman, want: FormatHuman},
		{format: FormatHuman, github: true, want: FormatGitHub},
		{format: FormatHuman, set: true, github: true, want: FormatHuman},
		{format: FormatJSON, set: true, want: FormatJSON},
		{format: FormatGitHub, set: true, want: FormatGitHub},
		{format: FormatHuman, json: true, want: FormatJSON},
		{format: FormatHuman, json: true, github: true, want: FormatJSON},
		{format: FormatJSON, set: true, json: true, want: FormatJSON},
		{format: FormatGitHub, set: true, json: true, err: "--json and --format github disagree"},
		{format: "xml", set: true, err: `unknown --format "xml" (want human, json or github)`},
		{format: "xml", set: true, github: true, err: `unknown --format "xml" (want human, json or github)`},
	} {
		got, err := ChooseFormat(tc.format, tc.set, tc.json, tc.github)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ChooseFormat(%q, set %v, json %v, github %v) = %q, %v; want error %q", tc.format, tc.set, tc.json, tc.github, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ChooseFormat(%q, set %v, json %v, github %v) = %q, %v; want %q", tc.format, tc.set, tc.json, tc.github, got, err, tc.want)
		}
	}
}
