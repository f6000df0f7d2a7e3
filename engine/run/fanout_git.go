package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratum-go/stratum/engine/internal/fanout"
	"github.com/stratum-go/stratum/engine/state"
)

// The git side of a fan-out under isolation: worktree: a task's worktree
// and branch, committing its work, merging the branches in task order, and
// cleaning up.

// branchUsable: a completed task of a resumed worktree fan-out is reused
// only while its branch still exists.
func (f *FanOut) branchUsable(ctx context.Context, p state.ParallelTask) bool {
	if f.isolation() != "worktree" || p.Branch == "" {
		return true
	}
	_, err := git(ctx, f.root, "rev-parse", "--verify", "refs/heads/"+p.Branch)
	return err == nil
}

// names are the worktree path and branch of a task: distinct tasks get
// distinct ones (fanout.Ref).
func (f *FanOut) names(taskID string) (string, string) {
	short := f.FlowID
	if len(short) > 8 {
		short = short[:8]
	}
	step := safeName(f.Step.ID)
	ref := fanout.Ref(taskID)
	wt := filepath.Join(f.WorktreeRoot, f.FlowID, step, ref)
	branch := fmt.Sprintf("stratum/%s/%s/%s", short, step, ref)
	return wt, branch
}

// safeName cleans a step id for a path and a branch name.
func safeName(s string) string {
	s = strings.Trim(unsafeRef.ReplaceAllString(s, "-"), ".-")
	if s == "" {
		s = "x"
	}
	return s
}

// removeWorktree removes a task's worktree (and its branch when asked).
func (f *FanOut) removeWorktree(ctx context.Context, wt, branch string, dropBranch bool) {
	ctx = context.WithoutCancel(ctx)
	f.wtMu.Lock()
	defer f.wtMu.Unlock()
	if _, err := os.Stat(wt); err == nil {
		if _, err := git(ctx, f.root, "worktree", "remove", "--force", wt); err != nil {
			_ = os.RemoveAll(wt)
		}
	}
	_, _ = git(ctx, f.root, "worktree", "prune")
	if dropBranch && branch != "" {
		_, _ = git(ctx, f.root, "branch", "-D", branch)
	}
}

// commitTask commits everything the task changed in its worktree on its
// branch and returns the changed files (repository-relative) and, with
// capture_diff, the diff.
func (f *FanOut) commitTask(ctx context.Context, wt string, t fanout.Task) ([]string, *string, error) {
	ctx = context.WithoutCancel(ctx)
	if _, err := git(ctx, wt, "add", "-A"); err != nil {
		return nil, nil, err
	}
	out, err := git(ctx, wt, "diff", "--cached", "--name-only", "HEAD")
	if err != nil {
		return nil, nil, err
	}
	files := lines(out)
	if len(files) == 0 {
		return nil, nil, nil
	}
	var diff *string
	if f.Step.CaptureDiff {
		if d, err := git(ctx, wt, "diff", "--cached", "HEAD"); err == nil {
			diff = &d
		}
	}
	if _, err := git(ctx, wt, "commit", "-q", "--no-verify", "-m", fmt.Sprintf("stratum: task %s of step %s", t.ID, f.Step.ID)); err != nil {
		return files, diff, err
	}
	return files, diff, nil
}

// cleanupTask removes a finished task's worktree (its branch too when the
// task did not complete), or keeps both under --keep-worktrees.
func (f *FanOut) cleanupTask(ctx context.Context, wt, branch string, dropBranch bool) {
	if wt == "" {
		return
	}
	if f.KeepWorktrees {
		if f.Log != nil {
			fmt.Fprintf(f.Log, "stratum: kept worktree %s (branch %s)\n", wt, branch)
		}
		return
	}
	f.removeWorktree(ctx, wt, branch, dropBranch)
}

// merge applies the completed tasks' branches to the repository in task
// order (isolation: worktree, merge: sequential_apply, require met): first
// no_file_conflicts (two tasks changing one file is a conflict, nothing is
// merged), then one merge per branch; a conflicting merge rolls the
// repository back to where it was, so nothing is half-merged.
func (f *FanOut) merge(ctx context.Context, res *FanOutResult) {
	ctx = context.WithoutCancel(ctx)
	complete, failed := 0, 0
	for _, t := range res.Tasks {
		if t.State == state.TaskComplete {
			complete++
		} else {
			failed++
			if t.Error != nil {
				res.Details = append(res.Details, *t.Error)
			}
		}
	}
	if f.isolation() != "worktree" {
		return
	}
	defer f.dropBranches(ctx, res)
	requireOK, merged, chain := fanout.RequireSatisfied(f.Step.Require, complete, failed), f.mergedTasks(res), func(id string) string { return id }
	if f.pipeline() {
		requireOK = fanout.PipelineRequireSatisfied(f.Step.Require, f.itemVerdicts())
		chain = f.itemOf
	}
	if !requireOK || f.Step.Merge == "manual" {
		return
	}
	owner := map[string]string{} // file → task (a pipeline's: item) that changed it
	for _, t := range res.Tasks {
		if !merged[t.TaskID] {
			continue
		}
		for _, file := range t.Files {
			if o, ok := owner[file]; ok && chain(o) != chain(t.TaskID) {
				res.MergeStatus = "conflict"
				res.Details = append(res.Details, fmt.Sprintf("no_file_conflicts: tasks '%s' and '%s' both changed %s; nothing was merged", o, t.TaskID, file))
				res.Bounced = append(res.Bounced, map[string]any{"reason": "merge_conflict", "task_id": t.TaskID, "files": []any{file}})
				continue
			}
			owner[file] = t.TaskID
		}
	}
	if res.MergeStatus == "conflict" {
		return
	}
	if dirty, err := dirtyFiles(ctx, f.root); err != nil || len(dirty) > 0 {
		res.MergeStatus = "conflict"
		res.Details = append(res.Details, fmt.Sprintf("repository %s changed during the fan-out (%s); nothing was merged — commit or stash, then resume", f.root, listShort(dirty, 5)))
		return
	}
	orig, err := git(ctx, f.root, "rev-parse", "HEAD")
	if err != nil {
		res.MergeStatus = "conflict"
		res.Details = append(res.Details, "cannot read HEAD before merging: "+err.Error())
		return
	}
	for _, t := range res.Tasks {
		if !merged[t.TaskID] || t.Branch == "" {
			continue
		}
		if _, err := git(ctx, f.root, "merge", "--no-ff", "--no-edit", "-m", fmt.Sprintf("stratum: merge task %s of step %s", t.TaskID, f.Step.ID), t.Branch); err != nil {
			files, _ := git(ctx, f.root, "diff", "--name-only", "--diff-filter=U")
			_, _ = git(ctx, f.root, "merge", "--abort")
			_, _ = git(ctx, f.root, "reset", "--hard", orig)
			res.MergeStatus = "conflict"
			where := listShort(lines(files), 5)
			if where == "" {
				where = clip(err.Error(), 300)
			}
			res.Details = append(res.Details, fmt.Sprintf("merge conflict: task '%s' (branch %s) conflicts in %s; nothing was merged", t.TaskID, t.Branch, where))
			conflicted := []any{}
			for _, f := range lines(files) {
				conflicted = append(conflicted, f)
			}
			res.Bounced = append(res.Bounced, map[string]any{"reason": "merge_conflict", "task_id": t.TaskID, "files": conflicted})
			return
		}
	}
}

// dropBranches deletes the task branches once merged (or once the fan-out
// is over without a merge), unless --keep-worktrees or merge: manual.
func (f *FanOut) dropBranches(ctx context.Context, res *FanOutResult) {
	if f.KeepWorktrees || f.Step.Merge == "manual" {
		return
	}
	for _, t := range res.Tasks {
		if t.Branch != "" {
			_, _ = git(ctx, f.root, "branch", "-D", t.Branch)
		}
	}
}

// stratumHome is $STRATUM_HOME (default ~/.stratum).
func stratumHome() string {
	if h := os.Getenv("STRATUM_HOME"); h != "" {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".stratum"
	}
	return filepath.Join(home, ".stratum")
}
