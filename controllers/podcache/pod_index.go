package podcache

import (
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/slimpod"
)

// Indexes of the pod informers. Looking a PodSet's pods up through them costs
// what the PodSet owns, not what the namespace holds: with a thousand PodSets
// in one namespace, a label-filtered list would scan every pod on every
// reconcile.
const (
	// podControllerUIDIndex maps a pod to "namespace/UID" of its
	// controller. The namespace is part of the key because a pod's
	// ownerReference is whatever its author wrote: a pod in another
	// namespace naming a PodSet's UID must not count as that PodSet's.
	podControllerUIDIndex = "podset.controllerUID"
	// podSetLabelIndex maps a pod to "namespace/name" of the PodSet its
	// LabelPodSet label names, which is how orphans are found for adoption.
	podSetLabelIndex = "podset.label"
)

// errPodCacheNotStarted is returned before the manager has created its pod
// informer; the reconcile is retried.
var errPodCacheNotStarted = errors.New("the pod cache has not started yet")

// PodIndex gives the reconciler the manager's cached pods by controller and
// by PodSet label, without copying them.
//
// The manager's client can list through field indexes too, but every List
// copies each cached pod by value into the result list (a PodSpec is about a
// kilobyte even when empty). With a thousand pods per PodSet, those copies
// were three quarters of everything the operator allocated in the
// benchmark's memory scenario, and most of its garbage-collection work. The
// informers' own indexers hand out the cached pointers instead.
//
// It gets hold of the indexers by building the manager's pod informers
// itself (cache.Options.NewInformer, see CacheOptions): one informer when all
// namespaces are watched, one per namespace otherwise.
type PodIndex struct {
	mu       sync.RWMutex
	indexers []toolscache.Indexer
}

// NewPodIndex returns an empty index; CacheOptions wires it to the manager's
// pod informers.
func NewPodIndex() *PodIndex { return &PodIndex{} }

// newInformer builds the manager's informers: pod informers get the
// reconciler's indexes and are remembered; any other kind is built as
// controller-runtime builds it by default.
func (x *PodIndex) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, isPod := obj.(*corev1.Pod); !isPod {
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	all := toolscache.Indexers{
		podControllerUIDIndex: indexPodByControllerUID,
		podSetLabelIndex:      indexPodByPodSetLabel,
	}
	for name, fn := range indexers {
		all[name] = fn
	}
	informer := toolscache.NewSharedIndexInformer(lw, obj, resync, all)
	x.add(informer.GetIndexer())
	return informer
}

func (x *PodIndex) add(indexer toolscache.Indexer) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.indexers = append(x.indexers, indexer)
}

// candidates returns the cached pods of namespace that are controlled by the
// PodSet uid or carry the PodSet label name, each once. The pods are the
// cache's own objects: callers must not modify them (adoptPods and
// releasePod copy first).
func (x *PodIndex) Candidates(namespace, name string, uid types.UID) ([]*slimpod.Pod, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.indexers) == 0 {
		return nil, errPodCacheNotStarted
	}
	var pods []*slimpod.Pod
	for _, indexer := range x.indexers {
		owned, err := indexer.ByIndex(podControllerUIDIndex, namespace+"/"+string(uid))
		if err != nil {
			return nil, err
		}
		labelled, err := indexer.ByIndex(podSetLabelIndex, namespace+"/"+name)
		if err != nil {
			return nil, err
		}
		if pods == nil {
			pods = make([]*slimpod.Pod, 0, len(owned)+len(labelled))
		}
		// The two lookups are not one snapshot: a pod adopted or released
		// between them is in both, once with each controller. Deduplicating
		// by UID keeps exactly one version of it, and keeps a pod adopted
		// in between, which the second lookup alone shows.
		seen := make(map[types.UID]struct{}, len(owned))
		for _, obj := range owned {
			if pod, ok := slimpod.Of(obj); ok {
				seen[pod.UID] = struct{}{}
				pods = append(pods, pod)
			}
		}
		for _, obj := range labelled {
			if pod, ok := slimpod.Of(obj); ok {
				if _, dup := seen[pod.UID]; !dup {
					pods = append(pods, pod)
				}
			}
		}
	}
	return pods, nil
}

func indexPodByControllerUID(obj any) ([]string, error) {
	pod, ok := slimpod.Of(obj)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		return []string{pod.Namespace + "/" + string(ref.UID)}, nil
	}
	return nil, nil
}

func indexPodByPodSetLabel(obj any) ([]string, error) {
	pod, ok := slimpod.Of(obj)
	if !ok {
		return nil, nil
	}
	if name, ok := pod.Labels[appv1alpha1.LabelPodSet]; ok {
		return []string{pod.Namespace + "/" + name}, nil
	}
	return nil, nil
}
