//go:build e2e && realnode

package e2e

// The real-node suite (`make test-real-node`): the local cluster runs one
// real node, a kubelet with containerd, instead of the kwok nodes, and the
// operand's containers really run. Under kwok a pod is Ready without any
// process; here the suite looks at the processes themselves, from the host:
// their user, their root filesystem, their seccomp mode. It needs root; the
// Makefile target installs the Debian packages and builds the kubelet and
// the node's images first.

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/localcluster"
)

func init() {
	var before localcluster.HostSnapshot
	clusterOptions = append(clusterOptions, func(o *localcluster.Options) error {
		node, err := localcluster.RealNodeImages(envOr("NODE_IMAGES", filepath.Join("..", "..", "bin", "node-images")))
		if err != nil {
			return err
		}
		o.RealNode = node
		for _, want := range []string{"manager.tar", "scorecard-test.tar"} {
			if !slices.ContainsFunc(node.Images, func(p string) bool { return filepath.Base(p) == want }) {
				return fmt.Errorf("no %s among the node's images: run the suite with `make test-real-node`, which builds it", want)
			}
		}
		// The manager Deployment of config/default is the operator:
		// its image, built by `make docker-build`, runs on the node.
		operatorInCluster = true
		// A run that crashed left the host changed: put it back first
		// (the cluster's start would), then take the host as it is.
		if err := localcluster.Cleanup(nil); err != nil {
			return err
		}
		before, err = localcluster.SnapshotHost()
		return err
	})
	afterClusterStop = append(afterClusterStop, func() error {
		after, err := localcluster.SnapshotHost()
		if err != nil {
			return err
		}
		if diff := before.Diff(after); diff != "" {
			return fmt.Errorf("the real node left the host changed:\n%s", diff)
		}
		step("the host is as it was before the real node: %s", after)
		return nil
	})
}

func TestRealNode(t *testing.T) {
	RegisterTestingT(t)
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"ManagerRunsAsAPod", testRealManagerPod},
		{"DefaultOperandRunsRestricted", testRealDefaultOperand},
		{"CustomImageRunsRestricted", testRealCustomImage},
		{"TemplateServesAConfigMapOnceReady", testRealTemplateServesAConfigMap},
		{"OpenShiftSampleRunsAsTheNamespacesUser", testRealOpenShiftSample},
		{"CrashingOperandIsReportedNotReplaced", testRealCrashLoop},
		{"DeletedPodSetTakesItsPodsWithinTheGracePeriod", testRealDeletion},
		{"RecreateCountsTerminatingPodsThroughTheirGracePeriod", testRealTerminatingPods},
		{"TerminationCompleteKeepsTheBoundByTheAuditLog", testRealTerminationComplete},
		{"NothingLeavesTheMachine", testRealNodeGuard},
		{"ScorecardRunsItsTestsAsPods", testRealScorecard},
		{"InPlaceImageUpdateKeepsThePods", testRealInPlaceImageUpdate},
		{"InPlaceUpdateOfATemplatesSecondContainer", testRealInPlaceUpdateOfATemplatesSecondContainer},
		{"InPlaceResizeRestartsNothing", testRealInPlaceResize},
		{"InPlaceMemoryLimitDecrease", testRealInPlaceMemoryLimitDecrease},
		{"InPlaceUpdateStopsOnABadImage", testRealInPlaceBadImage},
		{"InPlaceUpdateSurvivesTheOperatorKilled", testRealInPlaceOperatorKilled},
		{"AutoRollback", testRealAutoRollbackScenarios},
		{"ZeroDowntime", testRealZeroDowntime},
		{"CanaryAnalysis", testRealCanaryAnalysis},
	} {
		t.Run(tc.name, func(t *testing.T) {
			RegisterTestingT(t)
			// The node's side of what went wrong (a failed assertion
			// ends the test at once, hence a cleanup): the test
			// namespaces all begin with "real-".
			t.Cleanup(func() {
				if t.Failed() {
					for _, name := range []string{"kubelet", "containerd"} {
						printFileLinesMentioning(filepath.Join(env.cluster.LogDir(), name+".log"), "real-", 200)
					}
				}
			})
			tc.run(t)
		})
	}
}

// newRealPodSet creates a PodSet in a new namespace that enforces the
// restricted profile.
func newRealPodSet(t *testing.T, nsName string, replicas int32, mutate func(*appv1alpha1.PodSetSpec)) *appv1alpha1.PodSet {
	t.Helper()
	ns := newNamespace(t, nsName, restricted)
	ps := &appv1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Name: "real", Namespace: ns},
		Spec:       appv1alpha1.PodSetSpec{Replicas: ptr.To(replicas)},
	}
	if mutate != nil {
		mutate(&ps.Spec)
	}
	NewWithT(t).Expect(env.admin.Create(t.Context(), ps)).To(Succeed())
	return ps
}

// waitRunning waits until the PodSet has n live pods whose containers have
// started, and its status reports them all ready and available.
func waitRunning(t *testing.T, ps *appv1alpha1.PodSet, n int) []corev1.Pod {
	t.Helper()
	step("waiting for %d pods of %s/%s to run on the real node", n, ps.Namespace, ps.Name)
	var pods []corev1.Pod
	NewWithT(t).Eventually(func(g Gomega) {
		pods = livePods(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(pods).To(HaveLen(n))
		for i := range pods {
			p := &pods[i]
			g.Expect(p.Spec.NodeName).To(Equal(localcluster.RealNodeName))
			g.Expect(isRunningAndReady(p)).To(BeTrue(), "pod %s is not Running and Ready: %s", p.Name, podState(p))
			g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			cs := p.Status.ContainerStatuses[0]
			g.Expect(cs.State.Running).NotTo(BeNil(), "container of %s is not running", p.Name)
			g.Expect(cs.ContainerID).To(HavePrefix("containerd://"))
		}
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(n))
		g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(n))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return pods
}

func podState(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			s += fmt.Sprintf(", %s waiting: %s %s", cs.Name, w.Reason, w.Message)
		}
		if x := cs.State.Terminated; x != nil {
			s += fmt.Sprintf(", %s terminated: %s (exit %d)", cs.Name, x.Reason, x.ExitCode)
		}
	}
	return s
}

// containerProcess is what the host's /proc says of a container's main
// process.
type containerProcess struct {
	uid, gid   string // effective IDs
	noNewPrivs string
	seccomp    string // 2: filter
	capEff     string
	rootRO     bool // its root filesystem is mounted read-only
}

// inspectContainer finds the process of the pod's container through the
// node's containerd and reads its /proc entries.
func inspectContainer(g Gomega, p *corev1.Pod) containerProcess {
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	tasks, err := env.cluster.NodeTasks(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tasks).To(HaveKey(id), "no running containerd task for container %s", id)
	pid := strconv.Itoa(tasks[id])
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	g.Expect(err).NotTo(HaveOccurred())
	var cp containerProcess
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "Uid:":
			cp.uid = f[2]
		case "Gid:":
			cp.gid = f[2]
		case "NoNewPrivs:":
			cp.noNewPrivs = f[1]
		case "Seccomp:":
			cp.seccomp = f[1]
		case "CapEff:":
			cp.capEff = f[1]
		}
	}
	mounts, err := os.Open(filepath.Join("/proc", pid, "mountinfo"))
	g.Expect(err).NotTo(HaveOccurred())
	defer mounts.Close()
	s := bufio.NewScanner(mounts)
	for s.Scan() {
		// mount ID, parent, major:minor, root, mount point, options...
		if f := strings.Fields(s.Text()); len(f) > 5 && f[4] == "/" {
			cp.rootRO = strings.HasPrefix(f[5], "ro,") || f[5] == "ro"
		}
	}
	return cp
}

// expectRestricted checks, from the host, that each pod's container runs as
// the operand's UID (65532), without privileges, under seccomp's
// RuntimeDefault filter, on a read-only root filesystem.
func expectRestricted(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	for i := range pods {
		p := &pods[i]
		Eventually(func(g Gomega) {
			cp := inspectContainer(g, p)
			g.Expect(cp.uid).To(Equal("65532"), "effective UID of %s", p.Name)
			g.Expect(cp.noNewPrivs).To(Equal("1"), "no_new_privs of %s", p.Name)
			g.Expect(cp.seccomp).To(Equal("2"), "seccomp mode of %s (2: filter)", p.Name)
			g.Expect(cp.capEff).To(Equal("0000000000000000"), "effective capabilities of %s", p.Name)
			g.Expect(cp.rootRO).To(BeTrue(), "root filesystem of %s is writable", p.Name)
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		step("pod %s: UID 65532, no_new_privs, seccomp filter, no capabilities, read-only root", p.Name)
	}
}

// testRealManagerPod: the manager runs from its image, deployed by
// config/default (what `make deploy` applies) with the RBAC that the CSV
// grants: its probes pass, it holds the leader lease, it runs restricted,
// and its metrics endpoint answers over HTTPS only to a caller allowed to
// read metrics.
func testRealManagerPod(t *testing.T) {
	sel, _, err := unstructured.NestedStringMap(env.deployment.Object, "spec", "selector", "matchLabels")
	Expect(err).NotTo(HaveOccurred())
	var pods corev1.PodList
	Expect(env.admin.List(t.Context(), &pods, client.InNamespace(env.operatorNS), client.MatchingLabels(sel))).To(Succeed())
	Expect(pods.Items).To(HaveLen(1))
	pod := pods.Items[0]
	Expect(isRunningAndReady(&pod)).To(BeTrue(), "the manager pod is not Ready (its readiness probe): %s", podState(&pod))
	Expect(pod.Spec.Containers[0].Image).To(Equal(os.Getenv("IMG")), "the manager pod's image")
	step("manager pod %s: Ready (its probes pass), image %s", pod.Name, pod.Spec.Containers[0].Image)
	expectRestricted(t, []corev1.Pod{pod})

	step("it holds the leader lease")
	Eventually(func(g Gomega) {
		g.Expect(leaseHolder(t.Context())).To(HavePrefix(pod.Name+"_"), "the Lease's holder")
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	step("its RBAC is the CSV's")
	expectRBACIsTheCSVs(t)

	step("its metrics endpoint https://%s:8443/metrics: 401 without a token, 403 for a caller not allowed, 200 for the metrics reader", pod.Status.PodIP)
	url := "https://" + pod.Status.PodIP + ":8443/metrics"
	Expect(metricsStatus(t, url, "")).To(Equal(http.StatusUnauthorized))
	ns := newNamespace(t, "real-metrics", nil)
	for _, sa := range []string{"denied", "reader"} {
		Expect(env.admin.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}})).To(Succeed())
	}
	Expect(metricsStatus(t, url, saToken(t, ns, "denied"))).To(Equal(http.StatusForbidden))
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "real-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "podset-operator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: ns}},
	}
	Expect(env.admin.Create(t.Context(), binding)).To(Succeed())
	t.Cleanup(func() { _ = env.admin.Delete(context.Background(), binding) })
	token := saToken(t, ns, "reader")
	Eventually(func(g Gomega) {
		code, body := metricsGet(g, url, token)
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(body).To(ContainSubstring(`controller_runtime_reconcile_total{controller="podset"`))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
}

// saToken is a token of a ServiceAccount, from the TokenRequest API.
func saToken(t *testing.T, ns, name string) string {
	tr, err := env.clientset.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// metricsGet reads the metrics endpoint with a bearer token ("" for none).
// The manager serves a self-signed certificate, as in a cluster without
// cert-manager; the test checks who may read, not the certificate.
func metricsGet(g Gomega, url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	resp, err := c.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}

func metricsStatus(t *testing.T, url, token string) int {
	code, _ := metricsGet(NewWithT(t), url, token)
	return code
}

// expectRBACIsTheCSVs: the rules of the Roles and ClusterRoles bound to the
// manager's ServiceAccount in the cluster (config/default's RBAC) are the
// CSV's permissions and clusterPermissions for that ServiceAccount, so that
// a run under `make deploy` is a run under what OLM grants.
func expectRBACIsTheCSVs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(env.repoRoot, "bundle", "manifests", "podset-operator.clusterserviceversion.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var csv operatorsv1alpha1.ClusterServiceVersion
	Expect(yaml.Unmarshal(raw, &csv)).To(Succeed())
	strategy := csv.Spec.InstallStrategy.StrategySpec
	var wantCluster, wantNS []rbacv1.PolicyRule
	for _, p := range strategy.ClusterPermissions {
		if p.ServiceAccountName == env.operatorSA {
			wantCluster = append(wantCluster, p.Rules...)
		}
	}
	for _, p := range strategy.Permissions {
		if p.ServiceAccountName == env.operatorSA {
			wantNS = append(wantNS, p.Rules...)
		}
	}
	Expect(wantCluster).NotTo(BeEmpty())

	var gotCluster, gotNS []rbacv1.PolicyRule
	var crbs rbacv1.ClusterRoleBindingList
	Expect(env.admin.List(t.Context(), &crbs)).To(Succeed())
	for _, b := range crbs.Items {
		if boundToOperator(b.Subjects) {
			var r rbacv1.ClusterRole
			Expect(env.admin.Get(t.Context(), client.ObjectKey{Name: b.RoleRef.Name}, &r)).To(Succeed())
			gotCluster = append(gotCluster, r.Rules...)
		}
	}
	var rbs rbacv1.RoleBindingList
	Expect(env.admin.List(t.Context(), &rbs, client.InNamespace(env.operatorNS))).To(Succeed())
	for _, b := range rbs.Items {
		if boundToOperator(b.Subjects) {
			var r rbacv1.Role
			Expect(env.admin.Get(t.Context(), client.ObjectKey{Namespace: env.operatorNS, Name: b.RoleRef.Name}, &r)).To(Succeed())
			gotNS = append(gotNS, r.Rules...)
		}
	}
	Expect(gotCluster).To(ConsistOf(wantCluster), "cluster-wide rules: config/default vs the CSV's clusterPermissions")
	Expect(gotNS).To(ConsistOf(wantNS), "namespaced rules: config/default vs the CSV's permissions")
}

func boundToOperator(subjects []rbacv1.Subject) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Name == env.operatorSA && s.Namespace == env.operatorNS
	})
}

// testRealDefaultOperand: the default operand (busybox, sleeping) runs
// in a restricted namespace, kubectl logs and exec reach it, and it ends
// on SIGTERM: a deleted pod is gone well within its grace period.
func testRealDefaultOperand(t *testing.T) {
	ps := newRealPodSet(t, "real-default", 2, nil)
	pods := waitRunning(t, ps, 2)
	expectRestricted(t, pods)

	step("kubectl exec into %s: the user, and a write to the root filesystem refused", pods[0].Name)
	out := mustKubectl(t, "exec", "-n", ps.Namespace, pods[0].Name, "--", "id", "-u")
	Expect(strings.TrimSpace(out)).To(Equal("65532"))
	_, stderr, err := kubectl(t.Context(), "exec", "-n", ps.Namespace, pods[0].Name, "--", "touch", "/probe")
	Expect(err).To(HaveOccurred(), "a write to / succeeded")
	Expect(stderr).To(ContainSubstring("Read-only file system"))
	// /tmp is the scratch space the operator mounts.
	mustKubectl(t, "exec", "-n", ps.Namespace, pods[0].Name, "--", "touch", "/tmp/probe")

	// A container that ignored SIGTERM would hold its pod until the
	// kubelet's SIGKILL, at the end of the 30 s grace period; half of it
	// leaves room for a slow node and none for that.
	step("deleting %s: the operand ends on SIGTERM, well within the 30 s grace period", pods[0].Name)
	mustKubectl(t, "delete", "pod", "-n", ps.Namespace, pods[0].Name, "--wait=false")
	Eventually(func() bool {
		err := env.admin.Get(t.Context(), client.ObjectKeyFromObject(&pods[0]), &corev1.Pod{})
		return apierrors.IsNotFound(err)
	}).WithContext(t.Context()).WithTimeout(15*time.Second).WithPolling(poll).Should(BeTrue(), "pod %s still there 15 s after its deletion", pods[0].Name)
}

// testRealCustomImage: another image than the default one (the node's
// pause image, a Go binary with no shell) runs restricted too, and a
// custom command's output reaches kubectl logs.
func testRealCustomImage(t *testing.T) {
	ps := newRealPodSet(t, "real-custom", 1, func(s *appv1alpha1.PodSetSpec) {
		s.Image = "registry.k8s.io/pause:3.10"
	})
	expectRestricted(t, waitRunning(t, ps, 1))

	step("a custom command's output, through kubectl logs")
	logs := newRealPodSet(t, "real-logs", 1, func(s *appv1alpha1.PodSetSpec) {
		s.Image = "docker.io/library/busybox:1.37.0"
		s.Command = []string{"sh", "-c", "echo operand says hello; exec sleep 3600"}
	})
	pods := waitRunning(t, logs, 1)
	Eventually(func(g Gomega) {
		out, _, err := kubectl(t.Context(), "logs", "-n", logs.Namespace, pods[0].Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring("operand says hello"))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// testRealCrashLoop: a container that exits is restarted by the kubelet in
// the same pod (restartPolicy Always), the PodSet counts the pod as neither
// ready nor available and does not replace it: what the ReplicaSet
// controller does with a crash-looping pod. (Between two crashes the
// container runs for a moment, and without a readiness probe the pod is
// Ready for that moment; minReadySeconds keeps such a pod from ever
// counting as available, for the PodSet as for a ReplicaSet.)
func testRealCrashLoop(t *testing.T) {
	ps := newRealPodSet(t, "real-crash", 1, func(s *appv1alpha1.PodSetSpec) {
		s.Image = "docker.io/library/busybox:1.37.0"
		s.Command = []string{"sh", "-c", "echo starting; sleep 1; exit 3"}
		s.MinReadySeconds = 10
	})
	step("waiting for the kubelet to restart the crashing container")
	var first corev1.Pod
	Eventually(func(g Gomega) {
		pods := livePods(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(pods).To(HaveLen(1))
		first = pods[0]
		g.Expect(first.Status.ContainerStatuses).To(HaveLen(1))
		cs := first.Status.ContainerStatuses[0]
		g.Expect(cs.RestartCount).To(BeNumerically(">=", 2), "restarts so far (%s)", podState(&first))
		g.Expect(cs.LastTerminationState.Terminated).NotTo(BeNil())
		g.Expect(cs.LastTerminationState.Terminated.ExitCode).To(BeEquivalentTo(3))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	step("the PodSet reports 1 pod, not ready while it waits to restart")
	Eventually(func(g Gomega) {
		pods := livePods(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(pods).To(HaveLen(1))
		// Between two restarts the kubelet first reports the container
		// terminated, and Waiting (CrashLoopBackOff) only from its next
		// sync of the pod (its periodic one comes every minute or so):
		// on a fast machine a test saw only the first for two minutes.
		// Either is a container waiting to be restarted.
		st := pods[0].Status.ContainerStatuses[0].State
		waiting := st.Waiting != nil && st.Waiting.Reason == "CrashLoopBackOff"
		exited := st.Terminated != nil && st.Terminated.ExitCode == 3
		g.Expect(waiting || exited).To(BeTrue(), "container state: %s", podState(&pods[0]))
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.Replicas).To(BeEquivalentTo(1))
		g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(0))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	step("never available, and the same pod all along")
	Consistently(func(g Gomega) {
		got := getPodSet(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(got.Status.Replicas).To(BeEquivalentTo(1))
		g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(0))
		g.Expect(conditionStatus(got, appv1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionFalse))
		pods := livePods(g, t.Context(), ps.Namespace, ps.Name)
		g.Expect(pods).To(HaveLen(1))
		g.Expect(pods[0].UID).To(Equal(first.UID), "the crashing pod was replaced")
	}).WithContext(t.Context()).WithTimeout(15 * time.Second).WithPolling(poll).Should(Succeed())
}

// testRealDeletion: deleting a PodSet deletes its pods through the garbage
// collector (the pods' owner references), and their containers stop within
// the pods' grace period (the default operand ends on SIGTERM, well before
// it).
func testRealDeletion(t *testing.T) {
	ps := newRealPodSet(t, "real-delete", 2, nil)
	pods := waitRunning(t, ps, 2)
	grace := time.Duration(*pods[0].Spec.TerminationGracePeriodSeconds) * time.Second

	step("deleting %s/%s; its pods must be gone within their grace period (%s)", ps.Namespace, ps.Name, grace)
	start := time.Now()
	Expect(env.admin.Delete(t.Context(), ps)).To(Succeed())
	Eventually(func(g Gomega) {
		for i := range pods {
			err := env.admin.Get(t.Context(), client.ObjectKeyFromObject(&pods[i]), &corev1.Pod{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "pod %s still exists (%v)", pods[i].Name, err)
		}
	}).WithContext(t.Context()).WithTimeout(grace + 20*time.Second).WithPolling(poll).Should(Succeed())
	step("pods gone %s after the PodSet's deletion", time.Since(start).Round(100*time.Millisecond))

	// And their processes with them: no containerd task of theirs is left.
	for i := range pods {
		id := strings.TrimPrefix(pods[i].Status.ContainerStatuses[0].ContainerID, "containerd://")
		Eventually(func(g Gomega) {
			tasks, err := env.cluster.NodeTasks(t.Context())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tasks).NotTo(HaveKey(id))
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	}
}

// testRealNodeGuard: a pod's packets for an address beyond the node's
// bridge are dropped by the node's guard, even with forwarding on. The
// address is one this test creates: a network namespace with a veth pair,
// a stand-in for "outside"; nothing is sent to any other machine.
func testRealNodeGuard(t *testing.T) {
	const outsideNS, hostEnd, outsideEnd = "lc-guard-test", "lcguard0", "lcguard1"
	run := func(args ...string) {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s: %s", strings.Join(args, " "), out)
	}
	run("ip", "netns", "add", outsideNS)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", outsideNS).Run() })
	run("ip", "link", "add", hostEnd, "type", "veth", "peer", "name", outsideEnd)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostEnd).Run() })
	run("ip", "link", "set", outsideEnd, "netns", outsideNS)
	run("ip", "addr", "add", "10.214.0.1/24", "dev", hostEnd)
	run("ip", "link", "set", hostEnd, "up")
	run("ip", "netns", "exec", outsideNS, "ip", "addr", "add", "10.214.0.2/24", "dev", outsideEnd)
	run("ip", "netns", "exec", outsideNS, "ip", "link", "set", outsideEnd, "up")
	run("ip", "netns", "exec", outsideNS, "ip", "link", "set", "lo", "up")

	// With forwarding on, only the guard stands between the pod and the
	// "outside" namespace. The node restores the value it found at its
	// start when it stops; put back this test's own too.
	fwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644)).To(Succeed())
	t.Cleanup(func() { _ = os.WriteFile("/proc/sys/net/ipv4/ip_forward", fwd, 0o644) })

	ps := newRealPodSet(t, "real-guard", 1, func(s *appv1alpha1.PodSetSpec) {
		s.Image = "docker.io/library/busybox:1.37.0"
		s.Command = []string{"sleep", "3600"}
	})
	pods := waitRunning(t, ps, 1)
	before, err := localcluster.GuardDrops()
	Expect(err).NotTo(HaveOccurred())

	step("from pod %s, a TCP connection to 10.214.0.2 (a namespace beyond the bridge)", pods[0].Name)
	_, stderr, err := kubectl(t.Context(), "exec", "-n", ps.Namespace, pods[0].Name, "--",
		"nc", "-w", "3", "10.214.0.2", "8080")
	Expect(err).To(HaveOccurred(), "the connection beyond the bridge succeeded")
	after, err := localcluster.GuardDrops()
	Expect(err).NotTo(HaveOccurred())
	Expect(after).To(BeNumerically(">", before), "the guard dropped nothing; nc said: %s", stderr)
	step("the guard dropped %d packets of it", after-before)

	// The control: the same pod reaches the node's own address, so the
	// drop above is the guard's and not a broken pod network.
	_, _, err = kubectl(t.Context(), "exec", "-n", ps.Namespace, pods[0].Name, "--",
		"sh", "-c", "nc -w 3 10.213.0.1 "+strconv.Itoa(kubeletPort())+" </dev/null")
	Expect(err).NotTo(HaveOccurred(), "the pod cannot reach the node's own address")

	// Names: the pod resolves Services through the cluster's DNS, and
	// nothing else; no query is forwarded off the machine.
	var svc corev1.Service
	Expect(env.admin.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &svc)).To(Succeed())
	step("from pod %s, nslookup of the kubernetes Service (%s) and of quay.io", pods[0].Name, svc.Spec.ClusterIP)
	stdout, stderr, err := kubectl(t.Context(), "exec", "-n", ps.Namespace, pods[0].Name, "--",
		"nslookup", "-type=a", "kubernetes.default.svc."+localcluster.ClusterDomain)
	Expect(err).NotTo(HaveOccurred(), "%s%s", stdout, stderr)
	Expect(stdout).To(ContainSubstring("Address: "+svc.Spec.ClusterIP), "nslookup said: %s", stdout)
	stdout, _, err = kubectl(t.Context(), "exec", "-n", ps.Namespace, pods[0].Name, "--",
		"nslookup", "-type=a", "quay.io")
	Expect(err).To(HaveOccurred(), "quay.io resolved from a pod: %s", stdout)

	// The host's own traffic to a Service address that kube-proxy has
	// not programmed: refused on the machine, not sent by the default
	// route to whatever answers there.
	unused := unusedServiceIP()
	rejectsBefore, err := localcluster.GuardRejects()
	Expect(err).NotTo(HaveOccurred())
	step("from the host, a TCP connection to %s (in the Service range, no Service has it)", unused)
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(unused, "80"), 5*time.Second)
	if conn != nil {
		_ = conn.Close()
	}
	Expect(err).To(MatchError(ContainSubstring("connection refused")), "the connection to %s was not refused", unused)
	rejectsAfter, err := localcluster.GuardRejects()
	Expect(err).NotTo(HaveOccurred())
	Expect(rejectsAfter).To(BeNumerically(">", rejectsBefore), "the guard refused nothing")
}

// unusedServiceIP is an address of the Service range that no Service has.
func unusedServiceIP() string {
	var svcs corev1.ServiceList
	Expect(env.admin.List(context.Background(), &svcs)).To(Succeed())
	used := map[string]bool{}
	for _, s := range svcs.Items {
		for _, ip := range s.Spec.ClusterIPs {
			used[ip] = true
		}
	}
	// The highest free one: the API server hands out the low ones last.
	prefix := netip.MustParsePrefix(localcluster.ServiceCIDR)
	free := ""
	for ip := prefix.Masked().Addr().Next(); prefix.Contains(ip.Next()); ip = ip.Next() {
		if !used[ip.String()] {
			free = ip.String()
		}
	}
	Expect(free).NotTo(BeEmpty(), "every address of the Service range is taken")
	return free
}

// kubeletPort is the real node's kubelet port, as its Node reports it.
func kubeletPort() int {
	var node corev1.Node
	Expect(env.admin.Get(context.Background(), client.ObjectKey{Name: localcluster.RealNodeName}, &node)).To(Succeed())
	return int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
}
