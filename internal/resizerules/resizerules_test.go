package resizerules

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/example/podset-operator/controllers/inplace"
)

func fakeServer(gitVersion string, coreResources ...string) *fakediscovery.FakeDiscovery {
	core := &metav1.APIResourceList{GroupVersion: "v1"}
	for _, r := range coreResources {
		core.APIResources = append(core.APIResources, metav1.APIResource{Name: r})
	}
	return &fakediscovery.FakeDiscovery{
		Fake:               &clienttesting.Fake{Resources: []*metav1.APIResourceList{core}},
		FakedServerVersion: &version.Info{GitVersion: gitVersion},
	}
}

func TestDiscover(t *testing.T) {
	for _, tc := range []struct {
		name string
		disc *fakediscovery.FakeDiscovery
		want inplace.ServerRules
	}{
		{"1.32: no pods/resize", fakeServer("v1.32.13", "pods", "pods/status"), inplace.ServerRules{NoResize: true}},
		{"1.33", fakeServer("v1.33.13", "pods", "pods/resize", "pods/status"), inplace.ServerRules{NoMemoryLimitDecrease: true}},
		{"1.37", fakeServer("v1.37.0", "pods", "pods/resize"), inplace.ServerRules{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Discover(context.Background(), tc.disc, zap.New())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// TestDiscoverWaitsForTheServer: an API server that does not
// answer yet is asked again, not taken for one without pods/resize.
func TestDiscoverWaitsForTheServer(t *testing.T) {
	g := NewWithT(t)
	disc := fakeServer("v1.33.13", "pods", "pods/resize")
	failures := 2
	disc.PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	got, err := Discover(context.Background(), disc, zap.New())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(failures).To(BeZero())
	g.Expect(got).To(Equal(inplace.ServerRules{NoMemoryLimitDecrease: true}))

	// And it stops when told to.
	disc = fakeServer("v1.33.13")
	disc.PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Discover(ctx, disc, zap.New())
	g.Expect(err).To(HaveOccurred())
}

// TestDiscoverOfARealAPIServer asks envtest's kube-apiserver, whichever
// release it is (make test runs the newest, make test-k8s-versions older
// ones), and holds the answer to what that release is known to allow.
func TestDiscoverOfARealAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run make test")
	}
	g := NewWithT(t)
	env := &envtest.Environment{}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := Discover(context.Background(), disc, zap.New())
	g.Expect(err).NotTo(HaveOccurred())
	v, err := disc.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	minor, err := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	g.Expect(err).NotTo(HaveOccurred())
	want := inplace.ServerRules{}
	switch {
	case minor < 33:
		want.NoResize = true
	case minor <= 34:
		want.NoMemoryLimitDecrease = true
	}
	g.Expect(got).To(Equal(want), "Kubernetes %s", v.GitVersion)
}
