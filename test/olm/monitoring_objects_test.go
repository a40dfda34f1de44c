package olm_test

// The manager's ServiceMonitor and PrometheusRule as the suites find them,
// on kwok nodes (test-olm) and on the real node (test-olm-real).

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/podset-operator/internal/monitoring"
)

const monitoringGroup = "monitoring.coreos.com"

// checkMonitoringObjects waits for the manager's ServiceMonitor and
// PrometheusRule in ns and compares them with what the manager embeds (the
// source of truth), owned by dep.
func checkMonitoringObjects(t *testing.T, ctx context.Context, ns string, dep *appsv1.Deployment) {
	t.Helper()
	want, err := monitoring.Objects(ns, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID})
	must(t, err)
	for _, w := range want {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(w.GroupVersionKind())
		must(t, poll(ctx, time.Minute, func() (bool, string, error) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(w), got)
			return err == nil, w.GetKind() + " " + w.GetName() + " not there", client.IgnoreNotFound(err)
		}))
		if !equalJSON(t, got.Object["spec"], w.Object["spec"]) {
			t.Errorf("%s %s/%s spec differs from the embedded manifest:\ngot  %v\nwant %v", w.GetKind(), ns, w.GetName(), got.Object["spec"], w.Object["spec"])
		}
		if !equalJSON(t, got.GetLabels(), w.GetLabels()) || !equalJSON(t, got.GetOwnerReferences(), w.GetOwnerReferences()) {
			t.Errorf("%s %s/%s: labels %v, owners %v; want %v, %v", w.GetKind(), ns, w.GetName(),
				got.GetLabels(), got.GetOwnerReferences(), w.GetLabels(), w.GetOwnerReferences())
		}
		t.Logf("%s %s/%s applied by the manager, owned by Deployment %s", w.GetKind(), ns, w.GetName(), dep.Name)
	}
}

// equalJSON compares two values by their JSON form (the API server's copy
// and the decoded manifest hold numbers and maps as different Go types).
func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	must(t, err)
	jb, err := json.Marshal(b)
	must(t, err)
	return bytes.Equal(ja, jb)
}
