package podcache

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/metrics"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/retreat"
	"github.com/example/podset-operator/controllers/slimpod"
)

// CacheOptions is what the manager caches: PodSets, and only the pods that
// carry the app.example.com/podset label, each as a slimpod.Pod that holds only the
// parts of the pod the reconciler reads (see slimPod). The operator's memory
// then grows with its own pods, not with the rest of the cluster's, and by
// as little as possible per pod.
// The pod informers are built with the indexes of pods, which the
// reconciler reads through without copies.
// An empty namespaces list watches every namespace.
//
// The PodSet informers' stores go to podSets, the collector of the PodSet
// metrics (nil for none). The pod and PodSet informers report their watches'
// failures to gaps (nil for none).
func CacheOptions(namespaces []string, pods *PodIndex, podSets *metrics.PodSetCollector, gaps *WatchGaps) cache.Options {
	newInformer := func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		informer := pods.NewInformer(gaps.Wrap(obj, lw), obj, resync, indexers)
		if _, isPodSet := obj.(*appv1alpha1.PodSet); isPodSet && podSets != nil {
			podSets.AddStore(informer.GetStore())
		}
		return informer
	}
	templates := newSharedTemplates()
	// One table for the three kinds: a revision's owner reference is its
	// pods', and the three share namespaces.
	shared := newSharedValues(time.Now)
	opts := cache.Options{
		NewInformer:      newInformer,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: operand.ManagedSelector(), Transform: podTransform(shared)},
			// The PodSets' templates are kept encoded, and decoded in
			// the copy each read makes: never read them without copies
			// (UnsafeDisableDeepCopy) but for other fields.
			&appv1alpha1.PodSet{}: {Transform: podSetTransform(templates, shared)},
			// Only this operator's revisions, not every StatefulSet's
			// and DaemonSet's.
			&appsv1.ControllerRevision{}: {Label: operand.ManagedRevisionSelector(), Transform: revisionTransform(templates, shared)},
		},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// ClientOptions is what the manager's client reads from the cache: not
// pods. The cache holds *slimpod.Pod, so a read of a *corev1.Pod from it
// would fail ("cache had type *slimpod.Pod"); such a read goes to the API
// server instead. The reconciler reads pods through PodIndex, and the rare
// direct reads through the APIReader; a live read through the client is a
// request the benchmark's request table would show.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Pod{}}}}
}

// podSetTransform is the transform of cached PodSets. It drops
// managedFields (as for every cached object) and kubectl's
// last-applied-configuration annotation: kubectl apply and Argo CD's
// default (client-side) sync store the whole manifest there, so it holds
// the PodSet a second time; nothing of the operator reads it, and the
// operator writes PodSets only by patches of the fields it sets, so the
// annotation stays on the API server as it is.
//
// Its namespace and its conditions' types, statuses and reasons are
// shared with the other cached objects' (sharedValues.sharePodSet).
//
// It also keeps spec.template encoded (encodeTemplate): decoded, a
// chart-sized template is about four times its JSON, and one is cached for
// every PodSet, however many pods it has. Encoded, it is one copy with the
// data of the PodSet's revision (sharedTemplates). Reconcile decodes it again
// (RestoreTemplate) right after reading the PodSet; nothing else
// reads a cached PodSet's template. Everything else is kept
// (TestPodSetTransformKeepsEveryOtherField).
func podSetTransform(templates *sharedTemplates, shared *sharedValues) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		ps, ok := obj.(*appv1alpha1.PodSet)
		if !ok {
			return obj, nil
		}
		transformPodSet(ps, templates)
		shared.sharePodSet(ps)
		return ps, nil
	}
}

func transformPodSet(ps *appv1alpha1.PodSet, templates *sharedTemplates) {
	// Each write only when it changes something, as
	// cache.TransformStripManagedFields does: the cached object is read
	// concurrently once stored.
	if ps.ManagedFields != nil {
		ps.ManagedFields = nil
	}
	if _, ok := ps.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		delete(ps.Annotations, corev1.LastAppliedConfigAnnotation)
		if len(ps.Annotations) == 0 {
			ps.Annotations = nil
		}
	}
	encodeTemplate(ps, templates)
}

// revisionTransform is the transform of cached ControllerRevisions: it
// drops managedFields, as for every cached object, and makes the
// revision's data the shared deflated copy of those bytes, which the
// PodSets that run the revision hold too (encodeTemplate): Data.Object
// becomes a deflatedData, Data.Raw nil. revision.Decode reads either form,
// and the revision encodes to the same JSON. Its namespace, owner
// reference and label keys are shared with the other cached objects'
// (sharedValues.shareRevision).
func revisionTransform(templates *sharedTemplates, shared *sharedValues) toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		cr, ok := obj.(*appsv1.ControllerRevision)
		if err != nil || !ok {
			return obj, err
		}
		shared.shareRevision(cr)
		if len(cr.Data.Raw) >= minSharedTemplate {
			cr.Data = runtime.RawExtension{Object: &deflatedData{deflated: templates.share(cr.Data.Raw)}}
		}
		return cr, nil
	}
}

// podTransform is the transform of cached pods: slimPod, then the pod's
// common parts shared with the other cached pods (see sharedValues). The
// informer's store holds what it returns, a *slimpod.Pod.
func podTransform(shared *sharedValues) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			// A pod already slimmed (with WatchList, the reflector's
			// temporary store transforms the initial events and the
			// queue's Replace transforms them again) or a
			// cache.DeletedFinalStateUnknown tombstone: nothing to slim.
			return obj, nil
		}
		slim := slimPod(pod)
		shared.sharePod(slim, operand.HasInPlaceGate(slim))
		return slim, nil
	}
}

// slimPod is what the cache keeps of a pod: a slimpod.Pod, whose struct
// holds only what the reconciler reads (see package slimpod). It reads a
// pod's metadata, spec.nodeName (deletion ranking) and status (liveness,
// readiness, restart counts), never the rest of its spec: pods are created
// from the PodSet, not compared with it. Writes to a pod (adoption,
// release, revision label, in-place updates) are patches made from its
// metadata (slimpod.Pod.MetadataOnly).
//
// Of the status it keeps what operand.IsLive, operand.IsReady,
// operand.IsAvailable and the deletion ranking read: the phase, the Ready
// condition and each container's restart count. The rest (the other
// conditions, IPs, images, container IDs and states) is about a kilobyte per
// running pod.
//
// Pods that may be updated in place (they carry the in-place readiness
// gate) keep more of their status (see slimPodStatus) and the generation
// the kubelet observed.
//
// Pods without a revision label keep their containers: they were made before
// revisions existed (operator v0.1.0) or are orphans, and the reconciler
// compares their containers with the pod template once, to label them (see
// labelUnrevisionedPods). Once labelled, their next event slims them too.
func slimPod(pod *corev1.Pod) *slimpod.Pod {
	var containers []corev1.Container
	if _, labelled := pod.Labels[appv1alpha1.LabelRevisionHash]; !labelled {
		containers = pod.Spec.Containers
	}
	slim := &slimpod.Pod{
		ObjectMeta: pod.ObjectMeta,
		Spec:       slimpod.PodSpec{NodeName: pod.Spec.NodeName},
		Extra:      slimpod.NewExtra(pod.Spec.ReadinessGates, containers, 0),
	}
	slim.ManagedFields = nil
	inPlace := operand.HasInPlaceGate(slim)
	slim.Status = slimPodStatus(&pod.Status, inPlace)
	if inPlace {
		// Its gate is in slim.Extra.
		slim.Extra.ObservedGeneration = pod.Status.ObservedGeneration
	}
	return slim
}

// waitingReasons are the kubelet's reasons for a waiting container that
// the reconciler reads, each kept as one shared string rather than a copy
// per pod: those auto-rollback counts as a failure (taken from retreat, so
// that a trigger it adds is never dropped here), and the starts still under
// way or failing once.
var waitingReasons = map[string]string{}

func init() {
	for _, r := range append(retreat.WaitingReasons(), "ContainerCreating", "PodInitializing", "RunContainerError") {
		waitingReasons[r] = r
	}
}

// waitingReason is the part of a container's state the reconciler reads
// of a pod that is not updated in place: the reason it waits, if it does.
// Another reason is kept as "Waiting" (what kubectl shows for none).
func waitingReason(state corev1.ContainerState) corev1.ContainerState {
	if state.Waiting == nil {
		return corev1.ContainerState{}
	}
	reason, ok := waitingReasons[state.Waiting.Reason]
	if !ok {
		reason = "Waiting"
	}
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

// slimPodStatus is the part of a pod's status that the reconciler reads:
// its phase, readiness, and each container's restarts and waiting reason.
// A pod that may be updated in place (inPlace) also keeps what tells what
// its container was before an update and whether the kubelet has done it:
// its container's ID, state, readiness and resources, and the resize
// conditions.
func slimPodStatus(status *corev1.PodStatus, inPlace bool) slimpod.PodStatus {
	slim := slimpod.PodStatus{Phase: status.Phase}
	for _, c := range status.Conditions {
		switch {
		case c.Type == corev1.PodReady:
			slim.Conditions = append(slim.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
		case c.Type == appv1alpha1.PodConditionInPlaceUpdateReady:
			slim.Conditions = append(slim.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
		case inPlace && (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress):
			slim.Conditions = append(slim.Conditions, c)
		}
	}
	// Init containers (sidecars among them) first, as slimpod.From
	// keeps them.
	if statuses := slices.Concat(status.InitContainerStatuses, status.ContainerStatuses); len(statuses) > 0 {
		slim.ContainerStatuses = make([]corev1.ContainerStatus, len(statuses))
		for i, cs := range statuses {
			slim.ContainerStatuses[i] = corev1.ContainerStatus{Name: cs.Name, RestartCount: cs.RestartCount, State: waitingReason(cs.State)}
			if inPlace {
				slim.ContainerStatuses[i] = corev1.ContainerStatus{
					Name: cs.Name, RestartCount: cs.RestartCount, ContainerID: cs.ContainerID,
					State: cs.State, Ready: cs.Ready, Started: cs.Started, Resources: cs.Resources,
				}
			}
		}
	}
	return slim
}
