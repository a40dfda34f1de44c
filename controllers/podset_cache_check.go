package controllers

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
)

// While a PodSet watch is down (podcache.WatchGaps) the cached PodSet may be
// older than the API server's: a spec the user changed in the gap (replicas,
// template, paused), or its deletion. Acting on the cached copy would go on
// scaling to the replicas it had, or rolling to the template it had, until
// the relist. So the first reconcile of each PodSet after each failure reads
// it from the API server (one read per PodSet reconciled in the gap, as the
// pod cache check costs one list), and every reconcile acts on what was read
// until the cache has caught up with it: going back to the stale copy at the
// next pod event would undo what the first one did. The PodSet's record
// keeps the failures it was last read after, and what was read until the
// cache has it.

// readPodSetWhileItsWatchIsDown makes the reconcile act on the API server's
// PodSet rather than the cached one: read once per PodSet watch failure, and
// kept until the cache has caught up. Otherwise it costs nothing.
func (r *PodSetReconciler) readPodSetWhileItsWatchIsDown(ctx context.Context, s *podSetScope) error {
	rec := s.record
	if read, ok := rec.podSetRead.NewerThan(s.podSet.ResourceVersion); ok {
		r.actOn(s, read.DeepCopy())
	}
	failures := r.WatchGaps.PodSetFailures()
	if failures == 0 || rec.podSetReadAfter >= failures {
		return nil
	}
	fresh, err := r.readPodSet(ctx, s)
	if err != nil {
		return err
	}
	rec.podSetReadAfter = max(rec.podSetReadAfter, failures)
	rec.podSetRead.Hold(fresh.ResourceVersion, fresh.DeepCopy())
	r.actOn(s, fresh)
	return nil
}

// actOn makes ps, read from the API server, the PodSet of the reconcile; a
// status the operator wrote since is the base of its next one.
func (r *PodSetReconciler) actOn(s *podSetScope, ps *appv1alpha1.PodSet) {
	s.record.restoreWrittenStatus(ps)
	s.podSet = ps
}

// errNotOnServer ends a reconcile: the API server has no PodSet of the
// cached one's UID (deleted, or replaced by a namesake). The cached copy is
// stale, and nothing more is written from it: not pods, nor a status, which
// would land on the namesake (a status patch names the PodSet, not its
// UID). The PodSet's deletion event, or its namesake's, brings what comes
// next (see StalePodSetRecheckInterval).
var errNotOnServer = errors.New("the PodSet is no longer on the API server")

// readPodSet reads the scope's PodSet from the API server, or returns
// errNotOnServer.
func (r *PodSetReconciler) readPodSet(ctx context.Context, s *podSetScope) (*appv1alpha1.PodSet, error) {
	fresh := &appv1alpha1.PodSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.podSet), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errNotOnServer
		}
		return nil, fmt.Errorf("reading the PodSet from the API server: %w", err)
	}
	if fresh.UID != s.podSet.UID {
		return nil, errNotOnServer
	}
	return fresh, nil
}
