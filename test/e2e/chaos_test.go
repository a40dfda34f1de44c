//go:build e2e && chaos

package e2e

// The fault matrix (`make test-chaos`): the operator runs as two replicas
// with leader election, under its ServiceAccount and RBAC, and a PodSet
// scales 0 → 50 → 10, or rolls 50 pods to a new template, through each
// fault. Watched from outside, it must never have more live pods than
// spec.replicas (replicas + maxSurge during a rollout), leave no pod without
// its controller, end with exactly the right status, and converge. How long
// it takes to converge once the fault is over is printed against the same
// scenario undisturbed, as a Markdown table for docs/reliability.md; it is
// reported, not asserted (a timed assertion on two shared cores would fail
// for reasons that are not the operator's).
//
// The faults marked midRetreat run a third scenario, "rollback": 50 pods
// roll with auto-rollback to a template whose containers crash (a kwok
// Stage, testdata/kwok-stage-crashing-image.yaml), and the fault strikes
// once the operator has decided to roll back and before the pods are back.
// The PodSet must end on the last completed revision, every pod Ready, the
// rollback recorded as complete, within the same bounds: never more than
// replicas + maxSurge live pods, never fewer than replicas - maxUnavailable
// Ready ones.
//
// The faults marked midTermination run a fourth, "scale-down": 50 pods of
// an image whose deleted pods take their whole grace period to end (a kwok
// Stage, testdata/kwok-stage-ignores-sigterm.yaml, as a kubelet ends a
// container that ignores SIGTERM), scaled to 10, and the fault strikes while
// the 40 are Terminating. The status must say 10 while they are and once
// they have ended, no pod may be made, and never fewer than 10 may be Ready.
//
// Two faults take a node away: lost (no heartbeat; the node lifecycle
// controller taints it and its pods are evicted, left Terminating since no
// kubelet confirms their end) and deleted (its pods removed by the pod
// garbage collector). The node comes back once the scenario is over.

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/localcluster"
)

const (
	chaosReplicas   = 50
	chaosScaledDown = 10
	// 25% of 50, rounded up.
	chaosSurge = 13
	// 25% of 50, rounded down.
	chaosUnavailable = 12
	// crashingImage is the image whose containers kwok's stage in
	// testdata/ makes crash.
	crashingImage = "registry.example.com/crashing:1"
	// ignoresSigtermImage is the image whose deleted pods kwok's stage in
	// testdata/ ends only after their grace period (30 s), as a kubelet
	// ends a container that ignores SIGTERM.
	ignoresSigtermImage = "registry.example.com/ignores-sigterm:1"
	// chaosImage is what the matrix's pods run unless a scenario needs
	// one of the images above.
	chaosImage = "registry.example.com/shop:1"
	// convergeTimeout bounds the wait after a fault; missing it fails.
	convergeTimeout = 3 * time.Minute
)

// chaosTemplate is the matrix's pod template, in YAML's flow style: a
// web server's, with a port, probes, a preStop hook and a volume, of the
// kind a chart ships; the matrix runs on templates, as users' PodSets do.
func chaosTemplate(image string) string {
	return `{metadata: {labels: {app.kubernetes.io/name: shop}}, spec: {containers: [{name: web, image: ` + image + `, ` +
		`ports: [{name: http, containerPort: 8080}], readinessProbe: {httpGet: {path: /ready, port: http}}, ` +
		`livenessProbe: {tcpSocket: {port: http}}, lifecycle: {preStop: {exec: {command: [sleep, "1"]}}}, ` +
		`volumeMounts: [{name: cache, mountPath: /var/cache/shop}]}], volumes: [{name: cache, emptyDir: {}}]}}`
}

// spreadOverNodes is template with its pods spread evenly over the nodes
// that take pods (tainted ones left out of the count). Left to the
// scheduler, identical pods without requests may all land on one node, one
// just emptied by the scenario before; spread, the lost node holds a third
// of them whichever node it is, and its pods hold their places beside live
// ones on the other nodes.
func spreadOverNodes(template string) string {
	spread := strings.Replace(template, "spec: {containers:", "spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, "+
		"whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Honor, labelSelector: {matchLabels: {app.kubernetes.io/name: shop}}}], containers:", 1)
	if spread == template {
		panic("spreadOverNodes: the template has no spec.containers to put the constraint before")
	}
	return spread
}

// replicas are the operator's two replicas.
var replicas []*operatorProcess

// The cluster's kwok also runs the stages that make crashingImage's
// containers crash and ignoresSigtermImage's take their whole grace period
// to end.
//
// A lost node is noticed and its pods evicted as in any cluster, on a
// shorter clock: the node lifecycle controller's grace period is 30 s
// (default 50 s) and the tolerations the API server gives every pod for the
// not-ready and unreachable taints are 5 s (default 300 s); the PodSet's
// pods and the reference's get the same ones. kwok renews each node's Lease
// every 3 s, so that the other faults (etcd paused for 10 s, the API server
// restarted) stay well inside the grace period: a node marked unreachable
// marks its pods NotReady, and kwok would never make them Ready again.
func init() {
	clusterOptions = append(clusterOptions, func(o *localcluster.Options) error {
		for _, stage := range []string{"kwok-stage-crashing-image.yaml", "kwok-stage-ignores-sigterm.yaml"} {
			if err := addKwokStage(o, stage); err != nil {
				return err
			}
		}
		o.KwokArgs = append(o.KwokArgs, "--node-lease-duration-seconds=12")
		o.ControllerManagerArgs = append(o.ControllerManagerArgs, "--node-monitor-grace-period=30s")
		o.APIServerArgs = append(o.APIServerArgs, "--default-not-ready-toleration-seconds=5", "--default-unreachable-toleration-seconds=5")
		// For the slow etcd.
		o.EtcdLatencyProxy = true
		return nil
	})
}

func startReplicas(t *testing.T) {
	env.operator.stop()
	for _, name := range []string{"a", "b"} {
		// Through a link named after the replica: client-go puts the
		// program's name in its User-Agent, so the API server's audit log
		// tells the two replicas' requests apart.
		bin := filepath.Join(env.cluster.LogDir(), "manager-"+name)
		_ = os.Remove(bin)
		Expect(os.Symlink(env.operator.bin, bin)).To(Succeed())
		p := &operatorProcess{
			bin:        bin,
			kubeconfig: env.operator.kubeconfig,
			logPath:    filepath.Join(env.cluster.LogDir(), "operator-"+name+".log"),
			args:       []string{"--leader-elect", "--leader-election-namespace=" + env.operatorNS, "--zap-log-level=debug"},
		}
		Expect(p.start()).To(Succeed())
		replicas = append(replicas, p)
	}
	// Play the Deployment: a replica that exits (one that loses its
	// lease exits, as controller-runtime's manager does) is started again.
	ctx, cancel := context.WithCancel(context.Background())
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		for ctx.Err() == nil {
			restartExited()
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-supervised
		for _, p := range replicas {
			p.stop()
		}
		Expect(env.operator.start()).To(Succeed())
	})
	waitForLeader(t, 0)
}

// identity is the leader election identity the replica's current process
// logged at its start, "" if none.
func (o *operatorProcess) identity() string {
	if !o.running() {
		return ""
	}
	f, err := os.Open(o.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	id := ""
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1024*1024), 1024*1024)
	for s.Scan() {
		switch line := s.Text(); {
		case strings.HasPrefix(line, "----- operator started"):
			id = ""
		case strings.Contains(line, `"msg":"leader election"`):
			if m := identityRE.FindStringSubmatch(line); m != nil {
				id = m[1]
			}
		}
	}
	return id
}

var identityRE = regexp.MustCompile(`"identity":"([^"]+)"`)

// pid is the process ID of the replica's current process, 0 if none.
func (o *operatorProcess) pid() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc == nil {
		return 0
	}
	return o.proc.Pid()
}

// waitForLeader waits until a replica process other than notPID leads (a
// killed replica started again is another process and may win), and
// returns it.
func waitForLeader(t *testing.T, notPID int) *operatorProcess {
	var leader *operatorProcess
	Eventually(func() bool {
		// The Lease, not a replica's log, says who leads: a leader
		// resumed after a pause still logs nothing for up to its renew
		// deadline (10 s) before it exits, while another one leads.
		holder := leaseHolder(t.Context())
		for _, p := range replicas {
			if pid := p.pid(); pid != 0 && pid != notPID && holder != "" && p.identity() == holder {
				leader = p
				return true
			}
		}
		return false
	}).WithContext(t.Context()).WithTimeout(2*time.Minute).WithPolling(poll).Should(BeTrue(), "no replica took the lease")
	return leader
}

func currentLeader(t *testing.T) *operatorProcess { return waitForLeader(t, 0) }

// restartExited starts again the replicas that have exited.
func restartExited() {
	for _, p := range replicas {
		if !p.running() {
			if err := p.start(); err != nil {
				fmt.Fprintln(os.Stderr, "restarting a replica:", err)
			}
		}
	}
}

// fault is one row of the matrix. inject runs while the PodSet is mid-way
// and returns when the fault is over.
type fault struct {
	name   string
	inject func(t *testing.T, tg faultTarget)
	// clusterWide faults hit every controller of the cluster, so the
	// reference (a ReplicaSet or Deployment) goes through them too; the
	// others hit only the operator or the PodSet's namespace.
	clusterWide bool
	// midRetreat: the fault also strikes an auto-rollback under way
	// (the "rollback" scenario).
	midRetreat bool
	// midTermination: the fault also strikes a scale-down whose pods
	// take their whole grace period to end (the "scale-down" scenario).
	midTermination bool
	// heldPlaces: the fault also strikes a PodSet at rest under
	// podReplacementPolicy TerminationComplete (the "complete" scenario):
	// the pods it leaves Terminating hold their places until they end.
	heldPlaces bool
}

// faultTarget is what a fault hits: the PodSet, and the reference beside it
// (nil for the faults that are not cluster-wide).
type faultTarget struct {
	ns, name string
	ref      *reference
}

// The faults, in the order they run: the operator's own first, then the
// control plane's, the workload's, and the cluster's around them.
var faults = []fault{
	{"leader SIGKILLed", func(t *testing.T, _ faultTarget) {
		leader := currentLeader(t)
		pid := leader.pid()
		leader.kill()
		waitForLeader(t, pid)
	}, false, true, true, false},
	{"leader SIGSTOPped past its lease, then resumed", func(t *testing.T, _ faultTarget) {
		leader := currentLeader(t)
		Expect(leader.proc.Pause()).To(Succeed())
		waitForLeader(t, leader.pid())
		// The lease (15 s) has passed: another replica leads. Resumed,
		// the old leader must notice it lost the lease before acting.
		Expect(leader.proc.Resume()).To(Succeed())
	}, false, false, false, false},
	{"kube-apiserver killed and restarted", func(t *testing.T, _ faultTarget) {
		Expect(env.cluster.RestartAPIServer(t.Context())).To(Succeed())
	}, true, false, false, false},
	{"pod watch broken (410 Gone, relist), pods deleted meanwhile", func(t *testing.T, tg faultTarget) {
		// The reference goes through the same: kube-controller-manager
		// is paused with the leader, and loses a fifth of its pods too,
		// so that it has to learn of their end from a broken watch.
		// Its time then says what the cluster allows for that (a relist
		// on client-go's backoff, then new pods that the scheduler and
		// kwok must see), not what it takes to do nothing.
		kcm := env.cluster.Component("kube-controller-manager")
		leader := currentLeader(t)
		Expect(leader.proc.Pause()).To(Succeed())
		Expect(kcm.Pause()).To(Succeed())
		deleteFraction(t.Context(), livePods(Default, t.Context(), tg.ns, tg.name), 0.2)
		deleteFraction(t.Context(), tg.ref.livePods(t), 0.2)
		Expect(env.cluster.CompactEtcd(t.Context())).To(Succeed())
		Expect(env.cluster.RestartAPIServer(t.Context())).To(Succeed())
		Expect(kcm.Resume()).To(Succeed())
		Expect(leader.proc.Resume()).To(Succeed())
	}, true, false, false, false},
	{"20% of the pods deleted every 3 s for 30 s", func(t *testing.T, tg faultTarget) {
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(3 * time.Second) {
			deleteFraction(t.Context(), livePods(Default, t.Context(), tg.ns, tg.name), 0.2)
		}
	}, false, false, false, false},
	{"a ResourceQuota flapping between refusing and allowing pods", func(t *testing.T, tg faultTarget) {
		ns := tg.ns
		for i := range 10 {
			pods := int64(1000)
			if i%2 == 0 {
				pods = 5
			}
			setQuota(t, ns, "flap", pods)
			time.Sleep(3 * time.Second)
		}
		Expect(env.admin.Delete(t.Context(), &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flap"}})).To(Succeed())
	}, false, false, false, false},
	{"etcd paused for 10 s", func(t *testing.T, _ faultTarget) {
		etcd := env.cluster.Component("etcd")
		Expect(etcd.Pause()).To(Succeed())
		time.Sleep(10 * time.Second)
		Expect(etcd.Resume()).To(Succeed())
	}, true, false, false, false},
	{"etcd slow: every request 100 ms longer (50 ms each way) for 30 s", func(t *testing.T, _ faultTarget) {
		Expect(env.cluster.SetEtcdLatency(50 * time.Millisecond)).To(Succeed())
		t.Cleanup(func() { _ = env.cluster.SetEtcdLatency(0) })
		time.Sleep(30 * time.Second)
		Expect(env.cluster.SetEtcdLatency(0)).To(Succeed())
	}, true, false, false, false},
	{"API Priority and Fairness squeezing the controllers to 3 seats, excess rejected with 429, for 30 s", func(t *testing.T, _ faultTarget) {
		squeezeFor(t, 30*time.Second)
	}, true, false, false, false},
	{"a node lost (no heartbeat: tainted unreachable, its pods evicted and left Terminating)", func(t *testing.T, tg faultTarget) {
		// The node with the most of the PodSet's pods; the reference's
		// are spread over the same nodes by the same scheduler.
		node := busiestNode(t, tg.ns, tg.name)
		// Registered first: a loss that fails half-way must not leave
		// the node lost for the scenarios after.
		t.Cleanup(func() { restoreNode(node, env.cluster.RestoreNode) })
		Expect(env.cluster.LoseNode(t.Context(), node)).To(Succeed())
		// The clock starts once the control plane has noticed, when the
		// node lifecycle controller taints the node: the grace period
		// before is the cluster's, the same for every controller.
		Eventually(func(g Gomega) {
			n := &corev1.Node{}
			g.Expect(env.admin.Get(t.Context(), client.ObjectKey{Name: node}, n)).To(Succeed())
			g.Expect(n.Spec.Taints).To(ContainElement(HaveField("Key", corev1.TaintNodeUnreachable)))
			// Pods bound there before the NoSchedule taint kept the
			// scheduler away are the lost node's too.
			g.Expect(env.cluster.MarkPodsOfLostNode(t.Context(), node)).To(Succeed())
			g.Expect(n.Spec.Taints).To(ContainElement(And(HaveField("Key", corev1.TaintNodeUnreachable), HaveField("Effect", corev1.TaintEffectNoSchedule))))
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(Succeed())
	}, true, false, false, true},
	{"a node deleted (its pods removed by the pod garbage collector)", func(t *testing.T, tg faultTarget) {
		node := busiestNode(t, tg.ns, tg.name)
		Expect(env.admin.Delete(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})).To(Succeed())
		t.Cleanup(func() { restoreNode(node, env.cluster.RecreateNode) })
		// Until the pod garbage collector deletes them (40 s after the
		// node, a constant of its own), the node's pods are Running and
		// Ready as far as the API says: the clock starts when they go.
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(env.admin.List(t.Context(), &pods, client.MatchingFields{"spec.nodeName": node})).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "pods on the deleted node %s", node)
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(Succeed())
	}, true, false, false, false},
}

// holdPlacesUntilTheNodeIsBack is the "complete" scenario once its node is
// lost: the pods evicted from it stay Terminating, and under
// podReplacementPolicy TerminationComplete none is replaced while they do
// (live and terminating pods stay within replicas for 10 s, and the status
// counts them and says it waits for them). Then the node is brought back,
// its pods end, and the time the replacements take is counted from then,
// which it returns.
func holdPlacesUntilTheNodeIsBack(t *testing.T, ns, name string) time.Time {
	var node string
	Eventually(func(g Gomega) {
		var list corev1.PodList
		g.Expect(env.admin.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels{podSetLabel: name})).To(Succeed())
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				node = p.Spec.NodeName
			}
		}
		g.Expect(node).NotTo(BeEmpty(), "no pod evicted yet")
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(Succeed())
	var held []string
	Eventually(func(g Gomega) {
		held = terminatingPodNames(g, t.Context(), ns, name)
		st := getPodSet(g, t.Context(), ns, name).Status
		g.Expect(st.TerminatingReplicas).To(BeEquivalentTo(len(held)))
		c := meta.FindStatusCondition(st.Conditions, appv1alpha1.ConditionProgressing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("terminating pods are waited for (podReplacementPolicy TerminationComplete)"))
	}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Consistently(func(g Gomega) {
		// The scenario's premise: nothing ends a lost node's pods. A
		// pod gone here was ended by the cluster, not the operator.
		g.Expect(terminatingPodNames(g, t.Context(), ns, name)).To(ContainElements(held),
			"premise broken: a pod of the lost node ended while the node was lost")
		g.Expect(liveOrTerminatingPods(g, t.Context(), ns, name)).To(BeNumerically("<=", chaosReplicas),
			"live and terminating pods above replicas while the evicted pods hold their places")
	}).WithContext(t.Context()).WithTimeout(10 * time.Second).WithPolling(poll).Should(Succeed())
	step("%d pods evicted from lost node %s held their places for 10 s; bringing the node back", len(held), node)
	back := time.Now()
	restoreNode(node, env.cluster.RestoreNode)
	return back
}

// busiestNode is the node with the most of the PodSet's live pods (the
// first node when none is bound yet).
func busiestNode(t *testing.T, ns, name string) string {
	count := map[string]int{}
	busiest := localcluster.NodeName(0)
	for _, p := range livePods(Default, t.Context(), ns, name) {
		if n := p.Spec.NodeName; n != "" {
			if count[n]++; count[n] > count[busiest] {
				busiest = n
			}
		}
	}
	return busiest
}

// restoreNode brings a lost or deleted node back once its scenario is over
// and waits until it is Ready and untainted, so that the next scenario has
// every node again.
func restoreNode(node string, restore func(context.Context, string) error) {
	// t.Context() is done once cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	Expect(restore(ctx, node)).To(Succeed())
	Eventually(func(g Gomega) {
		n := &corev1.Node{}
		g.Expect(env.admin.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
		g.Expect(nodeReady(n)).To(BeTrue(), "node %s Ready", node)
		g.Expect(n.Spec.Taints).To(BeEmpty(), "node %s taints", node)
	}).WithContext(ctx).WithPolling(poll).Should(Succeed())
	// The pods evicted while it was lost end once kwok serves the node
	// again. kwok decides that from its cache of the node's Lease, which
	// may not have its own takeover yet when it first looks at them; those
	// it then skips would stay Terminating for good, and are removed here,
	// as an admin removes the pods of a node that is gone for good.
	terminating := func() []corev1.Pod {
		var pods corev1.PodList
		Expect(env.admin.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node})).To(Succeed())
		return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp == nil })
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(terminating()) > 0 && time.Now().Before(deadline) {
		time.Sleep(poll)
	}
	if left := terminating(); len(left) > 0 {
		step("node %s is back, and %d pods evicted from it are still Terminating: force-deleting them", node, len(left))
		for i := range left {
			Expect(client.IgnoreNotFound(env.admin.Delete(ctx, &left[i], client.GracePeriodSeconds(0)))).To(Succeed())
		}
	}
}

// printPods prints, for a failed test, where each pod of ns stands: its
// node, phase, deletion and the condition that says why it is going.
func printPods(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pods corev1.PodList
	if err := env.admin.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		fmt.Printf("----- the pods of %s: %v\n", ns, err)
		return
	}
	fmt.Printf("----- the pods of %s (%d): name, node, phase, created, deletion timestamp, DisruptionTarget -----\n", ns, len(pods.Items))
	for _, p := range pods.Items {
		deleting, disruption := "-", "-"
		if p.DeletionTimestamp != nil {
			deleting = p.DeletionTimestamp.UTC().Format("15:04:05")
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget {
				disruption = string(c.Status) + "/" + c.Reason
			}
		}
		fmt.Printf("%s %s %s %s %s %s\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.CreationTimestamp.UTC().Format("15:04:05"), deleting, disruption)
	}
}

// printNodes prints, for a failed test, whether each node is Ready and its
// taints.
func printNodes() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	if err := env.admin.List(ctx, &nodes); err != nil {
		fmt.Printf("----- the nodes: %v\n", err)
		return
	}
	fmt.Println("----- the nodes: name, Ready, taints -----")
	for _, n := range nodes.Items {
		var taints []string
		for _, t := range n.Spec.Taints {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
		fmt.Printf("%s %t %s\n", n.Name, nodeReady(&n), strings.Join(taints, ","))
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// liveOrTerminatingPods counts, from one list, the pods of PodSet ns/name
// that are live or terminating: two lists, one for each, would count twice
// a pod evicted between them.
func liveOrTerminatingPods(g Gomega, ctx context.Context, ns, name string) int {
	n := 0
	for _, p := range podSetPods(g, ctx, ns, name) {
		if p.DeletionTimestamp != nil || isLive(&p) {
			n++
		}
	}
	return n
}

// terminatingPodNames names the PodSet's pods being deleted.
func terminatingPodNames(g Gomega, ctx context.Context, ns, name string) []string {
	var names []string
	for _, p := range podSetPods(g, ctx, ns, name) {
		if p.DeletionTimestamp != nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// terminatingPods counts the PodSet's pods being deleted.
func terminatingPods(g Gomega, ctx context.Context, ns, name string) int {
	return len(terminatingPodNames(g, ctx, ns, name))
}

// podSetPods lists the pods labelled for PodSet ns/name, whatever their state.
func podSetPods(g Gomega, ctx context.Context, ns, name string) []corev1.Pod {
	var list corev1.PodList
	g.Expect(env.admin.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{podSetLabel: name})).To(Succeed())
	return list.Items
}

// deleteFraction deletes a random fraction of pods.
func deleteFraction(ctx context.Context, pods []corev1.Pod, fraction float64) {
	rand.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	n := int(float64(len(pods))*fraction + 0.5)
	for _, p := range pods[:n] {
		_ = env.admin.Delete(ctx, &p)
	}
}

// chaosResult is one scenario run.
type chaosResult struct {
	fault, scenario string
	maxLive, bound  int
	// fewestReady is the fewest Ready pods the watch saw at once during
	// a rollback, which must not fall below minReady.
	fewestReady, minReady int
	converge              time.Duration
	// refConverge is the reference's (a ReplicaSet, or a Deployment)
	// time to converge after the same fault; 0 if it did not.
	refConverge time.Duration
	// hasRef: the fault is cluster-wide, and a reference ran through it.
	hasRef bool
}

// expectConverged waits until the PodSet is exactly right: n live pods,
// Running, Ready, controlled by it and on its update revision, no live pod
// of its labels without a controller, and a status that says all of it.
func expectConverged(t *testing.T, ns, name string, n int) {
	Eventually(func(g Gomega) { checkConverged(g, t.Context(), ns, name, n) }).
		WithContext(t.Context()).WithTimeout(convergeTimeout).WithPolling(poll).Should(Succeed())
}

// checkConverged is one look at what expectConverged waits for.
func checkConverged(g Gomega, ctx context.Context, ns, name string, n int) {
	ps := getPodSet(g, ctx, ns, name)
	pods := livePods(g, ctx, ns, name)
	g.Expect(pods).To(HaveLen(n), "live pods")
	names := expectReadyPodsOf(g, ps, pods, ps.Status.UpdateRevision)
	st := ps.Status
	g.Expect(st.ObservedGeneration).To(Equal(ps.Generation))
	for what, got := range map[string]int32{"replicas": st.Replicas, "readyReplicas": st.ReadyReplicas, "availableReplicas": st.AvailableReplicas, "updatedReplicas": st.UpdatedReplicas, "updatedAvailableReplicas": st.UpdatedAvailableReplicas} {
		g.Expect(got).To(BeEquivalentTo(n), "status.%s", what)
	}
	g.Expect(st.PodNames).To(ConsistOf(names))
	g.Expect(conditionStatus(ps, appv1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
	g.Expect(conditionStatus(ps, appv1alpha1.ConditionReplicaFailure)).To(Equal(metav1.ConditionFalse))
}

// expectReadyPodsOf expects every pod to be controlled by ps, Running,
// Ready and of revision rev, and returns their names.
func expectReadyPodsOf(g Gomega, ps *appv1alpha1.PodSet, pods []corev1.Pod, rev string) []string {
	var names []string
	for i := range pods {
		p := &pods[i]
		ref := metav1.GetControllerOf(p)
		g.Expect(ref).NotTo(BeNil(), "pod %s has no controller", p.Name)
		g.Expect(ref.UID).To(Equal(ps.UID), "pod %s", p.Name)
		g.Expect(isRunningAndReady(p)).To(BeTrue(), "pod %s", p.Name)
		g.Expect(ps.Name+"-"+p.Labels[revisionLabel]).To(Equal(rev), "pod %s", p.Name)
		names = append(names, p.Name)
	}
	return names
}

// expectRolledBack waits until the PodSet is back on revision good, rolled
// back from the one its spec asks for: chaosReplicas live pods, Running,
// Ready, controlled by it and of revision good, and a status that records
// the rollback as complete.
func expectRolledBack(t *testing.T, ns, name, good string) {
	Eventually(func(g Gomega) {
		ps := getPodSet(g, t.Context(), ns, name)
		pods := livePods(g, t.Context(), ns, name)
		g.Expect(pods).To(HaveLen(chaosReplicas), "live pods")
		expectReadyPodsOf(g, ps, pods, good)
		st := ps.Status
		g.Expect(st.ObservedGeneration).To(Equal(ps.Generation))
		g.Expect(st.AutoRollback).NotTo(BeNil())
		g.Expect(st.AutoRollback.FailedRevision).To(Equal(st.UpdateRevision))
		g.Expect(st.AutoRollback.Revision).To(Equal(good))
		g.Expect(st.AutoRollback.Complete).To(BeTrue())
		g.Expect(st.LastCompletedRevision).To(Equal(good))
		g.Expect(st.AvailableReplicas).To(BeEquivalentTo(chaosReplicas))
		g.Expect(st.UpdatedReplicas).To(BeZero())
		g.Expect(conditionStatus(ps, appv1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
	}).WithContext(t.Context()).WithTimeout(convergeTimeout).WithPolling(poll).Should(Succeed())
}

// runScenario runs "scale" (0 → 50, fault mid-way, then → 10), "rollout"
// (50 pods to a new template, fault mid-way), "rollback" (50 pods to a
// template that crashes, fault once the rollback began), "scale-down" (50
// → 10, pods that take their grace period to end, fault while they do) or
// "complete" (50 pods at rest under podReplacementPolicy
// TerminationComplete, the fault their only change) with f, or undisturbed
// when f is nil.
func runScenario(t *testing.T, scenario string, f *fault, slug string) chaosResult {
	name := "chaos"
	ns := newNamespace(t, "chaos-"+scenario+"-"+slug, nil)
	// The component logs go with the cluster; keep what the replicas said
	// about this PodSet in the test's output when it fails.
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range replicas {
				r.printLogLinesMentioning(ns, 300)
			}
			printPodAuditTrail(ns)
		}
	})
	// The nodes and pods as the failure found them, before the cleanups
	// (a lost node given back) change them.
	defer func() {
		if t.Failed() {
			printNodes()
			printPods(ns)
		}
	}()
	res := chaosResult{fault: "none (undisturbed)", scenario: scenario, bound: chaosReplicas}
	if f != nil {
		res.fault = f.name
	}
	w := watchPods(t, ns, name)
	start := 0
	if scenario != "scale" {
		start, res.bound = chaosReplicas, chaosReplicas+chaosSurge
	}
	image, extra := chaosImage, ""
	switch scenario {
	case "rollback":
		// minReadySeconds keeps the rollback under way for at least that
		// long after its pods are Ready, so that the fault finds it so.
		extra = "minReadySeconds: 10, updateStrategy: {rollingUpdate: {autoRollback: {}}}, "
		res.minReady = chaosReplicas - chaosUnavailable
	case "scale-down":
		image = ignoresSigtermImage
		res.bound, res.minReady = chaosReplicas, chaosScaledDown
	case "complete":
		extra = "podReplacementPolicy: TerminationComplete, "
		res.bound = chaosReplicas
	}
	template := chaosTemplate(image)
	if scenario == "complete" {
		template = spreadOverNodes(template)
	}
	manifest := fmt.Sprintf("apiVersion: app.example.com/v1alpha1\nkind: PodSet\nmetadata: {name: %s}\nspec: {replicas: %d, %stemplate: %s}\n",
		name, start, extra, template)
	_, _, err := kubectlIn(t.Context(), strings.NewReader(manifest), "apply", "-n", ns, "-f", "-")
	Expect(err).NotTo(HaveOccurred())
	expectConverged(t, ns, name, start)
	good := getPodSet(Default, t.Context(), ns, name).Status.UpdateRevision
	var ref *reference
	refFaultOver := make(chan time.Time, 1)
	if (scenario == "scale" || scenario == "rollout") && (f == nil || f.clusterWide) {
		ref = startReference(t, scenario, slug)
		ref.measure(t.Context(), refFaultOver)
	}

	w.reset()
	began := time.Now()
	if ref != nil {
		Expect(ref.change(t.Context())).To(Succeed())
	}
	switch scenario {
	case "scale":
		mustKubectl(t, "patch", "podset", name, "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, chaosReplicas))
	case "rollout":
		mustKubectl(t, "podset", "rollout", "restart", name, "-n", ns)
	case "rollback":
		mustKubectl(t, "patch", "podset", name, "-n", ns, "--type=json", "-p",
			fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, crashingImage))
	case "scale-down":
		mustKubectl(t, "patch", "podset", name, "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, chaosScaledDown))
	}
	faultOver := began
	if f != nil {
		switch scenario {
		case "scale-down":
			// Mid-termination: the pods to go are deleted and hold on
			// through their grace period.
			Eventually(func(g Gomega) int { return terminatingPods(g, t.Context(), ns, name) }).
				WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(BeNumerically(">=", (chaosReplicas-chaosScaledDown)/2))
		case "complete":
			// At rest: the fault is the change.
		case "rollback":
			// Mid-retreat: the rollback is decided and not complete.
			Eventually(func(g Gomega) {
				rb := getPodSet(g, t.Context(), ns, name).Status.AutoRollback
				g.Expect(rb).NotTo(BeNil())
				g.Expect(rb.Complete).To(BeFalse(), "the rollback completed before the fault")
			}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(Succeed())
		default:
			// Mid-way: once a fifth of the pods are new.
			Eventually(func() int { _, created := w.stats(); return created }).
				WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll / 10).Should(BeNumerically(">=", chaosReplicas/5))
		}
		step("injecting: %s", f.name)
		f.inject(t, faultTarget{ns: ns, name: name, ref: ref})
		faultOver = time.Now()
		step("fault over after %s", faultOver.Sub(began).Round(100*time.Millisecond))
	}
	if scenario == "complete" {
		faultOver = holdPlacesUntilTheNodeIsBack(t, ns, name)
	}
	refFaultOver <- faultOver
	switch scenario {
	case "rollback":
		expectRolledBack(t, ns, name, good)
		res.fewestReady = w.fewestReady()
	case "scale-down":
		// Right while the deleted pods still end: a status that counted
		// them, or a successor that replaced them, fails here.
		Eventually(func(g Gomega) {
			if terminatingPods(g, t.Context(), ns, name) == 0 {
				StopTrying("the deleted pods ended before the status was right").Now()
			}
			checkConverged(g, t.Context(), ns, name, chaosScaledDown)
		}).WithContext(t.Context()).WithTimeout(convergeTimeout).WithPolling(poll).Should(Succeed())
	default:
		expectConverged(t, ns, name, chaosReplicas)
	}
	res.converge = time.Since(faultOver)
	if scenario == "scale-down" {
		// Right as soon as the deletions were sent; it must stay right
		// until the last pod has ended, and no pod may have been made.
		Eventually(func(g Gomega) int { return terminatingPods(g, t.Context(), ns, name) }).
			WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(BeZero())
		expectConverged(t, ns, name, chaosScaledDown)
		res.fewestReady = w.fewestReady()
		_, created := w.stats()
		Expect(created).To(BeZero(), "pods created during a scale-down")
	}
	if ref != nil {
		res.refConverge, res.hasRef = ref.result(t), true
	}
	res.maxLive, _ = w.stats()

	if scenario == "scale" {
		mustKubectl(t, "patch", "podset", name, "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, chaosScaledDown))
		expectConverged(t, ns, name, chaosScaledDown)
		maxLive, _ := w.stats()
		res.maxLive = max(res.maxLive, maxLive)
	}
	// Two records of the live pods, each of which can only miss some:
	// the watch misses what happens while it is broken (it relists in one
	// step, so it never counts a pod twice); the audit log misses a create
	// the API server carried out as it was killed. The bound must hold on
	// both.
	watched := res.maxLive
	audited, err := auditMaxLive(ns)
	if scenario == "complete" {
		// What TerminationComplete bounds: live and terminating pods.
		audited, err = auditMaxRunning(ns)
	}
	Expect(err).NotTo(HaveOccurred())
	Expect(audited).To(BeNumerically(">=", chaosReplicas/2), "the audit log shows too few pods: it is not being read right")
	res.maxLive = max(watched, audited)
	// Gone before its namespace, whose deletion would race the operator.
	mustKubectl(t, "delete", "podset", name, "-n", ns)
	switch scenario {
	case "rollback":
		step("%s / %s: most live pods %d (bound %d; watch %d, audit log %d), fewest Ready %d (bound %d), rolled back %s after the fault", res.fault, scenario,
			res.maxLive, res.bound, watched, audited, res.fewestReady, res.minReady, res.converge.Round(100*time.Millisecond))
		return res
	case "scale-down":
		step("%s / %s: most live pods %d (bound %d; watch %d, audit log %d), fewest Ready %d (bound %d), status right %s after the fault", res.fault, scenario,
			res.maxLive, res.bound, watched, audited, res.fewestReady, res.minReady, res.converge.Round(100*time.Millisecond))
		return res
	case "complete":
		step("%s / %s: most live pods %d by the watch, live and terminating %d by the audit log (bound %d), converged %s after the node came back", res.fault, scenario,
			watched, audited, res.bound, res.converge.Round(100*time.Millisecond))
		return res
	}
	step("%s / %s: most live pods %d (bound %d; watch %d, audit log %d), converged %s after the fault (the %s reference: %s)", res.fault, scenario, res.maxLive, res.bound, watched, audited,
		res.converge.Round(100*time.Millisecond), map[string]string{"scale": "ReplicaSet", "rollout": "Deployment"}[scenario], res.refConverge.Round(100*time.Millisecond))
	return res
}

// TestChaos runs every fault of the matrix CHAOS_RUNS times (default 1);
// CHAOS_FAULTS, a regular expression, narrows it to the faults it matches,
// for tracing one fault alone, and CHAOS_SKIP leaves out those it matches
// (CI runs the matrix as two halves on two clusters at once).
func TestChaos(t *testing.T) {
	RegisterTestingT(t)
	runs, err := strconv.Atoi(envOr("CHAOS_RUNS", "1"))
	Expect(err).NotTo(HaveOccurred(), "CHAOS_RUNS")
	only, err := regexp.Compile(envOr("CHAOS_FAULTS", ""))
	Expect(err).NotTo(HaveOccurred(), "CHAOS_FAULTS")
	var skip *regexp.Regexp
	if s := os.Getenv("CHAOS_SKIP"); s != "" {
		skip, err = regexp.Compile(s)
		Expect(err).NotTo(HaveOccurred(), "CHAOS_SKIP")
	}
	startReplicas(t)
	type row struct{ fault, scenario string }
	var (
		mu      sync.Mutex
		order   []row
		results = map[row][]chaosResult{}
	)
	record := func(r chaosResult) {
		mu.Lock()
		defer mu.Unlock()
		k := row{r.fault, r.scenario}
		if _, ok := results[k]; !ok {
			order = append(order, k)
		}
		results[k] = append(results[k], r)
	}
	baseline, refBaseline := map[string]time.Duration{}, map[string]time.Duration{}
	for _, scenario := range []string{"scale", "rollout"} {
		t.Run("undisturbed/"+scenario, func(t *testing.T) {
			RegisterTestingT(t)
			r := runScenario(t, scenario, nil, "none")
			baseline[scenario], refBaseline[scenario] = r.converge, r.refConverge
			record(r)
			Expect(r.maxLive).To(BeNumerically("<=", r.bound), "live pods above the bound")
		})
	}
	for run := range runs {
		for i := range faults {
			f := &faults[i]
			if !only.MatchString(f.name) || skip != nil && skip.MatchString(f.name) {
				continue
			}
			scenarios := []string{"scale", "rollout"}
			if f.midRetreat {
				scenarios = append(scenarios, "rollback")
			}
			if f.midTermination {
				scenarios = append(scenarios, "scale-down")
			}
			if f.heldPlaces {
				scenarios = append(scenarios, "complete")
			}
			for _, scenario := range scenarios {
				t.Run(f.name+"/"+scenario, func(t *testing.T) {
					RegisterTestingT(t)
					r := runScenario(t, scenario, f, fmt.Sprintf("%d-%d", i, run))
					record(r)
					Expect(r.maxLive).To(BeNumerically("<=", r.bound), "live pods above the bound")
					Expect(r.fewestReady).To(BeNumerically(">=", r.minReady), "Ready pods below the bound")
				})
			}
		}
	}

	// One line per fault and scenario: the most live pods of all its
	// runs, and the slowest convergence, which is what "every run" means;
	// beside it the reference's slowest (ReplicaSet for scale, Deployment
	// for rollout), "—" when it did not converge within the timeout.
	fmt.Println("\n| fault | scenario | runs | most live pods (bound) | PodSet converged after the fault (slowest) | ratio to undisturbed | ReplicaSet or Deployment, same fault | its ratio |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|")
	ratio := func(d, base time.Duration) string {
		if d <= 0 || base <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", d.Seconds()/base.Seconds())
	}
	secs := func(d time.Duration) string {
		if d <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	for _, k := range order {
		rs := results[k]
		worst := rs[0]
		for _, r := range rs[1:] {
			worst.maxLive = max(worst.maxLive, r.maxLive)
			worst.converge = max(worst.converge, r.converge)
			if r.refConverge == 0 || worst.refConverge == 0 {
				worst.refConverge = 0
			} else {
				worst.refConverge = max(worst.refConverge, r.refConverge)
			}
		}
		refSecs, refRatio := "n/a", "n/a"
		if worst.hasRef {
			refSecs, refRatio = secs(worst.refConverge), ratio(worst.refConverge, refBaseline[k.scenario])
		}
		fmt.Printf("| %s | %s | %d | %d (%d) | %s | %s | %s | %s |\n", worst.fault, worst.scenario, len(rs), worst.maxLive, worst.bound,
			secs(worst.converge), ratio(worst.converge, baseline[k.scenario]), refSecs, refRatio)
	}
}
