package state

import "time"

// Stamp sets the stamps of a write of st at now, the one rule for them:
// UpdatedAt is now, CreatedAt now when zero (a flow read from the store
// keeps its own), and Version one past the version st carries — the
// version it was read at, engine.NotStored for a new flow. It returns that
// version: the one engine.Tx.Put must find stored. The engine.Service stamps each flow
// a transition writes once, before its write transaction (so a store that
// runs the transaction's function again writes the same stamps); stores
// never stamp.
func (st *FlowState) Stamp(now time.Time) (expect int64) {
	now = now.Round(0)
	expect = st.Version
	st.UpdatedAt = now
	if st.CreatedAt.IsZero() {
		st.CreatedAt = now
	}
	st.Version++
	return expect
}
