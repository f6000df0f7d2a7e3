package engine

// Summarize refines a flow's list summary with what only the spec knows: the
// total number of steps and the id of the step at the cursor. It has the
// signature of the store's Options.Summarize hook, so the store's listings
// (which must not parse specs on every read) carry step k/n. A state whose
// spec no longer parses is left as the store summarised it.
func (s *Service) Summarize(st *FlowState, sum *FlowSummary) {
	sp, _ := s.parse(st.SpecFile, st.RawSpec)
	if sp == nil {
		return
	}
	fl := sp.Flows[st.FlowName]
	if fl == nil {
		return
	}
	sum.TotalSteps = len(fl.Order)
	if sum.CurrentStep == "" && st.CurrentIdx >= 0 && st.CurrentIdx < len(fl.Order) &&
		(st.Status == StatusRunning || st.Status == StatusAwaitingGate) {
		sum.CurrentStep = fl.Steps[fl.Order[st.CurrentIdx]].ID
	}
}
