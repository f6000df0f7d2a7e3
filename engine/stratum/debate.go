package stratum

import (
	"context"
	"fmt"
	"reflect"
)

// Turn is what a debating agent receives: the topic, the round (counted
// from 1) and, from round 2 on, the other agents' previous arguments in
// agent order.
type Turn[Topic, Arg any] struct {
	Topic  Topic
	Round  int
	Others []Arg
}

// Transcript is a finished debate: every round's arguments in agent order,
// and whether the final arguments agree.
type Transcript[Topic, Arg any] struct {
	Topic     Topic
	Rounds    [][]Arg
	Converged bool
}

// Debate is a debate between agents: Agents argue for Rounds rounds (default
// 2), concurrently within each round; Synthesize turns the transcript into
// the result. Converged is true when the final round's arguments are equal
// on their AgreeOn JSON field (the whole argument when AgreeOn is empty),
// compared as canonical JSON; an AgreeOn that is not a JSON field of Arg
// makes Run fail with a *CompileError before any agent runs.
type Debate[Topic, Arg, Out any] struct {
	Agents     []func(context.Context, Turn[Topic, Arg]) (Arg, error)
	Rounds     int
	AgreeOn    string
	Synthesize func(context.Context, Transcript[Topic, Arg]) (Out, error)
}

// DefaultRounds is a Debate's number of rounds when Rounds is 0.
const DefaultRounds = 2

// Run holds the debate on topic. An agent's error ends it (as All's do:
// the round's other agents are cancelled).
func (d Debate[Topic, Arg, Out]) Run(ctx context.Context, topic Topic) (Out, error) {
	var zero Out
	switch {
	case len(d.Agents) == 0:
		return zero, fmt.Errorf("%w: a debate needs at least one agent", ErrStratum)
	case d.Synthesize == nil:
		return zero, fmt.Errorf("%w: a debate needs Synthesize", ErrStratum)
	case d.Rounds < 0:
		return zero, fmt.Errorf("%w: a debate needs at least one round (Rounds %d)", ErrStratum, d.Rounds)
	}
	if d.AgreeOn != "" {
		schema, err := SchemaFor[Arg]()
		if err != nil {
			return zero, err
		}
		if err := checkAgreeOn(reflect.TypeFor[Arg](), schema, d.AgreeOn); err != nil {
			return zero, &CompileError{Message: "debate: " + err.Error()}
		}
	}
	rounds := d.Rounds
	if rounds == 0 {
		rounds = DefaultRounds
	}
	tr := Transcript[Topic, Arg]{Topic: topic}
	for r := 1; r <= rounds; r++ {
		var prev []Arg
		if r > 1 {
			prev = tr.Rounds[r-2]
		}
		branches := make([]Branch[Arg], len(d.Agents))
		for i, agent := range d.Agents {
			turn := Turn[Topic, Arg]{Topic: topic, Round: r}
			if prev != nil {
				for j, a := range prev {
					if j != i {
						turn.Others = append(turn.Others, a)
					}
				}
			}
			branches[i] = func(ctx context.Context) (Arg, error) {
				if agent == nil {
					var z Arg
					return z, fmt.Errorf("%w: debate agent %d is nil", ErrStratum, i)
				}
				return agent(ctx, turn)
			}
		}
		args, err := All(ctx, branches...)
		if err != nil {
			return zero, fmt.Errorf("debate round %d: %w", r, err)
		}
		tr.Rounds = append(tr.Rounds, args)
	}
	tr.Converged = agree(tr.Rounds[len(tr.Rounds)-1], d.AgreeOn)
	return d.Synthesize(ctx, tr)
}

// agree reports whether every argument has the same agreement key.
func agree[Arg any](args []Arg, field string) bool {
	for _, a := range args[1:] {
		if agreementKey(a, field) != agreementKey(args[0], field) {
			return false
		}
	}
	return true
}
