package judge

import "fmt"

// Error types (Error.Type), the original's exception class names, which
// stratum_judge answers as error_type.
const (
	ErrEmptyPredicates = "EmptyPredicateListError"
	ErrStakesMismatch  = "StakesPredicateMismatchError"
	ErrPredicatePath   = "PredicatePathError"
	ErrCitation        = "CitationFormatError"
	ErrBudget          = "BudgetExceededError"
	ErrStaging         = "StagingError"
	// ErrVerifierAnswer: a verifier's answer is not JSON, or does not fit
	// the verdict contract (ours: the original fails with a parse error).
	ErrVerifierAnswer = "VerifierAnswerError"
	ErrVerifier       = "VerifierError"
)

// Error is a judge turn that could not be decided: its Type names the
// problem (the Err constants) and Violations lists the details of a
// verifier's answer that broke the verdict contract.
type Error struct {
	Type       string
	Message    string
	Violations []string
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

func errorf(typ, format string, args ...any) *Error {
	return &Error{Type: typ, Message: fmt.Sprintf(format, args...)}
}
