package e2e

import (
	"encoding/json"
	"errors"
	"time"
)

// GateDecidedAt reads the output of `stratum query flow ID` and returns when
// the flow's first gate was decided: the gate record's time, taken by the
// deciding process before its commit. Latency tests measure from it.
func GateDecidedAt(queryFlow []byte) (time.Time, error) {
	var q struct {
		Records []struct {
			Type string    `json:"type"`
			At   time.Time `json:"at"`
		} `json:"records"`
	}
	if err := json.Unmarshal(queryFlow, &q); err != nil {
		return time.Time{}, err
	}
	for _, r := range q.Records {
		if r.Type == "gate" {
			return r.At, nil
		}
	}
	return time.Time{}, errors.New("the flow has no gate record")
}
