package specs

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// FileResult is the validation result of one file, as `stratum validate`
// reports it. Its JSON keeps errors and warnings apart, as stratum_validate
// does: {"file", "valid", "errors": [error diagnostics], "warnings":
// [warning diagnostics]} — both always arrays, so a valid file without
// problems is {"valid": true, "errors": [], "warnings": []}. (Under
// --strict a warning makes Valid false; it stays in warnings.)
type FileResult struct {
	File        string
	Valid       bool
	Diagnostics Diagnostics // errors and warnings, sorted by position
}

// MarshalJSON renders the result with errors and warnings apart.
func (r FileResult) MarshalJSON() ([]byte, error) {
	errs, warns := r.Diagnostics.Errors(), r.Diagnostics.Warnings()
	if errs == nil {
		errs = Diagnostics{}
	}
	if warns == nil {
		warns = Diagnostics{}
	}
	return json.Marshal(struct {
		File     string      `json:"file"`
		Valid    bool        `json:"valid"`
		Errors   Diagnostics `json:"errors"`
		Warnings Diagnostics `json:"warnings"`
	}{r.File, r.Valid, errs, warns})
}

// NewFileResult builds the result of validating one file.
func NewFileResult(file string, ds Diagnostics) FileResult {
	if ds == nil {
		ds = Diagnostics{}
	}
	return FileResult{File: file, Valid: !ds.HasErrors(), Diagnostics: ds}
}

// Output formats of WriteResults.
const (
	FormatHuman  = "human"
	FormatJSON   = "json"
	FormatGitHub = "github"
)

// ChooseFormat picks the output format of `stratum validate` from its
// flags: format is the --format value (formatSet when it was given), asJSON
// is --json (the same as --format json) and github says the process runs
// under GitHub Actions, which makes github the default. A contradiction or
// an unknown format is an error naming the flag.
func ChooseFormat(format string, formatSet, asJSON, github bool) (string, error) {
	switch {
	case asJSON && formatSet && format != FormatJSON:
		return "", fmt.Errorf("--json and --format %s disagree", format)
	case asJSON:
		return FormatJSON, nil
	case !formatSet && github:
		return FormatGitHub, nil
	}
	switch format {
	case FormatHuman, FormatJSON, FormatGitHub:
		return format, nil
	}
	return "", fmt.Errorf("unknown --format %q (want human, json or github)", format)
}

// WriteResults renders validation results in one of the output formats:
//
//   - human: one line per diagnostic, "file:line:col: severity code: message
//     (suggestion)", and "file: ok" for a valid file without diagnostics;
//   - json: {"valid": bool, "files": [{"file", "valid", "errors": [Diagnostic…],
//     "warnings": [Diagnostic…]}]} (FileResult.MarshalJSON);
//   - github: workflow-command annotations ("::error file=…,line=…,col=…,title=code::message")
//     understood by GitHub Actions, one per diagnostic.
func WriteResults(w io.Writer, format string, results []FileResult) error {
	switch format {
	case FormatJSON:
		all := true
		for _, r := range results {
			all = all && r.Valid
		}
		if results == nil {
			results = []FileResult{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Valid bool         `json:"valid"`
			Files []FileResult `json:"files"`
		}{all, results})
	case FormatGitHub:
		for _, r := range results {
			for _, d := range r.Diagnostics {
				level := "error"
				if d.Severity == SeverityWarning {
					level = "warning"
				}
				msg := d.Message
				if d.Suggestion != "" {
					msg += " (" + d.Suggestion + ")"
				}
				if _, err := fmt.Fprintf(w, "::%s file=%s,line=%d,col=%d,title=%s::%s\n", level,
					escapeGitHubProperty(r.File), d.Line, d.Column, escapeGitHubProperty("stratum "+d.Code),
					escapeGitHubData(msg)); err != nil {
					return err
				}
			}
		}
		return nil
	case FormatHuman, "":
		for _, r := range results {
			if len(r.Diagnostics) == 0 {
				if _, err := fmt.Fprintf(w, "%s: ok\n", r.File); err != nil {
					return err
				}
				continue
			}
			for _, d := range r.Diagnostics {
				if d.File == "" {
					d.File = r.File
				}
				if _, err := fmt.Fprintln(w, d.String()); err != nil {
					return err
				}
			}
		}
		return nil
	default:
		return fmt.Errorf("unknown output format %q (want human, json or github)", format)
	}
}

// escapeGitHubData escapes a workflow-command message.
func escapeGitHubData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeGitHubProperty escapes a workflow-command property value.
func escapeGitHubProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
