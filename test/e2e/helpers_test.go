//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/localcluster"
)

// Generous timeouts: two slow cores run the whole control plane, the
// operator and the test at once.
const (
	timeout = 2 * time.Minute
	poll    = 250 * time.Millisecond
)

// podSetLabel is the label the operator puts on every pod of a PodSet.
const podSetLabel = "app.example.com/podset"

// kubectl runs the cluster's kubectl as the admin user, like a user typing
// commands, and prints the command line.
func kubectl(ctx context.Context, args ...string) (string, string, error) {
	return kubectlIn(ctx, nil, args...)
}

func kubectlIn(ctx context.Context, stdin io.Reader, args ...string) (string, string, error) {
	fmt.Printf("    $ kubectl %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, env.kubectlBin, args...)
	cmd.Dir = env.repoRoot // so paths like config/samples/... work as typed
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.cluster.KubeconfigPath())
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if out := strings.TrimSpace(stdout.String() + stderr.String()); out != "" {
		fmt.Println(indent(out))
	}
	if err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String(), nil
}

// mustKubectl runs kubectl and fails the test on error.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, _, err := kubectl(t.Context(), args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(s, "\n", "\n      ")
}

// newNamespace creates a namespace for one test, waits until pods can be
// created in it, and deletes it when the test ends.
func newNamespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	Expect(env.admin.Create(t.Context(), ns)).To(Succeed())
	Expect(localcluster.WaitForDefaultServiceAccount(t.Context(), env.clientset, name)).To(Succeed())
	t.Cleanup(func() {
		// Namespace deletion cascades to PodSets and pods; not waiting for
		// it keeps the suite fast, names are not reused.
		_ = env.admin.Delete(context.Background(), ns)
	})
	return name
}

// livePods lists the PodSet's pods that count towards spec.replicas: not
// terminating, not Succeeded or Failed.
func livePods(g Gomega, ctx context.Context, ns, podset string) []corev1.Pod {
	return livePodsLabelled(g, ctx, ns, client.MatchingLabels{podSetLabel: podset})
}

// livePodsLabelled lists the live pods of ns that carry labels.
func livePodsLabelled(g Gomega, ctx context.Context, ns string, labels client.MatchingLabels) []corev1.Pod {
	var list corev1.PodList
	g.Expect(env.admin.List(ctx, &list, client.InNamespace(ns), labels)).To(Succeed())
	var live []corev1.Pod
	for _, p := range list.Items {
		if isLive(&p) {
			live = append(live, p)
		}
	}
	return live
}

func isLive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func isRunningAndReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func getPodSet(g Gomega, ctx context.Context, ns, name string) *appv1alpha1.PodSet {
	ps := &appv1alpha1.PodSet{}
	g.Expect(env.admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ps)).To(Succeed())
	return ps
}

// expectSettled waits until the sample PodSet in ns has exactly replicas live
// pods, all Running and Ready and controlled by it, and a status that reports
// them.
func expectSettled(t *testing.T, ns string, replicas int) {
	t.Helper()
	expectSettledNamed(t, ns, sample, replicas)
}

// expectSettledNamed is expectSettled for the PodSet name.
func expectSettledNamed(t *testing.T, ns, name string, replicas int) {
	t.Helper()
	step("waiting for %s/%s to settle at %d Running and Ready pods", ns, name, replicas)
	Eventually(func(g Gomega) {
		ps := getPodSet(g, t.Context(), ns, name)
		pods := livePods(g, t.Context(), ns, name)
		g.Expect(pods).To(HaveLen(replicas), "live pods")
		var names []string
		for i := range pods {
			p := &pods[i]
			g.Expect(isRunningAndReady(p)).To(BeTrue(), "pod %s is not Running and Ready", p.Name)
			ref := metav1.GetControllerOf(p)
			g.Expect(ref).NotTo(BeNil(), "pod %s has no controller", p.Name)
			g.Expect(ref.Kind).To(Equal("PodSet"))
			g.Expect(ref.APIVersion).To(Equal(appv1alpha1.GroupVersion.String()))
			g.Expect(ref.UID).To(Equal(ps.UID), "pod %s is controlled by another object", p.Name)
			names = append(names, p.Name)
		}
		g.Expect(ps.Status.ObservedGeneration).To(Equal(ps.Generation), "observedGeneration")
		g.Expect(ps.Status.Replicas).To(BeEquivalentTo(replicas), "status.replicas")
		g.Expect(ps.Status.ReadyReplicas).To(BeEquivalentTo(replicas), "status.readyReplicas")
		g.Expect(ps.Status.AvailableReplicas).To(BeEquivalentTo(replicas), "status.availableReplicas")
		g.Expect(ps.Status.PodNames).To(ConsistOf(names), "status.podNames")
		g.Expect(conditionStatus(ps, appv1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionTrue), "Available condition")
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

func conditionStatus(ps *appv1alpha1.PodSet, typ string) metav1.ConditionStatus {
	for _, c := range ps.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// operatorProcess is the manager binary running as a separate process, as
// `make run` runs it, but with the ServiceAccount's kubeconfig. It can be
// stopped and started again.
type operatorProcess struct {
	bin, kubeconfig, logPath string
	// args are extra flags (leader election, in the chaos suite).
	args []string

	mu   sync.Mutex
	proc *localcluster.Process
}

func (o *operatorProcess) start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintf(f, "----- operator started at %s -----\n", time.Now().Format(time.RFC3339Nano))
		_ = f.Close()
	}
	// Ports: metrics off, health probes on a port the kernel picks, so two
	// suites on one machine do not collide.
	proc, err := localcluster.StartProcess("operator", o.bin,
		append([]string{"--kubeconfig=" + o.kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0"}, o.args...),
		[]string{"WATCH_NAMESPACE="}, o.logPath)
	if err != nil {
		return err
	}
	step("operator started (pid %d), log: %s", proc.Pid(), o.logPath)
	o.proc = proc
	return nil
}

// kill ends the operator abruptly (SIGKILL), as a node failure or OOM kill
// would: no cleanup, no graceful shutdown of its workers.
func (o *operatorProcess) kill() {
	o.end((*localcluster.Process).Kill, "SIGKILL")
}

// stop ends the operator gracefully.
func (o *operatorProcess) stop() {
	o.end((*localcluster.Process).Stop, "SIGTERM")
}

func (o *operatorProcess) end(how func(*localcluster.Process) error, what string) {
	o.mu.Lock()
	proc := o.proc
	o.proc = nil
	o.mu.Unlock()
	if proc == nil {
		return
	}
	_ = how(proc)
	step("operator stopped with %s", what)
}

// running reports whether the operator process is alive; a crashed operator
// would make every later assertion time out with a less useful message.
func (o *operatorProcess) running() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc == nil {
		return false
	}
	exited, _ := o.proc.Exited()
	return !exited
}

func (o *operatorProcess) printLogTail(n int) {
	o.printLogLinesMentioning("", n)
}

// printLogLinesMentioning prints the last n lines of the log that contain
// what (every line when empty).
func (o *operatorProcess) printLogLinesMentioning(what string, n int) {
	printFileLinesMentioning(o.logPath, what, n)
}

// printFileLinesMentioning prints the last n lines of the file at path that
// contain what (every line when empty).
func printFileLinesMentioning(path, what string, n int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1024*1024), 1024*1024)
	for s.Scan() {
		if !strings.Contains(s.Text(), what) {
			continue
		}
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	fmt.Printf("----- last %d lines of %s mentioning %q -----\n%s\n", n, path, what, strings.Join(lines, "\n"))
}

// setQuota creates or changes ResourceQuota ns/name to allow this many pods.
// A merge patch, not an update: the quota controller writes the quota's
// status all the time, and an update would meet its conflicts.
func setQuota(t *testing.T, ns, name string, pods int64) {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}}}
	err := env.admin.Create(t.Context(), q)
	if apierrors.IsAlreadyExists(err) {
		patch := []byte(fmt.Sprintf(`{"spec":{"hard":{"pods":"%d"}}}`, pods))
		err = env.admin.Patch(t.Context(), q, client.RawPatch(types.MergePatchType, patch))
	}
	Expect(err).NotTo(HaveOccurred())
}

// leaseHolder is the identity the leader election Lease names.
func leaseHolder(ctx context.Context) string {
	lease := &coordinationv1.Lease{}
	if err := env.admin.Get(ctx, types.NamespacedName{Namespace: env.operatorNS, Name: leaderElectionID}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// leaderElectionID is the name of the operator's Lease (main.go).
const leaderElectionID = "podset-operator.app.example.com"

// addKwokStage has the local cluster's kwok run the Stage in testdata/file,
// once however many tests ask for it.
func addKwokStage(o *localcluster.Options, file string) error {
	path, err := filepath.Abs(filepath.Join("testdata", file))
	if err != nil {
		return err
	}
	if !slices.Contains(o.KwokArgs, "--config="+path) {
		o.KwokArgs = append(o.KwokArgs, "--config="+path)
	}
	return nil
}
