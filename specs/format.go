package specs

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// FileResult is the validation result of one file, as `stratum validate`
// reports it.
type FileResult struct {
	File        string      `json:"file"`
	Valid       bool        `json:"valid"`
	Diagnostics Diagnostics `json:"errors"`
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
//   - json: {"valid": bool, "files": [{"file", "valid", "errors": [Diagnostic…]}]};
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
