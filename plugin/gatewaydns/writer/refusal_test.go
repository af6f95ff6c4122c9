package writer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A refusal is etcd answering "no" for a reason of its own, told apart from a failure to reach
// it (which reachability covers) and from what ends a term; a refusal of some keys only is a
// name's failure, not a refusal of the writes as a whole. Errors come as the client gives them:
// rpctypes.Error of the gRPC status, wrapped by the writer's context.
func TestRefusalsAreToldApartFromFailuresToReach(t *testing.T) {
	wrapped := func(err error) error { return fmt.Errorf("commit: %w", rpctypes.Error(err)) }
	for _, tc := range []struct {
		name  string
		err   error
		cause string // "" for no refusal
		all   bool   // a refusal of the writes as a whole
	}{
		{"a full database (NOSPACE)", wrapped(rpctypes.ErrGRPCNoSpace), CauseNoSpace, true},
		{"too many requests", wrapped(rpctypes.ErrGRPCRequestTooManyRequests), CauseTooManyRequests, true},
		{"a CORRUPT alarm", wrapped(rpctypes.ErrGRPCCorrupt), CauseCorrupt, true},
		{"a permission: some keys", wrapped(rpctypes.ErrGRPCPermissionDenied), CausePermissionDenied, false},
		{"a request too large: some keys", wrapped(rpctypes.ErrGRPCRequestTooLarge), CauseTooLarge, false},
		{"another answer of etcd's", wrapped(rpctypes.ErrGRPCInvalidAuthMgmt), CauseOther, true},
		{"etcd unreachable", wrapped(status.Error(codes.Unavailable, "connection refused")), "", false},
		{"no answer in time", context.DeadlineExceeded, "", false},
		{"no leader", wrapped(rpctypes.ErrGRPCNoLeader), "", false},
		{"the writer stopping", context.Canceled, "", false},
		{"a deposed leader", ErrNotLeader, "", false},
		{"keys changed since they were read", errStale, "", false},
		{"a watch's history compacted", wrapped(rpctypes.ErrGRPCCompacted), "", false},
		{"a revision etcd has not reached", wrapped(rpctypes.ErrGRPCFutureRev), "", false},
		{"the records' lease gone", wrapped(rpctypes.ErrGRPCLeaseNotFound), "", false},
		{"no error", nil, "", false},
		{"not etcd's", errors.New("something else"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cause, refused := refusalOf(tc.err)
			if cause != tc.cause || refused != (tc.cause != "") {
				t.Errorf("refusalOf(%v) = %q, %v; want %q", tc.err, cause, refused, tc.cause)
			}
			if _, all := refusedAll(tc.err); all != tc.all {
				t.Errorf("refusedAll(%v) = %v, want %v", tc.err, all, tc.all)
			}
		})
	}
}
