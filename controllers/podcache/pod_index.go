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
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

// podSetIndex is the index of the pod informers: it maps a pod to
// "namespace/name" of each PodSet it may belong to (operand.PodSetNames), the
// one that controls it and the one its label names, so that one lookup finds
// the pods a PodSet owns and the orphans it may adopt. Looking a PodSet's pods
// up through it costs what the PodSet owns, not what the namespace holds:
// with a thousand PodSets in one namespace, a label-filtered list would scan
// every pod on every reconcile. The namespace is part of the key because a
// pod's references are whatever its author wrote: a pod in another namespace
// naming the PodSet must not count as its.
const podSetIndex = "podset.names"

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
// reconciler's index and are remembered; any other kind is built as
// controller-runtime builds it by default.
//
// Pod informers go without controller-runtime's namespace index: it serves
// only lists through the cache, and the manager's client reads no pods from
// it (ClientOptions); kept, it would hold every cached pod's key once more.
func (x *PodIndex) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, isPod := obj.(*corev1.Pod); !isPod {
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	all := toolscache.Indexers{podSetIndex: indexPodByPodSet}
	for name, fn := range indexers {
		if name != toolscache.NamespaceIndex {
			all[name] = fn
		}
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

// Candidates returns the cached pods of namespace that are controlled by the
// PodSet uid (through a controller reference that names the PodSet, as
// SetControllerReference writes it) or carry the PodSet label name. The
// pods are the cache's own objects: callers must not modify them (adoptPods
// and releasePod copy first).
func (x *PodIndex) Candidates(namespace, name string, uid types.UID) ([]*slimpod.Pod, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.indexers) == 0 {
		return nil, errPodCacheNotStarted
	}
	var pods []*slimpod.Pod
	for _, indexer := range x.indexers {
		objs, err := indexer.ByIndex(podSetIndex, namespace+"/"+name)
		if err != nil {
			return nil, err
		}
		if pods == nil {
			pods = make([]*slimpod.Pod, 0, len(objs))
		}
		for _, obj := range objs {
			pod, ok := slimpod.Of(obj)
			if !ok {
				continue
			}
			// The index has the pods of the PodSet's name: a pod
			// controlled by a namesake deleted before it, and no longer
			// labelled for the name, is not a candidate.
			if ref := metav1.GetControllerOfNoCopy(pod); (ref != nil && ref.UID == uid) || pod.Labels[appv1alpha1.LabelPodSet] == name {
				pods = append(pods, pod)
			}
		}
	}
	return pods, nil
}

func indexPodByPodSet(obj any) ([]string, error) {
	pod, ok := slimpod.Of(obj)
	if !ok {
		return nil, nil
	}
	names := operand.PodSetNames(pod)
	for i, name := range names {
		names[i] = pod.Namespace + "/" + name
	}
	return names, nil
}
