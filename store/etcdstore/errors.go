package etcdstore

import (
	"context"
	"errors"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratum-go/stratum/engine"
)

// Error is a failure of the etcd store: one line naming the store (its
// endpoints and prefix, never credentials) and what to do.
type Error struct {
	Store string // etcd://HOST:PORT,…/PREFIX
	Msg   string
	Err   error // the cause, for errors.Is (context.DeadlineExceeded, engine.ErrConflict, …)
}

func (e *Error) Error() string { return "etcd store " + e.Store + ": " + e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// ErrUnavailable is wrapped by the errors of a cluster that did not answer
// in time (unreachable, or no quorum).
var ErrUnavailable = errors.New("etcd cluster unavailable")

// ErrAuth is wrapped by refused or expired credentials.
var ErrAuth = errors.New("etcd authentication failed")

// wrap turns an etcd client error into an *Error that says what to do.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	timeout := s.timeout.String()
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, rpctypes.ErrCompacted):
		return &Error{Store: s.String(), Msg: op + ": the snapshot this read needed was compacted meanwhile; retry", Err: err}
	case errors.Is(err, rpctypes.ErrNoSpace):
		return &Error{Store: s.String(), Msg: op + ": " + noSpaceMsg, Err: errors.Join(ErrNoSpace, err)}
	case errors.Is(err, rpctypes.ErrTooManyOps), errors.Is(err, rpctypes.ErrRequestTooLarge):
		return &Error{Store: s.String(), Msg: op + ": the transaction is larger than the cluster accepts (" + rpctypes.ErrorDesc(err) + "); raise --max-txn-ops / --max-request-bytes on the members", Err: err}
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrInvalidAuthToken),
		errors.Is(err, rpctypes.ErrAuthOldRevision), errors.Is(err, rpctypes.ErrUserEmpty),
		errors.Is(err, rpctypes.ErrAuthNotEnabled):
		return &Error{Store: s.String(), Msg: op + ": authentication refused or expired (" + rpctypes.ErrorDesc(err) + "); check STRATUM_ETCD_USER / STRATUM_ETCD_PASSWORD (or etcd: user/password in config.yaml)", Err: errors.Join(ErrAuth, err)}
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		return &Error{Store: s.String(), Msg: op + ": permission denied; the etcd user needs read/write on the prefix " + s.pfx, Err: errors.Join(ErrAuth, err)}
	case errors.Is(err, rpctypes.ErrNoLeader), errors.Is(err, rpctypes.ErrLeaderChanged), errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail),
		errors.Is(err, rpctypes.ErrTimeout), errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost):
		return &Error{Store: s.String(), Msg: op + ": the cluster has no leader (quorum lost or an election under way); check that a majority of the members are running, then retry", Err: errors.Join(ErrUnavailable, err)}
	case errors.Is(err, context.DeadlineExceeded), status.Code(err) == codes.DeadlineExceeded, status.Code(err) == codes.Unavailable:
		return &Error{Store: s.String(), Msg: op + ": no answer within " + timeout + " (members unreachable, TLS mismatch, or no quorum); check that a majority of the members are running and reachable from here, or raise store_timeout / STRATUM_STORE_TIMEOUT", Err: errors.Join(ErrUnavailable, context.DeadlineExceeded)}
	case errors.Is(err, engine.ErrConflict):
		return &Error{Store: s.String(), Msg: op + ": " + err.Error(), Err: err}
	}
	return &Error{Store: s.String(), Msg: op + ": " + oneLine(err.Error()), Err: err}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
