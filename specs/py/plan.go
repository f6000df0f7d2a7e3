package py

import (
	"fmt"
	"strconv"
)

// planCompletion is plan_completion(plan_items, files_changed,
// threshold=90): the share of plan items ({text, file, critical}) whose
// file is among the changed files (an item without a file counts as done)
// must reach threshold percent, and no critical item may be missing. An
// empty plan is True. Otherwise it fails with one violation per missing
// critical item, or the completion and every missing item.
func planCompletion(w *Work, a []any) (any, error) {
	items, ok := a[0].([]any)
	if a[0] != nil && !ok {
		return nil, Errorf("plan_completion() plan_items must be a list, not %s", typeName(a[0]))
	}
	if len(items) == 0 {
		return true, nil
	}
	changed, ok := a[1].([]any)
	if a[1] != nil && !ok {
		return nil, Errorf("plan_completion() files_changed must be a list, not %s", typeName(a[1]))
	}
	threshold := 90.0
	if len(a) > 2 {
		t, err := toFloat(a[2])
		if err != nil {
			return nil, err
		}
		threshold = t.(float64)
	}
	if err := w.spendElems(len(items) + len(changed)); err != nil {
		return nil, err
	}
	done, missing, err := planSplit(w, items, changed)
	if err != nil {
		return nil, err
	}
	var vs []string
	for _, it := range missing {
		if m, _ := it.(map[string]any); m != nil && Truth(m["critical"]) {
			text, file, err := planItemText(w, m)
			if err != nil {
				return nil, err
			}
			vs = append(vs, fmt.Sprintf("Missing critical item: %s (expected in %s)", text, file))
		}
	}
	if len(vs) > 0 {
		return nil, Violations(vs)
	}
	completion := float64(done) / float64(len(items)) * 100
	if completion < threshold {
		vs = []string{fmt.Sprintf("Plan completion %s%% is below threshold %s%%",
			strconv.FormatFloat(completion, 'f', 0, 64), strconv.FormatFloat(threshold, 'f', 0, 64))}
		for _, it := range missing {
			text, file, err := planItemText(w, it.(map[string]any))
			if err != nil {
				return nil, err
			}
			vs = append(vs, fmt.Sprintf("Missing item: %s (expected in %s)", text, file))
		}
		return nil, Violations(vs)
	}
	return true, nil
}

// planSplit counts the done items and lists the missing ones: an item whose
// (true) file is not among the changed files is missing; an item without a
// file, or not a mapping, is done.
func planSplit(w *Work, items, changed []any) (done int, missing []any, err error) {
	strs := map[string]bool{}
	var others []any
	for _, c := range changed {
		if s, ok := c.(string); ok {
			strs[s] = true
		} else {
			others = append(others, c)
		}
	}
	for _, it := range items {
		m, _ := it.(map[string]any)
		file := m["file"]
		if m == nil || !Truth(file) {
			done++
			continue
		}
		found := false
		if s, ok := file.(string); ok {
			found = strs[s]
		}
		if !found && len(others) > 0 {
			if found, err = In(w, file, others); err != nil {
				return 0, nil, err
			}
		}
		if found {
			done++
		} else {
			missing = append(missing, it)
		}
	}
	return done, missing, nil
}

// planItemText is str() of an item's text and file (missing ones are "").
func planItemText(w *Work, m map[string]any) (string, string, error) {
	get := func(k string) (string, error) {
		v, ok := m[k]
		if !ok {
			return "", nil
		}
		return str(w, v)
	}
	text, err := get("text")
	if err != nil {
		return "", "", err
	}
	file, err := get("file")
	return text, file, err
}
