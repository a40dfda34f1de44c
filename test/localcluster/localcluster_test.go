//go:build e2e

package localcluster_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/example/podset-operator/test/localcluster"
)

func binDir(t *testing.T) string {
	if d := os.Getenv("K8S_BIN"); d != "" {
		return d
	}
	d, err := filepath.Abs("../../bin/k8s-v1.37.0-etcd-v3.6.16-kwok-v0.8.0")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCluster starts two clusters side by side (they must not collide) and
// checks on the first what the operator's tests rely on.
func TestCluster(t *testing.T) {
	RegisterTestingT(t)
	ctx := t.Context()
	a, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir(t), Nodes: 2, Out: t.Output()})
	Expect(err).NotTo(HaveOccurred())
	defer func() { Expect(a.Stop()).To(Succeed()) }()
	b, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir(t), Nodes: 1, Out: t.Output()})
	Expect(err).NotTo(HaveOccurred())
	Expect(b.RESTConfig().Host).NotTo(Equal(a.RESTConfig().Host))
	Expect(b.WorkDir()).NotTo(Equal(a.WorkDir()))

	cs, err := kubernetes.NewForConfig(a.RESTConfig())
	Expect(err).NotTo(HaveOccurred())

	t.Run("ReportsTheRealVersion", func(t *testing.T) {
		RegisterTestingT(t)
		v, err := cs.Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.GitVersion).To(Equal("v1.37.0"))
		Expect(v.Major).To(Equal("1"))
		Expect(v.Minor).To(Equal("37"))
	})

	t.Run("NodesAreLabelledLikeRealOnes", func(t *testing.T) {
		RegisterTestingT(t)
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes.Items).To(HaveLen(2))
		for _, n := range nodes.Items {
			Expect(n.Labels).To(HaveKeyWithValue("kubernetes.io/os", "linux"))
			Expect(n.Labels).To(HaveKeyWithValue("kubernetes.io/arch", "amd64"))
			Expect(n.Status.Allocatable.Pods().Value()).To(BeEquivalentTo(5000))
		}
	})

	t.Run("PodsGetScheduledRunningAndReady", func(t *testing.T) {
		RegisterTestingT(t)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
				Containers:   []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sleep", "3600"}}},
			},
		}
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "probe", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(p.Status.PodIP).NotTo(BeEmpty())
			g.Expect(p.Status.Conditions).To(ContainElement(And(
				HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	t.Run("GarbageCollectorDeletesOwnedPods", func(t *testing.T) {
		RegisterTestingT(t)
		owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: "default", OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
			}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		_, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cs.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := cs.CoreV1().Pods("default").Get(ctx, "owned", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(time.Minute).Should(BeTrue(), "owned pod still exists")
	})

	// The premise of the fault matrix's lost node: nothing ends its pods,
	// even while kwok's view of the node's Lease still says it holds it
	// (here it does: the pods are marked without LoseNode). A pod of the
	// same node that is not marked is ended as usual, so that the marked
	// one staying is kwok leaving it alone, not kwok being slow.
	t.Run("ALostNodesPodsAreLeftTerminating", func(t *testing.T) {
		RegisterTestingT(t)
		node := localcluster.NodeName(1)
		pod := func(name string) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			}
		}
		running := func(name string) func(g Gomega) {
			return func(g Gomega) {
				p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			}
		}
		gone := func(name string) func() bool {
			return func() bool {
				_, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}
		}
		t.Cleanup(func() {
			// A failure must not leave the node's pods marked.
			_ = a.RestoreNode(ctx, node)
			for _, name := range []string{"on-lost-node", "unmarked"} {
				_ = cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
		})
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod("on-lost-node"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(running("on-lost-node")).WithTimeout(time.Minute).Should(Succeed())
		Expect(a.MarkPodsOfLostNode(ctx, node)).To(Succeed())
		_, err = cs.CoreV1().Pods("default").Create(ctx, pod("unmarked"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(running("unmarked")).WithTimeout(time.Minute).Should(Succeed())

		for _, name := range []string{"on-lost-node", "unmarked"} {
			Expect(cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
		}
		Eventually(gone("unmarked")).WithTimeout(time.Minute).Should(BeTrue(), "kwok did not end a pod of a node it serves")
		Consistently(func(g Gomega) {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "on-lost-node", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred(), "kwok ended a pod of a lost node")
			g.Expect(p.DeletionTimestamp).NotTo(BeNil())
		}).WithTimeout(5 * time.Second).Should(Succeed())

		// Given back, the node's kwok ends it.
		Expect(a.RestoreNode(ctx, node)).To(Succeed())
		Eventually(gone("on-lost-node")).WithTimeout(time.Minute).Should(BeTrue(), "the pod of a node given back still exists")
	})

	t.Run("ServiceAccountTokenIdentity", func(t *testing.T) {
		RegisterTestingT(t)
		_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		cfg, err := a.ServiceAccountConfig(ctx, "default", "probe", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		sa, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:default:probe"))
		// RBAC is on: a ServiceAccount without bindings may not list pods.
		_, err = sa.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
		// And the kubeconfig written for it carries the same identity.
		path := filepath.Join(t.TempDir(), "sa.kubeconfig")
		Expect(localcluster.WriteKubeconfig(path, cfg)).To(Succeed())
	})

	t.Run("StopLeavesNoProcessOrPortBehind", func(t *testing.T) {
		RegisterTestingT(t)
		host := b.RESTConfig().Host
		workDir := b.WorkDir()
		Expect(b.Stop()).To(Succeed())
		_, err := net.DialTimeout("tcp", host[len("https://"):], time.Second)
		Expect(err).To(HaveOccurred(), "the stopped API server still accepts connections at %s", host)
		_, err = os.Stat(workDir)
		Expect(os.IsNotExist(err)).To(BeTrue(), "work directory %s not removed", workDir)
		// Every component's command line names the work directory, so no
		// process naming it means none survived.
		Expect(processesMentioning(workDir)).To(BeEmpty())
		// The other cluster is unaffected.
		_, err = cs.Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
	})
}

// processesMentioning lists the pids whose command line contains s.
func processesMentioning(s string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), s) {
			pids = append(pids, fmt.Sprintf("%s: %q", e.Name(), cmdline))
		}
	}
	return pids
}
