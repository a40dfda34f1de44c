package controllers

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// TransientRetryAfter is when a reconcile that failed only because the API
// server could not be reached, or answered that it is overloaded or
// unavailable, is tried again.
//
// Such a failure says nothing about the PodSet, and the controller's
// exponential backoff is made for failures that do (a quota that refuses
// pods): during an API server restart of 20 s, a PodSet fails its retries
// every few milliseconds, then seconds, and its next retry lands tens of
// seconds after the server is back. No event wakes it earlier: after a
// relist, unchanged pods bring no event. The fault matrix saw PodSets wait
// minutes that way. Retrying at a fixed, short interval costs one refused
// connection per PodSet per interval while the server is away.
const TransientRetryAfter = 2 * time.Second

// isTransient reports whether every error in err comes from the API server
// being unreachable, restarting, overloaded or timing out, not from what was
// asked of it.
func isTransient(err error) bool {
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
			if e != nil && !isTransient(e) {
				return false
			}
		}
		return true
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsTimeout(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err)
}

// mayHaveReachedServer reports whether a failed write may still have been
// carried out: the connection broke or the request timed out after it was
// sent. A refused connection, or an answer from the API server, says it was
// not.
func mayHaveReachedServer(err error) bool {
	return utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}
