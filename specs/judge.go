package specs

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Judge steps (the original's STRAT-JUDGE): a step whose `judge:` block
// lists predicates that a tiered judge decides over the evidence the
// worker staged. The fourth step mode besides function, intent and flow.

// KindJudge is a `judge:` step.
const KindJudge StepKind = "judge"

// Predicate types.
const (
	PredicateDeterministic = "deterministic" // decided by its statement (an expression), tier 1
	PredicateVerified      = "verified"      // needs evidence: a verifier that cites it, tier 2
	PredicateJudged        = "judged"        // needs interpretation: tier 2, and tier 3 at paranoid stakes
)

// Stakes of a judge step.
const (
	StakesCheap    = "cheap"    // deterministic predicates only: no model runs
	StakesDefault  = "default"  // tiers 1 and 2
	StakesParanoid = "paranoid" // a met verdict of tier 2 is attacked by an adversary (tier 3)
)

// DefaultAppliedGate is a predicate's confidence floor for "met" when it
// names none (the original's).
const DefaultAppliedGate = 7

// Judge is a judge step's `judge:` block.
type Judge struct {
	Predicates []*Predicate // at least one
	Stakes     string       // StakesCheap, StakesDefault (the default) or StakesParanoid
	Budget     *JudgeBudget // nil when the block has none
	Pos        Pos
}

// Predicate is one predicate of a judge step.
type Predicate struct {
	ID        string
	Type      string // PredicateDeterministic, PredicateVerified or PredicateJudged
	Statement string
	// AppliedGate is the confidence (1–10) below which a "met" verdict
	// counts as ambiguous; DefaultAppliedGate when not written.
	AppliedGate int
	// Expr is the compiled statement of a deterministic predicate (kind
	// ExprPredicate); nil for the other types.
	Expr *Expr
	// Raw is the predicate as written (extra keys included): what the
	// dispatch hands out and what a stratum_judge call must repeat.
	Raw map[string]any
	Pos Pos
}

// JudgeBudget caps one judge step: turns (invocations), dollars and wall
// clock. Zero values mean no cap.
type JudgeBudget struct {
	MaxTurns      int
	MaxDollars    float64
	MaxWallClockS float64
	// Raw is the budget as written (nil for none), as the dispatch hands it
	// out.
	Raw map[string]any
}

var (
	judgeFields = &fieldSet{
		what:     "a judge block",
		fields:   fields(Version02, "predicates", "stakes", "budget"),
		required: map[string][]string{Version01: {"predicates"}},
	}
	// The original's schema lets extra keys of a predicate or a judge
	// budget through: warnings here.
	predicateFields = &fieldSet{
		what:     "a predicate",
		lenient:  true,
		fields:   fields(Version02, "id", "type", "statement", "applied_gate"),
		required: map[string][]string{Version01: {"id", "type", "statement"}},
	}
	judgeBudgetFields = &fieldSet{
		what:    "a judge budget",
		lenient: true,
		fields:  fields(Version02, "max_turns", "max_dollars", "max_wall_clock_s"),
	}
	predicateTypes = []string{PredicateDeterministic, PredicateVerified, PredicateJudged}
	stakesValues   = []string{StakesCheap, StakesDefault, StakesParanoid}
)

// judge reads a step's `judge:` block (0.2+).
func (c *checker) judge(m *mapping, ipath, sp string) *Judge {
	jm, ok := c.object(m, "judge", ipath)
	if !ok {
		return nil
	}
	path := ipath + ".judge"
	c.checkFields(jm, judgeFields, path)
	j := &Judge{Pos: posOf(jm.node), Stakes: StakesDefault}
	if v, ok := c.enum(jm, "stakes", path, stakesValues); ok {
		j.Stakes = v
	}
	j.Budget = c.judgeBudget(jm, path)
	e, ok := jm.get("predicates")
	if !ok {
		return j
	}
	seq := resolve(e.val)
	if seq.Kind != yaml.SequenceNode {
		c.wrongType(jm, "predicates", path, "array")
		return j
	}
	if len(seq.Content) == 0 {
		jm.bad["predicates"] = true
		c.add(CodeEmptyValue, seq, path+".predicates", "[] should be non-empty", "A judge step needs at least one predicate.")
		return j
	}
	for i, n := range seq.Content {
		if p := c.predicate(n, fmt.Sprintf("%s.predicates.%d", path, i), sp+".judge.predicates."+strconv.Itoa(i)); p != nil {
			j.Predicates = append(j.Predicates, p)
		}
	}
	return j
}

// predicate reads one predicate; a deterministic one's statement is queued
// for compilation as an ExprPredicate.
func (c *checker) predicate(n *yaml.Node, path, spath string) *Predicate {
	pm := c.asMapping(n, path)
	if pm == nil {
		c.add(CodeWrongType, n, path, fmt.Sprintf("%s is not of type 'object'", reprNode(n)), "Each predicate is a mapping with id, type and statement.")
		return nil
	}
	c.checkFields(pm, predicateFields, path)
	p := &Predicate{Pos: posOf(n), AppliedGate: DefaultAppliedGate}
	p.Raw, _ = toAny(n).(map[string]any)
	p.ID, _ = c.name(pm, "id", path, false)
	p.Type, _ = c.enum(pm, "type", path, predicateTypes)
	p.Statement, _ = c.str(pm, "statement", path, false)
	if v, ok := c.integer(pm, "applied_gate", path, 1); ok {
		if v > 10 {
			c.add(CodeOutOfRange, pm.valNode("applied_gate"), path+".applied_gate", fmt.Sprintf("%d is greater than the maximum of 10", v), "Use a confidence between 1 and 10.")
		} else {
			p.AppliedGate = int(v)
		}
	}
	if p.Type == PredicateDeterministic && pm.has("statement") && !pm.bad["statement"] {
		c.compile(ExprPredicate, p.Statement, pm.valNode("statement"), spath+".statement", "predicate", func(x *Expr) { p.Expr = x })
	}
	return p
}

// judgeBudget reads a judge block's budget.
func (c *checker) judgeBudget(jm *mapping, path string) *JudgeBudget {
	bm, ok := c.object(jm, "budget", path)
	if !ok {
		return nil
	}
	bpath := path + ".budget"
	c.checkFields(bm, judgeBudgetFields, bpath)
	b := &JudgeBudget{}
	b.Raw, _ = toAny(bm.node).(map[string]any)
	if v, ok := c.integer(bm, "max_turns", bpath, 1); ok {
		b.MaxTurns = int(v)
	}
	if v, ok := c.number(bm, "max_dollars", bpath, 0); ok {
		b.MaxDollars = v
	}
	if v, ok := c.number(bm, "max_wall_clock_s", bpath, 0); ok {
		b.MaxWallClockS = v
	}
	return b
}

// judgeRules are the semantic rules of a judge step, stricter than the
// original's (which finds these problems only when the judge runs): cheap
// stakes decide deterministic predicates only, and predicate ids are
// distinct.
func (sc *stepCheck) judgeRules() {
	j := sc.s.Judge
	if j == nil {
		return
	}
	seen := map[string]bool{}
	pn := resolve(sc.m.valNode("judge"))
	var preds *yaml.Node
	for i := 0; pn != nil && i+1 < len(pn.Content); i += 2 {
		if pn.Content[i].Value == "predicates" {
			preds = resolve(pn.Content[i+1])
		}
	}
	for i, p := range j.Predicates {
		var at *yaml.Node
		if preds != nil && i < len(preds.Content) {
			at = preds.Content[i]
		}
		ppath := fmt.Sprintf("%s.judge.predicates.%d", sc.sp, i)
		if p.ID != "" && seen[p.ID] {
			sc.c.add(CodeJudgePredicate, at, ppath+".id", fmt.Sprintf("%s: predicate id '%s' is used twice", sc.label, p.ID),
				"Give each predicate of a judge step its own id: verdicts and evidence are reported by id.")
		}
		seen[p.ID] = true
		if j.Stakes == StakesCheap && p.Type != "" && p.Type != PredicateDeterministic {
			sc.c.add(CodeJudgePredicate, at, ppath+".type",
				fmt.Sprintf("%s: 'cheap' stakes rejects non-deterministic predicates: '%s' is %s", sc.label, p.ID, p.Type),
				"Cheap stakes run no model: use stakes: default, or make the predicate deterministic.")
		}
	}
}
