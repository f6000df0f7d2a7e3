package specs

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// WorkflowInfo is one registered workflow (the original's
// stratum_list_workflows entry).
type WorkflowInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Input is the workflow's input block as a plain map: param →
	// {type, required?, default?, …} (required only when true).
	Input map[string]any `json:"input"`
	Path  string         `json:"path"` // absolute
}

// WorkflowList is the result of DiscoverWorkflows. Both slices are non-nil.
type WorkflowList struct {
	Workflows []WorkflowInfo `json:"workflows"`
	Errors    []string       `json:"errors"`
}

// DiscoverWorkflows lists the workflows registered in dir, as the original's
// stratum_list_workflows does (upstream-behavior §2.18): every
// *.stratum.yaml file directly in dir (not in subdirectories), in sorted
// order, is parsed and validated; an invalid file adds the error
// "<file name>: <first error message>"; a valid file without a workflow block
// is skipped; a workflow name seen before keeps the first file and adds
// "Duplicate workflow name '<n>': <path1> and <path2>". The error is non-nil
// only when dir itself cannot be read. compile compiles the expressions
// (see Parse).
func DiscoverWorkflows(dir string, compile ExprCompiler) (WorkflowList, error) {
	list := WorkflowList{Workflows: []WorkflowInfo{}, Errors: []string{}}
	root, err := filepath.Abs(dir)
	if err != nil {
		return list, fmt.Errorf("workflows: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(root); err == nil {
		root = resolved
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return list, fmt.Errorf("workflows: %w", err)
	}
	var names []string
	for _, e := range entries {
		if IsSpecName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	seen := map[string]string{} // workflow name → first path
	for _, name := range names {
		path := filepath.Join(root, name)
		spec, ds := ParseFile(path, compile)
		if spec == nil {
			list.Errors = append(list.Errors, name+": "+firstErrorMessage(ds))
			continue
		}
		w := spec.Workflow
		if w == nil {
			continue
		}
		if first, dup := seen[w.Name]; dup {
			list.Errors = append(list.Errors, fmt.Sprintf("Duplicate workflow name '%s': %s and %s", w.Name, first, path))
			continue
		}
		seen[w.Name] = path
		list.Workflows = append(list.Workflows, WorkflowInfo{
			Name:        w.Name,
			Description: w.Description,
			Input:       workflowInput(w.Input),
			Path:        path,
		})
	}
	return list, nil
}

// firstErrorMessage is the message of the first error-severity diagnostic.
func firstErrorMessage(ds Diagnostics) string {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return d.Message
		}
	}
	if len(ds) > 0 {
		return ds[0].Message
	}
	return "invalid spec"
}

// workflowInput turns workflow params back into the input block's map form.
func workflowInput(params []*Param) map[string]any {
	out := make(map[string]any, len(params))
	for _, p := range params {
		if p == nil {
			continue
		}
		m := make(map[string]any, len(p.Schema)+3)
		for k, v := range p.Schema {
			m[k] = deepCopy(v)
		}
		if p.Type != "" {
			m["type"] = p.Type
		}
		if p.Required {
			m["required"] = true
		}
		if p.HasDefault {
			m["default"] = deepCopy(p.Default)
		}
		if p.Opaque {
			m["opaque"] = true
		}
		out[p.Name] = m
	}
	return out
}
