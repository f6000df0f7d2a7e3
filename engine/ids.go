package engine

import (
	"context"
	"errors"
	"sort"
	"strings"
)

// minFlowIDPrefix is the shortest prefix of a flow id ResolveFlowID
// accepts, as git and docker do with short ids.
const minFlowIDPrefix = 4

// uuidLen is the length of the flow ids NewUUID makes.
const uuidLen = 36

// maxCandidatesInMessage bounds the ids an ambiguous_flow_id message lists
// (Candidates holds every one).
const maxCandidatesInMessage = 10

// ResolveFlowID turns what a person or an agent typed — a whole flow id or
// any unique prefix of at least minFlowIDPrefix characters — into the flow
// id, so every id a front end shows works everywhere. A whole UUID is taken
// as is without reading the store; a shorter id that exists as given
// resolves without listing it. Otherwise:
//
//   - a prefix no flow id starts with, or one shorter than minFlowIDPrefix,
//     is the *Error flow_not_found every Service method answers for an
//     unknown id (same message);
//   - a prefix several flow ids start with is the *Error ambiguous_flow_id,
//     its Candidates the matching ids, sorted.
//
// Any other error is the store's. Front ends (main.go's commands, the MCP
// tools, `stratum run --resume`) call it before the Service.
func (q Query) ResolveFlowID(ctx context.Context, idOrPrefix string) (string, error) {
	if !plausibleFlowID(idOrPrefix) {
		return "", flowNotFound(idOrPrefix)
	}
	if len(idOrPrefix) >= uuidLen {
		// A whole id (every id stratum makes is a UUID): no other id can
		// start with it, so it is taken as is without reading the store —
		// the Service answers flow_not_found itself when there is none.
		// This keeps the hot path of every MCP call at one store read.
		return idOrPrefix, nil
	}
	var matches []string
	err := q.s.Store.View(ctx, func(tx Tx) error {
		matches = nil
		if _, err := tx.Get(idOrPrefix); err == nil {
			matches = []string{idOrPrefix}
			return nil
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		if len(idOrPrefix) < minFlowIDPrefix {
			return nil
		}
		list, err := q.s.listing(tx.List(ListFilter{}))
		if err != nil {
			return err
		}
		for _, sum := range list {
			if strings.HasPrefix(sum.FlowID, idOrPrefix) {
				matches = append(matches, sum.FlowID)
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	switch len(matches) {
	case 0:
		return "", flowNotFound(idOrPrefix)
	case 1:
		return matches[0], nil
	}
	sort.Strings(matches)
	return "", ambiguousFlowID(idOrPrefix, matches)
}

func ambiguousFlowID(prefix string, candidates []string) *Error {
	shown := candidates
	more := ""
	if len(shown) > maxCandidatesInMessage {
		shown = shown[:maxCandidatesInMessage]
		more = ", …"
	}
	e := refusal(ErrTypeAmbiguousFlowID, "Flow id prefix '%s' is ambiguous: it matches %d flows (%s%s); give more characters",
		prefix, len(candidates), strings.Join(shown, ", "), more)
	e.Candidates = candidates
	return e
}
