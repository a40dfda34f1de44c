package controllers

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/podcache"
	"github.com/example/podset-operator/controllers/slimpod"
)

// podIndexWith is a pod index over informers whose stores hold pods, one
// informer per list (a namespace each, when the cache watches a list), as
// the cache's transform leaves them: slim.
func podIndexWith(t *testing.T, stores ...[]*corev1.Pod) *podcache.PodIndex {
	t.Helper()
	x := podcache.NewPodIndex()
	for _, pods := range stores {
		informer := x.NewInformer(&toolscache.ListWatch{}, &corev1.Pod{}, 0,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
		for _, pod := range pods {
			if err := informer.GetStore().Add(slimpod.From(pod)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return x
}

// brokenWatch makes gaps see a watch of obj's kind fail, through the
// lister-watcher an informer would be given, and returns a function that
// makes that watch deliver again (resumed from a resourceVersion).
func brokenWatch(gaps *podcache.WatchGaps, obj runtime.Object) (recovered func()) {
	refused := true
	lw := toolscache.ToListerWatcherWithContext(gaps.Wrap(obj, &toolscache.ListWatch{
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			if refused {
				return nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
			}
			return watch.NewFake(), nil
		},
	}))
	resumed := metav1.ListOptions{ResourceVersion: "1"}
	if _, err := lw.WatchWithContext(context.Background(), resumed); err == nil {
		panic("the broken watch did not fail")
	}
	return func() {
		refused = false
		w, err := lw.WatchWithContext(context.Background(), resumed)
		if err != nil {
			panic(err)
		}
		w.Stop()
	}
}

// brokenPodWatch makes r see its pod watch fail, and returns a function that
// makes it deliver again.
func brokenPodWatch(r *PodSetReconciler) (recovered func()) {
	if r.WatchGaps == nil {
		r.WatchGaps = podcache.NewWatchGaps()
	}
	return brokenWatch(r.WatchGaps, &corev1.Pod{})
}

// brokenPodSetWatch makes r see its PodSet watch fail.
func brokenPodSetWatch(r *PodSetReconciler) {
	if r.WatchGaps == nil {
		r.WatchGaps = podcache.NewWatchGaps()
	}
	brokenWatch(r.WatchGaps, &appv1alpha1.PodSet{})
}
