package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/analysis"
	"github.com/example/podset-operator/controllers/consistency"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/leaderfence"
	"github.com/example/podset-operator/controllers/podcache"
	"github.com/example/podset-operator/controllers/podwrites"
	"github.com/example/podset-operator/controllers/retreat"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/rolloutstate"
	"github.com/example/podset-operator/controllers/slimpod"
	"github.com/example/podset-operator/controllers/status"
	"github.com/example/podset-operator/controllers/wakeups"
)

// DefaultMaxConcurrentReconciles is the default of --max-concurrent-reconciles.
// A reconcile spends nearly all its time waiting for the API server (a pod
// create, a status patch), not computing, so the workers bound how many
// PodSets wait for it at once. With the ReplicaSet controller's 5, a
// thousand PodSets created together queued a median 8 s for a worker before
// their first pod (docs/architecture.md, "Workers"); 16 cut the time to create all
// their pods by a quarter, with the API server's CPU as the bound. A PodSet
// is never reconciled by two workers at once, whatever the count.
const DefaultMaxConcurrentReconciles = 16

// PodSetReconciler keeps each PodSet's pods at spec.replicas and reports what
// it observes.
type PodSetReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	client.Client
	// APIReader reads from the API server directly, for the few decisions a
	// stale cache must not make (adoption).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Expectations is shared with the pod event handler.
	Expectations *consistency.Expectations
	// Pods finds the PodSet's pods in the manager's cache; it must be the
	// PodIndex given to CacheOptions.
	Pods *podcache.PodIndex
	// WatchGaps tells while the pod or PodSet watches are down (nil: never);
	// it must be the WatchGaps given to CacheOptions.
	WatchGaps *podcache.WatchGaps
	// DefaultImage is the operand image of PodSets that name none.
	DefaultImage string
	// ResizeRules are what the API server allows of an in-place resize
	// (inplace.ServerRulesOf); the zero value, the newest Kubernetes's.
	ResizeRules inplace.ServerRules
	// BurstReplicas caps the pods created or deleted per reconcile;
	// DefaultBurstReplicas when 0.
	BurstReplicas int
	// MaxConcurrentReconciles is how many PodSets are reconciled at once;
	// DefaultMaxConcurrentReconciles when 0.
	MaxConcurrentReconciles int
	// StatusWriteInterval is the shortest time between two status writes
	// of a PodSet that is still converging; 0 writes every change.
	StatusWriteInterval time.Duration
	// PodEventBatchPeriod is how long a pod event waits before it queues
	// its PodSet, so that a burst of events brings one reconcile; 0 queues
	// at once.
	PodEventBatchPeriod time.Duration
	// Fence, when set, stops a leader that was paused from acting until it
	// has renewed its lease (see leaderfence.Fence).
	Fence *leaderfence.Fence
	// PodsREST sends the pod deletes, so that each returns the version of
	// its deletion (podwrites.NewPodsREST, APIPodControl.Pods); when nil
	// they go through Client and return none.
	PodsREST rest.Interface

	// podWrites, when set, creates and deletes the pods instead of Client
	// and Fence: a unit test's stand-in for the API server's answers,
	// which asks no fence unless it wraps podwrites.APIPodControl.
	podWrites podwrites.PodControl
	// records holds what the reconciler remembers about each PodSet
	// (podset_record.go).
	records *podSetRecords
	// wakeUps queues the PodSets that no watch event will bring.
	wakeUps       *wakeups.Queue
	podWriteSlots podwrites.Slots
	// background sends the deletes of steps that only delete, without
	// holding a worker; nil sends them all in the reconcile.
	background *podwrites.Background

	// AnalysisQuerier is the Prometheus that canary analyses query; nil
	// when none is configured, and an analysis step then holds the
	// rollout, saying so.
	AnalysisQuerier analysis.Querier
	// AnalysisQuerySlots is how many analysis queries are sent at once
	// (analysis.Runner); DefaultAnalysisQuerySlots when 0.
	AnalysisQuerySlots int
	// AnalysisNamespaceLabel is the label of a series' namespace, which
	// every query is confined by; DefaultAnalysisNamespaceLabel when "".
	AnalysisNamespaceLabel string
	// analysisRunner takes the measurements off the workers.
	analysisRunner *analysis.Runner
}

// DefaultAnalysisQuerySlots is the default of AnalysisQuerySlots.
const DefaultAnalysisQuerySlots = 4

// podSetScope is what one reconcile of one PodSet knows and has done.
type podSetScope struct {
	podSet *appv1alpha1.PodSet
	// record is what the reconciler remembers about the PodSet.
	record *podSetRecord
	// key is the PodSet's key in the expectations.
	key string
	// expectationsWait is how long the PodSet's earlier writes may still be
	// waited for; 0 means it may act. It is read before the pods are listed:
	// an event observed after the list would otherwise count as seen in a
	// list that lacks it.
	expectationsWait time.Duration
	// pods are the pods the PodSet controls and whose labels match, terminating
	// and terminated ones included.
	pods []*slimpod.Pod
	// listedPodNames is status.podNames as the reconcile found it, before
	// it writes a new status: the live pods of the last status written.
	listedPodNames []string
	// liveConfirmed, once set, is what this reconcile's read before
	// adopting found (confirmLive): whether the PodSet may adopt pods and
	// revisions. It saves the second read when both need it.
	liveConfirmed *bool
	// revisions are the PodSet's pod template revisions.
	revisions revision.State
	// rollout is where the rollout to revisions.Update stands
	// (observeRollout); nil when the update strategy does not resolve, and
	// rolloutErr says why.
	rollout    *rolloutstate.State
	rolloutErr error
	// firstRevision, when set, reports the create of a new PodSet's first
	// revision, issued beside its first pods (startFirstRevision).
	firstRevision <-chan error
	// outcome is what the scaling phase did, which the status reports.
	outcome status.Outcome
	// rollback is what auto-rollback decided, which the status reports
	// (auto_rollback.go), and rollbackCheckIn when it must judge the pods
	// again with no event to bring it (a wait reaching its grace period);
	// retried is the rollback that the user's retry ended, for its event.
	rollback        status.Rollback
	rollbackCheckIn time.Duration
	retried         *appv1alpha1.AutoRollbackStatus
	// canary is where the canary's steps stand, which the status reports
	// (canary_steps.go); canaryPartition the partition its current step
	// holds (nil: none), canaryFailure the failed analysis or abort that
	// auto-rollback retreats from, and canaryCheckIn when a measurement or
	// the end of a pause is due with no event to bring it.
	canary          *status.Canary
	canaryPartition *int
	canaryFailure   *retreat.Failure
	canaryCheckIn   time.Duration
}

// cluster is what decides, for every PodSet alike, which template changes
// a pod can take in place.
func (r *PodSetReconciler) cluster() rolloutstate.Cluster {
	return rolloutstate.Cluster{DefaultImage: r.DefaultImage, ResizeRules: r.ResizeRules}
}

// observeRollout computes where the PodSet's rollout stands (s.rollout),
// for the pods and the revisions the reconcile acts on: once they are
// known, and again when either changes (a rollback points the rollout at
// another revision, or the pods are read from the API server instead).
// A strategy that does not resolve leaves it nil, and rolloutErr says why.
func (r *PodSetReconciler) observeRollout(_ context.Context, s *podSetScope) error {
	st, err := rolloutstate.Of(s.podSet, &s.revisions, r.cluster(), s.pods, time.Now())
	s.rollout, s.rolloutErr = nil, err
	if err == nil {
		st.Input.UnavailableBeforeNamed = s.record.unavailableBeforeNamed(s.podSet, &st)
		s.rollout = &st
		s.holdCanaryPartition()
	}
	return nil
}

// holdCanaryPartition raises the rollout's partition to the one the
// canary's current step holds (advanceCanary), unless the rollout moves
// the pods to a revision other than the spec's (auto-rollback), where no
// step applies. It only ever keeps more pods than the spec's partition.
func (s *podSetScope) holdCanaryPartition() {
	if s.rollout == nil || s.canaryPartition == nil || s.revisions.RollingBack {
		return
	}
	st := &s.rollout.Input.Strategy
	st.Partition = max(st.Partition, *s.canaryPartition)
}

// rolloutComplete reports whether the rollout to the update revision has
// nothing left to do (rolloutstate.State.Complete); false when its strategy
// does not resolve.
func (s *podSetScope) rolloutComplete() bool {
	return s.rollout != nil && s.rollout.Complete() && (s.canary == nil || s.canary.Done)
}

// podControl is how the reconciler creates and deletes pods: podWrites
// when set, else the API server through Client, under the Fence.
func (r *PodSetReconciler) podControl() podwrites.PodControl {
	if r.podWrites != nil {
		return r.podWrites
	}
	return podwrites.APIPodControl{Client: r.Client, Pods: r.PodsREST, Fence: r.Fence}
}

// maxEventNote is the longest note the events.k8s.io API accepts.
const maxEventNote = 1024

// eventNote cuts a note to what the API accepts: a long admission webhook
// denial would otherwise make the event itself fail.
func eventNote(note string) string {
	return status.Truncate(note, maxEventNote)
}
