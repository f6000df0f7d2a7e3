package engine

import "time"

// StampPut sets the three stamps a store owns on a state it is putting
// (Tx.Put): UpdatedAt is now; a zero CreatedAt becomes the stored flow's
// (old, nil for a new flow), else now; Version is the one this transaction
// already gave the flow (inTx, when the flow was put before in it), else
// one past the larger of the stored version and the state's own, so
// versions only grow whoever wrote last. Every store applies this one rule.
func StampPut(st *FlowState, old *FlowSummary, now time.Time, inTx int64, putBefore bool) {
	st.UpdatedAt = now
	if st.CreatedAt.IsZero() {
		st.CreatedAt = now
		if old != nil && !old.CreatedAt.IsZero() {
			st.CreatedAt = old.CreatedAt
		}
	}
	if putBefore {
		st.Version = inTx
		return
	}
	if old != nil && old.Version > st.Version {
		st.Version = old.Version
	}
	st.Version++
}
