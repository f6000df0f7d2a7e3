package mcp

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
)

// Skills are Claude Code slash commands (.claude/skills/<name>/SKILL.md,
// YAML front matter with name and description) for common stratum
// workflows. Install writes the ones that are missing; a SKILL.md that
// differs from what this version writes (edited by the user, or written by
// another version) is kept and reported, by install and uninstall alike.

//go:embed assets
var assets embed.FS

func mustAsset(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return string(b)
}

// skill is one embedded skill.
type skill struct {
	name    string // the directory name, also its front matter name
	content string
}

// Skills returns the names of the skills install writes.
func Skills() []string {
	var names []string
	for _, s := range embeddedSkills() {
		names = append(names, s.name)
	}
	return names
}

func embeddedSkills() []skill {
	entries, err := fs.ReadDir(assets, "assets/skills")
	if err != nil {
		panic(err)
	}
	var out []skill
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, skill{name: e.Name(), content: mustAsset(path.Join("assets/skills", e.Name(), "SKILL.md"))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// skillPath is where a skill lives in a project.
func skillPath(root, name string) string {
	return filepath.Join(root, ".claude", "skills", name, "SKILL.md")
}

// planSkill computes one skill's file.
func planSkill(root string, s skill) (fileChange, error) {
	f := fileChange{Path: skillPath(root, s.name), Action: ActionCreated, Content: s.content}
	old, err := readExisting(f.Path)
	switch {
	case err != nil:
		return f, err
	case old == nil:
		return f, nil
	case string(old) == s.content:
		f.Action = ActionUnchanged
	default:
		f.Action, f.Content = ActionKept, string(old)
		f.Note = fmt.Sprintf("differs from the %s skill this stratum writes (edited?); remove it to get the current one", s.name)
	}
	return f, nil
}

// unplanSkill removes a skill that is still what install wrote.
func unplanSkill(root string, s skill) (fileChange, error) {
	f := fileChange{Path: skillPath(root, s.name), Action: ActionUnchanged}
	old, err := readExisting(f.Path)
	switch {
	case err != nil || old == nil:
		return f, err
	case string(old) == s.content:
		f.Action = ActionRemoved
		f.prune = []string{filepath.Dir(f.Path), filepath.Dir(filepath.Dir(f.Path)), filepath.Join(root, ".claude")}
	default:
		f.Action, f.Content = ActionKept, string(old)
		f.Note = "edited since stratum install wrote it: kept"
	}
	return f, nil
}
