package engine

import (
	"errors"

	"github.com/stratum-go/stratum/engine/state"
)

// Damaged flow records (ports.go, DamagedError): a flow whose stored state
// or summary cannot be decoded must not stop everything else. Sweeps skip
// it, listings leave it out (List, PendingGates, PendingGateSteps,
// PendingReviews, ResolveFlowID's prefix search), and each is reported once
// per Service through OnDamaged. Reading or changing that flow by id still
// fails with the *DamagedError.

// skipDamaged reports each damaged flow err is made of and returns nil when
// err holds nothing else; any other error is returned as is.
func (s *Service) skipDamaged(err error) error {
	ds, ok := DamagedFlows(err)
	if !ok {
		return err
	}
	for _, d := range ds {
		s.noteDamaged(d)
	}
	return nil
}

// noteDamagedErr reports the damaged flow in err's chain, if any, and says
// whether there was one.
func (s *Service) noteDamagedErr(err error) bool {
	var d *DamagedError
	if !errors.As(err, &d) {
		return false
	}
	s.noteDamaged(d)
	return true
}

// noteDamaged remembers d's flow as damaged and tells OnDamaged the first
// time.
func (s *Service) noteDamaged(d *DamagedError) {
	s.mu.Lock()
	first := !s.damaged[d.FlowID]
	if first {
		if s.damaged == nil {
			s.damaged = map[string]bool{}
		}
		s.damaged[d.FlowID] = true
	}
	report := s.OnDamaged
	s.mu.Unlock()
	if first && report != nil {
		report(d)
	}
}

// withoutDamaged leaves out of sums the flows known to be damaged (whose
// summary reads but whose state does not).
func (s *Service) withoutDamaged(sums []state.FlowSummary) []state.FlowSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.damaged) == 0 {
		return sums
	}
	out := sums[:0:0]
	for _, sum := range sums {
		if !s.damaged[sum.FlowID] {
			out = append(out, sum)
		}
	}
	return out
}

// DamagedFlowIDs returns the flows found damaged so far by this Service.
func (q Query) DamagedFlowIDs() []string {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	return sortedKeys(q.s.damaged)
}
