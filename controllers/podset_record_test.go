package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/consistency"
)

// podCacheOf is what r remembers of the checks of ps's pod cache.
func podCacheOf(r *PodSetReconciler, ps *appv1alpha1.PodSet) *consistency.CacheCheck {
	return &r.records.of(ps).podCache
}

func TestPodSetRecords(t *testing.T) {
	web := unitPodSet(1)
	namesake := web.DeepCopy()
	namesake.UID = "uid-of-the-namesake"
	prefix := web.DeepCopy()
	prefix.Name = web.Name + "-2"
	prefix.UID = "uid-of-web-2"
	remembered := func(rec *podSetRecord) bool { return rec.statusPacing.Wait(time.Second, unitNow) > 0 }

	for _, tc := range []struct {
		name string
		// then changes the records after web's write.
		then func(rs *podSetRecords)
		// want: whether web's write is still remembered, and web-2's.
		wantWeb, wantPrefix bool
	}{
		{"kept from one reconcile to the next", func(*podSetRecords) {}, true, true},
		{"another PodSet's memory is its own", func(rs *podSetRecords) { rs.of(prefix).statusPacing.Wrote(time.Second, unitNow) }, true, true},
		{"forgotten once the PodSet is gone", func(rs *podSetRecords) { rs.forget(client.ObjectKeyFromObject(web)) }, false, true},
		{"forgetting leaves a namesake prefix alone", func(rs *podSetRecords) {
			rs.forget(types.NamespacedName{Namespace: web.Namespace, Name: web.Name[:len(web.Name)-1]})
		}, true, true},
		{"a namesake with another UID starts afresh", func(rs *podSetRecords) { rs.of(namesake) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rs := newPodSetRecords()
			rs.of(web).statusPacing.Wrote(time.Second, unitNow)
			rs.of(prefix).statusPacing.Wrote(time.Second, unitNow)
			tc.then(rs)
			g.Expect(remembered(rs.of(web))).To(Equal(tc.wantWeb), "web")
			g.Expect(remembered(rs.of(prefix))).To(Equal(tc.wantPrefix), "web-2")
		})
	}
}
