package fanout

import (
	"reflect"
	"testing"
)

func TestParsePipelineTaskID(t *testing.T) {
	for _, c := range []struct {
		id                string
		item, stage, lane int
		ok                bool
	}{
		{"p::item3::stage1", 3, 1, -1, true},
		{"p::item0::stage2::lane7", 0, 2, 7, true},
		{"q::item0::stage0", 0, 0, 0, false},
		{"p::item::stage0", 0, 0, 0, false},
		{"p::item1::stagex", 0, 0, 0, false},
		{"p::item1::stage0::lanex", 0, 0, 0, false},
		{"p::item1::stage0::lane1::x", 0, 0, 0, false},
		{"p::item-1::stage0", 0, 0, 0, false},
	} {
		i, s, l, ok := ParsePipelineTaskID("p", c.id)
		if ok != c.ok || ok && (i != c.item || s != c.stage || l != c.lane) {
			t.Errorf("%s: %d %d %d %v", c.id, i, s, l, ok)
		}
	}
}

// ItemVerdicts: a failed or cancelled stage fails its item; a skipped one
// does not; a missing or open stage leaves it incomplete; a failed lane is
// no item failure (its join decides), an open lane keeps it incomplete.
func TestItemVerdicts(t *testing.T) {
	task := func(i, j, k int, role string) Task {
		return Task{ID: PipelineTaskID("p", i, j, k), Stage: &StageTask{Item: i, Stage: j, Lane: k, Role: role}}
	}
	tasks := []Task{
		task(0, 0, -1, "plain"), task(0, 1, -1, "plain"),
		task(1, 0, -1, "plain"), task(1, 1, -1, "plain"),
		task(2, 0, -1, "plain"), task(2, 1, -1, "plain"),
		task(3, 0, -1, "split"), task(3, 1, 0, "lane"), task(3, 1, 1, "lane"), task(3, 2, -1, "join"),
		task(4, 0, -1, "split"), task(4, 1, 0, "lane"), task(4, 1, 1, "lane"), task(4, 2, -1, "join"),
	}
	status := map[string]string{
		"p::item0::stage0": "complete", "p::item0::stage1": "skipped",
		"p::item1::stage0": "complete", "p::item1::stage1": "cancelled",
		"p::item2::stage0": "complete",
		"p::item3::stage0": "complete", "p::item3::stage1::lane0": "failed", "p::item3::stage1::lane1": "complete", "p::item3::stage2": "complete",
		"p::item4::stage0": "complete", "p::item4::stage1::lane0": "running", "p::item4::stage2": "pending",
	}
	get := func(id string) string {
		if s, ok := status[id]; ok {
			return s
		}
		return "missing"
	}
	vs := ItemVerdicts(tasks, get)
	var got []string
	for _, v := range vs {
		got = append(got, v.Status)
	}
	if want := []string{"complete", "failed", "incomplete", "complete", "incomplete"}; !reflect.DeepEqual(got, want) {
		t.Errorf("verdicts %v, want %v", got, want)
	}
	for _, c := range []struct {
		require string
		ok      bool
	}{{"all", false}, {"any", true}, {"2", true}, {"3", false}} {
		if PipelineRequireSatisfied(c.require, vs) != c.ok {
			t.Errorf("require %s: %v", c.require, !c.ok)
		}
	}
}
