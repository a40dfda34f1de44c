//go:build !realnode

package olm_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/podset-operator/internal/monitoring"
	"github.com/example/podset-operator/test/localcluster"
)

// monitoringServed reports whether the cluster serves the Prometheus
// Operator's API.
func monitoringServed(t *testing.T) bool {
	t.Helper()
	d, err := discovery.NewDiscoveryClientForConfig(cluster.RESTConfig())
	must(t, err)
	_, err = d.ServerResourcesForGroupVersion(monitoring.GroupVersion)
	if apierrors.IsNotFound(err) {
		return false
	}
	must(t, err)
	return true
}

// installMonitoringCRDs creates the Prometheus Operator's real ServiceMonitor
// and PrometheusRule CRDs (MONITORING_CRDS: `make test-olm` copies them from
// the prometheus-operator Go module at the version the Makefile pins) and
// deletes them when the test ends.
func installMonitoringCRDs(t *testing.T) {
	dir := os.Getenv("MONITORING_CRDS")
	if dir == "" {
		t.Fatal("MONITORING_CRDS is not set: run `make test-olm`")
	}
	installCRDs(t, t.Context(), dir, func(files []string) error {
		if len(files) != 2 {
			return fmt.Errorf("want the ServiceMonitor and PrometheusRule CRDs in %s, got %v", dir, files)
		}
		return nil
	})
}

// deploymentPod waits for the pod that dep's ReplicaSet made and returns its
// name.
func deploymentPod(t *testing.T, ctx context.Context, dep *appsv1.Deployment) string {
	t.Helper()
	name := ""
	err := poll(ctx, 2*time.Minute, func() (bool, string, error) {
		var rss appsv1.ReplicaSetList
		if err := k8s.List(ctx, &rss, client.InNamespace(dep.Namespace)); err != nil {
			return false, "", err
		}
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(dep.Namespace)); err != nil {
			return false, "", err
		}
		for _, rs := range rss.Items {
			if !metav1.IsControlledBy(&rs, dep) {
				continue
			}
			for _, p := range pods.Items {
				if metav1.IsControlledBy(&p, &rs) && p.DeletionTimestamp == nil {
					name = p.Name
					return true, "", nil
				}
			}
		}
		return false, "no pod of Deployment " + dep.Name + " yet", nil
	})
	must(t, err)
	return name
}

// monitoringLog returns the lines of the manager's log written by its
// monitoring logger.
func monitoringLog(t *testing.T, p *localcluster.Process) []string {
	t.Helper()
	data, err := os.ReadFile(p.LogPath())
	must(t, err)
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, `"logger":"monitoring"`) {
			lines = append(lines, l)
		}
	}
	return lines
}
