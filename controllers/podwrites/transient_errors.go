package podwrites

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/example/podset-operator/controllers/leaderfence"
)

// IsTransient reports whether every error in err comes from the API server
// being unreachable, restarting, overloaded or timing out, not from what was
// asked of it.
func IsTransient(err error) bool {
	return every(err, func(err error) bool {
		return isTransportError(err) ||
			apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
			apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err)
	})
}

// IsOwnerMappingLag reports whether every error in err is the refusal of
// the admission plugin OwnerReferencesPermissionEnforcement (on in
// OpenShift) to let a write set blockOwnerDeletion in an owner reference
// to a kind that its RESTMapper does not know yet: a PodSet made right
// after its CRD. The API server refreshes that mapper within about 30 s,
// and the same write then succeeds.
func IsOwnerMappingLag(err error) bool {
	// The reconciler aggregates what its phases returned, and an aggregate
	// hides its errors from errors.As: look inside one of a single error.
	var agg kerrors.Aggregate
	if errors.As(err, &agg) && len(agg.Errors()) == 1 {
		err = agg.Errors()[0]
	}
	return every(err, func(err error) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot set blockOwnerDeletion") &&
			strings.Contains(err.Error(), "cannot find RESTMapping")
	})
}

// every reports whether err is not nil and is holds for each of the
// errors it aggregates or joins (or for err itself when it holds one).
func every(err error, is func(error) bool) bool {
	if err == nil {
		return false
	}
	var errs []error
	var joined interface{ Unwrap() []error }
	var agg kerrors.Aggregate
	switch {
	case errors.As(err, &agg):
		errs = agg.Errors()
	case errors.As(err, &joined):
		errs = joined.Unwrap()
	}
	if len(errs) > 1 {
		for _, e := range errs {
			if e != nil && !every(e, is) {
				return false
			}
		}
		return true
	}
	return is(err)
}

// mayHaveReachedServer reports whether a failed write may still have been
// carried out. Only two kinds of failure say it was not: an answer from the
// API server that refuses it, and a connection that could not even be made.
// Every other transport failure leaves it open: the request may have been
// sent, and the pod made, before the connection broke, timed out, or was
// closed under it. The fault matrix found one that a list of known cases
// missed: a leader paused mid-batch resumed to "http2: client connection
// force closed via ClientConn.Close" for sixteen creates the API server had
// carried out; counted as failed, they were created again (62 pods for 50).
// The ReplicaSet controller counts only timeouts as made, and would.
//
// An internal error (500) of the API server leaves it open too: the API
// server answers 500 for a write whose etcd request failed in a way it
// cannot tell apart from a failure (etcd's "request timed out", a deadline
// while the proposal was in flight), and such a write may still be
// committed. A 1000-pod rollout on a loaded machine once created one pod
// more than it replaced, and this is one way it can; counted as made, the
// pod is waited for 3 s, then the cache is checked against the API server.
func MayHaveReachedServer(err error) bool {
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsInternalError(err) {
		return true
	}
	return isTransportError(err) && !neverSent(err)
}

// isTransportError reports whether err is a failure of the connection, not
// an answer of the API server: client-go wraps those in *url.Error.
func isTransportError(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false
	}
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || utilnet.IsProbableEOF(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err)
}

// neverSent reports whether a transport failure happened before the request
// left this process: no connection could be made, or the fence refused it.
func neverSent(err error) bool {
	// The fence refuses a write before it is sent (leaderfence.Fence.WrapTransport).
	if utilnet.IsConnectionRefused(err) || errors.Is(err, leaderfence.ErrFenced) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}
