package main

// The plugin's verbs against a real API server (envtest: kube-apiserver and
// etcd with the PodSet CRD). No operator runs here: the tests write the
// revisions and status the operator would, and check what the plugin reads
// and writes. test/e2e runs the verbs against the operator on a cluster.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/revision"
)

var k8s client.Client

func TestMain(m *testing.M) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		if found, _ := filepath.Glob(filepath.Join("..", "..", "bin", "k8s-*", "kube-apiserver")); len(found) > 0 {
			assets = filepath.Dir(found[len(found)-1])
		}
	}
	if assets == "" {
		fmt.Fprintln(os.Stderr, "the plugin tests need a kube-apiserver and etcd: run `make test` (it sets KUBEBUILDER_ASSETS)")
		os.Exit(1)
	}
	_ = corev1.AddToScheme(scheme) // the tests create namespaces
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		fmt.Fprintf(os.Stderr, "starting envtest: %v\n", err)
		os.Exit(1)
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "client: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// run runs the plugin with args against the test API server in ns.
func run(ns string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	testNamespace = ns
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String() + errOut.String(), err
}

// testNamespace is the namespace the next run works in; every command gets
// the test's client in place of the kubeconfig flags'.
var testNamespace string

func init() {
	newClientHook = func() (client.Client, string, error) { return k8s, testNamespace, nil }
}

func newNS(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// podSetWithHistory creates a PodSet and the revisions the operator would
// have made for these images, oldest first; the PodSet runs the last.
func podSetWithHistory(g Gomega, ns string, images ...string) *appv1alpha1.PodSet {
	ctx := context.Background()
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	ps.Spec.Image = images[len(images)-1]
	ps.Spec.Env = []appv1alpha1.EnvVar{{Name: "MODE", Value: "fast"}}
	g.Expect(k8s.Create(ctx, ps)).To(Succeed())
	for i, image := range images {
		tmpl := revision.FromPodSet(ps)
		tmpl.Image = image
		data, err := revision.Encode(tmpl)
		g.Expect(err).NotTo(HaveOccurred())
		hash := revision.Hash(tmpl, nil)
		cr := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name: revision.Name(ps.Name, hash), Namespace: ns,
				Labels:          map[string]string{appv1alpha1.LabelPodSet: ps.Name, appv1alpha1.LabelRevisionHash: hash},
				Annotations:     map[string]string{appv1alpha1.AnnotationChangeCause: "deploy " + image},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: appv1alpha1.GroupVersion.String(), Kind: "PodSet", Name: ps.Name, UID: ps.UID, Controller: ptr.To(true)}},
			},
			Data:     data,
			Revision: int64(i + 1),
		}
		g.Expect(k8s.Create(ctx, cr)).To(Succeed())
		if i == len(images)-1 {
			ps.Status.UpdateRevision = cr.Name
		}
	}
	g.Expect(k8s.Status().Update(ctx, ps)).To(Succeed())
	return ps
}

func get(g Gomega, ps *appv1alpha1.PodSet) *appv1alpha1.PodSet {
	out := &appv1alpha1.PodSet{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ps), out)).To(Succeed())
	return out
}

func TestHistoryListsRevisions(t *testing.T) {
	g := NewWithT(t)
	ns := newNS(t)
	podSetWithHistory(g, ns, "example.com/web:1", "example.com/web:2")

	out, err := run(ns, "rollout", "history", "web")
	g.Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(lines).To(HaveLen(4), out)
	g.Expect(lines[1]).To(MatchRegexp(`^REVISION\s+CHANGE-CAUSE\s+IMAGE`))
	g.Expect(lines[2]).To(MatchRegexp(`^1\s+deploy example.com/web:1\s+example.com/web:1\s+web-\w+$`))
	g.Expect(lines[3]).To(MatchRegexp(`^2\s+deploy example.com/web:2\s+example.com/web:2\s+web-\w+ \(current\)$`))

	out, err = run(ns, "rollout", "history", "web", "--revision=1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("with revision #1"))
	g.Expect(out).To(ContainSubstring("image: example.com/web:1"))
	g.Expect(out).To(ContainSubstring("name: MODE"))

	out, err = run(ns, "rollout", "history", "web", "-o", "jsonpath={.items[*].revision}")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("1 2"))

	_, err = run(ns, "rollout", "history", "web", "--revision=7")
	g.Expect(err).To(MatchError(ContainSubstring("no revision 7")))
}

func TestUndo(t *testing.T) {
	g := NewWithT(t)
	ns := newNS(t)
	ps := podSetWithHistory(g, ns, "example.com/web:1", "example.com/web:2", "example.com/web:3")

	out, err := run(ns, "rollout", "undo", "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("rolled back to revision 2"))
	g.Expect(get(g, ps).Spec.Image).To(Equal("example.com/web:2"))
	g.Expect(get(g, ps).Spec.Env).To(HaveLen(1), "fields the revision has are kept")

	out, err = run(ns, "rollout", "undo", "web", "--to-revision=1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("rolled back to revision 1"))
	g.Expect(get(g, ps).Spec.Image).To(Equal("example.com/web:1"))

	out, err = run(ns, "rollout", "undo", "web", "--to-revision=1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("skipped rollback"))

	_, err = run(ns, "rollout", "undo", "web", "--to-revision=9")
	g.Expect(err).To(MatchError(ContainSubstring("no revision 9")))
}

func TestPauseResumeRestart(t *testing.T) {
	g := NewWithT(t)
	ns := newNS(t)
	ps := podSetWithHistory(g, ns, "example.com/web:1")

	out, err := run(ns, "rollout", "pause", "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("podset.app.example.com/web paused\n"))
	g.Expect(get(g, ps).Spec.UpdateStrategy.RollingUpdate.Paused).To(BeTrue())
	g.Expect(get(g, ps).Spec.UpdateStrategy.RollingUpdate.MaxSurge).NotTo(BeNil(), "the API server defaults the rest")
	_, err = run(ns, "rollout", "pause", "web")
	g.Expect(err).To(MatchError(ContainSubstring(`"web" is already paused`)))

	_, err = run(ns, "rollout", "restart", "web")
	g.Expect(err).To(MatchError(ContainSubstring("can't restart paused podset")))

	_, err = run(ns, "rollout", "resume", "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(get(g, ps).Spec.UpdateStrategy.RollingUpdate.Paused).To(BeFalse())
	_, err = run(ns, "rollout", "resume", "web")
	g.Expect(err).To(MatchError(ContainSubstring(`"web" is not paused`)))

	// Only a RollingUpdate pauses.
	g.Expect(k8s.Patch(context.Background(), get(g, ps), client.RawPatch(client.Merge.Type(),
		[]byte(`{"spec":{"updateStrategy":{"type":"Recreate","rollingUpdate":null}}}`)))).To(Succeed())
	_, err = run(ns, "rollout", "pause", "web")
	g.Expect(err).To(MatchError(ContainSubstring(`podset "web" uses the Recreate update strategy: only a RollingUpdate rollout can be paused`)))
	g.Expect(k8s.Patch(context.Background(), get(g, ps), client.RawPatch(client.Merge.Type(),
		[]byte(`{"spec":{"updateStrategy":{"type":"RollingUpdate"}}}`)))).To(Succeed())

	_, err = run(ns, "rollout", "restart", "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(get(g, ps).Spec.PodAnnotations).To(HaveKey(annotationRestartedAt))
}

func TestStatusExitsNonZeroWhenTheDeadlinePassed(t *testing.T) {
	g := NewWithT(t)
	ns := newNS(t)
	ps := podSetWithHistory(g, ns, "example.com/web:1")
	ps = get(g, ps)
	ps.Status.ObservedGeneration = ps.Generation
	ps.Status.Conditions = []metav1.Condition{{
		Type: appv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: appv1alpha1.ReasonProgressDeadlineExceeded,
		Message: "no progress for 10m0s", LastTransitionTime: metav1.Now(),
	}}
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())

	_, err := run(ns, "rollout", "status", "web", "--timeout=5s")
	g.Expect(err).To(MatchError(errRolloutFailed))
	g.Expect(err.Error()).To(ContainSubstring("exceeded its progress deadline"))

	ps = get(g, ps)
	ps.Status.Conditions[0].Status, ps.Status.Conditions[0].Reason = metav1.ConditionTrue, appv1alpha1.ReasonNewRevisionAvailable
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())
	out, err := run(ns, "rollout", "status", "web", "--timeout=5s")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("podset \"web\" successfully rolled out\n"))
}

// TestRetry: `rollout retry` asks for the failed revision again only once
// auto-rollback is done with it, naming that rollback in the annotation the
// operator reads.
func TestRetry(t *testing.T) {
	g := NewWithT(t)
	ns := newNS(t)
	ps := podSetWithHistory(g, ns, "example.com/web:1", "example.com/web:2")

	_, err := run(ns, "rollout", "retry", "web")
	g.Expect(err).To(MatchError(ContainSubstring("has not been rolled back")))

	ps = get(g, ps)
	rolledBackAt := metav1.NewTime(time.Date(2026, 11, 28, 7, 1, 2, 0, time.UTC))
	ps.Status.AutoRollback = &appv1alpha1.AutoRollbackStatus{FailedRevision: ps.Status.UpdateRevision, Trigger: "RestartLimit", Time: rolledBackAt}
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())
	_, err = run(ns, "rollout", "retry", "web")
	g.Expect(err).To(MatchError(ContainSubstring("no completed revision to return to")))

	ps = get(g, ps)
	ps.Status.AutoRollback.Revision = "web-previous"
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())
	_, err = run(ns, "rollout", "retry", "web")
	g.Expect(err).To(MatchError(ContainSubstring("is still rolling back")))
	g.Expect(get(g, ps).Annotations).NotTo(HaveKey(appv1alpha1.AnnotationRolloutRetry))

	ps = get(g, ps)
	ps.Status.AutoRollback.Complete = true
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())
	ps = get(g, ps)
	ps.Annotations = map[string]string{appv1alpha1.AnnotationRolloutAbort: ps.Status.UpdateRevision, appv1alpha1.AnnotationRolloutPromote: ps.Status.UpdateRevision + "/1"}
	g.Expect(k8s.Update(context.Background(), ps)).To(Succeed())
	out, err := run(ns, "rollout", "retry", "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("podset.app.example.com/web retrying revision " + ps.Status.UpdateRevision + "\n"))
	g.Expect(get(g, ps).Annotations).To(HaveKeyWithValue(appv1alpha1.AnnotationRolloutRetry, ps.Status.UpdateRevision+"@2026-11-28T07:01:02Z"))
	g.Expect(get(g, ps).Annotations).NotTo(HaveKey(appv1alpha1.AnnotationRolloutAbort), "a retry clears the canary's abort")
	g.Expect(get(g, ps).Annotations).NotTo(HaveKey(appv1alpha1.AnnotationRolloutPromote), "and its promotions")

	ps = get(g, ps)
	ps.Status.UpdateRevision = "web-newer"
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())
	_, err = run(ns, "rollout", "retry", "web")
	g.Expect(err).To(MatchError(ContainSubstring("the spec asks for revision web-newer")))
}

func TestPromoteAndAbort(t *testing.T) {
	g := NewWithT(t)
	ns := newNS(t)
	ps := podSetWithHistory(g, ns, "example.com/web:1", "example.com/web:2")

	_, err := run(ns, "rollout", "promote", "web")
	g.Expect(err).To(MatchError(ContainSubstring("has no canary steps")))
	_, err = run(ns, "rollout", "abort", "web")
	g.Expect(err).To(MatchError(ContainSubstring("the operator has not observed its spec yet")))
	ps = get(g, ps)
	ps.Status.ObservedGeneration = ps.Generation
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())
	_, err = run(ns, "rollout", "abort", "web")
	g.Expect(err).To(MatchError(ContainSubstring("no revision has completed yet")))

	ps = get(g, ps)
	ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{Canary: &appv1alpha1.Canary{Steps: []appv1alpha1.CanaryStep{
		{UpdatedReplicas: ptr.To[int32](1)}, {Pause: &appv1alpha1.CanaryPause{}}, {UpdatedPercent: ptr.To[int32](50)},
	}}}
	g.Expect(k8s.Update(context.Background(), ps)).To(Succeed())
	ps = get(g, ps)
	update := ps.Status.UpdateRevision
	ps.Status.ObservedGeneration = ps.Generation
	_, err = run(ns, "rollout", "promote", "web")
	g.Expect(err).To(MatchError(ContainSubstring("has no canary rollout under way")))

	ps.Status.LastCompletedRevision = "web-previous"
	ps.Status.Canary = &appv1alpha1.CanaryStatus{Revision: update, Step: 1, StepStartTime: metav1.Now(), Message: "step 2 of 3: paused until promoted"}
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())
	out, err := run(ns, "rollout", "promote", "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("podset.app.example.com/web promoted: step 2 of 3 of revision " + update + "\n"))
	g.Expect(get(g, ps).Annotations).To(HaveKeyWithValue(appv1alpha1.AnnotationRolloutPromote, update+"/1"))
	out, err = run(ns, "rollout", "promote", "web", "--full")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("promoted: every remaining step"))
	g.Expect(get(g, ps).Annotations).To(HaveKeyWithValue(appv1alpha1.AnnotationRolloutPromote, update+"/full"))

	out, err = run(ns, "rollout", "abort", "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("podset.app.example.com/web aborting revision " + update + ": rolling back to web-previous\n"))
	g.Expect(get(g, ps).Annotations).To(HaveKeyWithValue(appv1alpha1.AnnotationRolloutAbort, update))

	ps = get(g, ps)
	ps.Status.AutoRollback = &appv1alpha1.AutoRollbackStatus{FailedRevision: update, Revision: "web-previous", Trigger: "Aborted", Time: metav1.Now()}
	ps.Status.Canary.Step = 3
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())
	_, err = run(ns, "rollout", "abort", "web")
	g.Expect(err).To(MatchError(ContainSubstring("was already rolled back (Aborted)")))
	_, err = run(ns, "rollout", "promote", "web")
	g.Expect(err).To(MatchError(ContainSubstring("every step of the rollout to revision " + update + " is done")))

	// Every step done, the rollout waiting for its background analysis:
	// only --full promotes it.
	ps = get(g, ps)
	ps.Spec.UpdateStrategy.RollingUpdate.Canary.BackgroundAnalysis = &appv1alpha1.Analysis{Query: "up", FailureCondition: "result < 1.0"}
	g.Expect(k8s.Update(context.Background(), ps)).To(Succeed())
	ps.Status.AutoRollback, ps.Status.ObservedGeneration = nil, ps.Generation
	g.Expect(k8s.Status().Update(context.Background(), ps)).To(Succeed())
	_, err = run(ns, "rollout", "promote", "web")
	g.Expect(err).To(MatchError(ContainSubstring("--full ends the wait for, or a hold of, the background analysis")))
	out, err = run(ns, "rollout", "promote", "web", "--full")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("promoted: every remaining step"))
}

// rolledBack makes ps's Progressing condition False, as auto-rollback
// leaves it.
func rolledBack(ps *appv1alpha1.PodSet) *appv1alpha1.PodSet {
	ps.Status.Conditions[0].Status = metav1.ConditionFalse
	ps.Status.Conditions[0].Message = "revision web-2 failed (RestartLimit: ...)"
	return ps
}

func TestRolloutStatusMessages(t *testing.T) {
	mk := func(replicas, partition int32, st appv1alpha1.PodSetStatus, reason string) *appv1alpha1.PodSet {
		ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2}}
		ps.Spec.Replicas = ptr.To(replicas)
		ps.Spec.UpdateStrategy.RollingUpdate = &appv1alpha1.RollingUpdate{Partition: ptr.To(partition)}
		st.ObservedGeneration = 2
		st.Conditions = []metav1.Condition{{Type: appv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason}}
		ps.Status = st
		return ps
	}
	for _, tc := range []struct {
		name    string
		ps      *appv1alpha1.PodSet
		want    string
		done    bool
		wantErr string
	}{
		{"spec not observed", &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}}, "Waiting for podset spec update to be observed...", false, ""},
		{"updating", mk(4, 0, appv1alpha1.PodSetStatus{Replicas: 5, UpdatedReplicas: 2}, "RollingUpdate"),
			`Waiting for podset "web" rollout to finish: 2 out of 4 new replicas have been updated...`, false, ""},
		{"partition lowers the target", mk(4, 3, appv1alpha1.PodSetStatus{Replicas: 5, UpdatedReplicas: 0}, "RollingUpdate"),
			`Waiting for podset "web" rollout to finish: 0 out of 1 new replicas have been updated...`, false, ""},
		{"old pods terminating", mk(4, 0, appv1alpha1.PodSetStatus{Replicas: 5, UpdatedReplicas: 4}, "RollingUpdate"),
			`Waiting for podset "web" rollout to finish: 1 old replicas are pending termination...`, false, ""},
		{"availability", mk(4, 0, appv1alpha1.PodSetStatus{Replicas: 4, UpdatedReplicas: 4, UpdatedAvailableReplicas: 3}, "RollingUpdate"),
			`Waiting for podset "web" rollout to finish: 3 of 4 updated replicas are available...`, false, ""},
		{"done", mk(4, 0, appv1alpha1.PodSetStatus{Replicas: 4, UpdatedReplicas: 4, UpdatedAvailableReplicas: 4}, "NewRevisionAvailable"),
			`podset "web" successfully rolled out`, true, ""},
		{"done, pods still terminating", mk(4, 0, appv1alpha1.PodSetStatus{Replicas: 4, UpdatedReplicas: 4, UpdatedAvailableReplicas: 4, TerminatingReplicas: 2}, "NewRevisionAvailable"),
			`podset "web" successfully rolled out (2 pods still terminating)`, true, ""},
		{"paused", mk(4, 0, appv1alpha1.PodSetStatus{Replicas: 4, UpdatedReplicas: 1}, "Paused"), "", false, "is paused (1 of 4 pods updated)"},
		{"recreate waiting for the old pods", withMessage(mk(4, 0, appv1alpha1.PodSetStatus{TerminatingReplicas: 4}, appv1alpha1.ReasonWaitingForOldPods), "Recreate: 4 pods of older revisions are left (4 of them terminating)"),
			`Waiting for podset "web" rollout to finish: Recreate: 4 pods of older revisions are left (4 of them terminating)...`, false, ""},
		{"named pods to delete", withMessage(mk(4, 0, appv1alpha1.PodSetStatus{Replicas: 5, UpdatedReplicas: 5}, appv1alpha1.ReasonDeletingNamedPods), "1 pods named in spec.scaleStrategy.podsToDelete are left to delete; 5 pods exist, 4 wanted, 5 available"),
			`Waiting for podset "web" rollout to finish: 1 pods named in spec.scaleStrategy.podsToDelete are left to delete; 5 pods exist, 4 wanted, 5 available...`, false, ""},
		{"rolled back", rolledBack(mk(4, 0, appv1alpha1.PodSetStatus{Replicas: 4}, appv1alpha1.ReasonRolledBack)), "", false,
			`podset "web": revision web-2 failed (RestartLimit: ...) (RolledBack; apply a fixed template, or ` + "`kubectl podset rollout retry web`" + ` once the rollback is done): rollout failed`},
		{"rollback stopped", rolledBack(mk(4, 0, appv1alpha1.PodSetStatus{Replicas: 4}, appv1alpha1.ReasonRollbackStopped)), "", false,
			`(RollbackStopped; apply a fixed template`},
		{"canary pause", mk(4, 0, canaryAt("step 2 of 3: paused until promoted"), appv1alpha1.ReasonCanaryPaused),
			`Waiting for podset "web" rollout to finish: step 2 of 3: paused until promoted; ` + "`kubectl podset rollout promote web`" + ` ends the pause`, false, ""},
		{"canary analysis", mk(4, 0, withRun(canaryAt("step 2 of 3: analysis Running")), appv1alpha1.ReasonCanaryStep),
			`Waiting for podset "web" rollout to finish: step 2 of 3: analysis Running (analysis Running: 1 successful, 0 failed, 0 inconclusive, 0 errors; last Successful: 0.001 met successCondition "result < 0.01")...`, false, ""},
		{"canary hold", mk(4, 0, canaryAt("step 2 of 3: analysis Error"), appv1alpha1.ReasonAnalysisError),
			`Waiting for podset "web" rollout to finish: step 2 of 3: analysis Error; held (AnalysisError) until ` + "`kubectl podset rollout promote web` or `abort web`", false, ""},
		{"canary held by its background analysis", mk(4, 0, withBackgroundHold(canaryAt("step 2 of 3: paused until promoted; held by the background analysis")), appv1alpha1.ReasonAnalysisError),
			`Waiting for podset "web" rollout to finish: step 2 of 3: paused until promoted; held by the background analysis (background analysis Error: 0 successful, 0 failed, 0 inconclusive, 5 errors); held (AnalysisError) until ` + "`kubectl podset rollout promote --full web` or `abort web`", false, ""},
		{"canary that cannot run", rolledBack(mk(4, 0, canaryAt("cannot run"), appv1alpha1.ReasonInvalidAnalysis)), "", false,
			`: rollout failed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			msg, done, err := rolloutStatus(tc.ps)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(msg).To(Equal(tc.want))
			g.Expect(done).To(Equal(tc.done))
		})
	}
}

// canaryAt is a status whose canary for revision web-2 is at its second
// step, waiting for message.
func canaryAt(message string) appv1alpha1.PodSetStatus {
	return appv1alpha1.PodSetStatus{Replicas: 4, UpdatedReplicas: 1, UpdateRevision: "web-2",
		Canary: &appv1alpha1.CanaryStatus{Revision: "web-2", Step: 1, Message: message}}
}

// withBackgroundHold adds a background run held on its errors.
func withBackgroundHold(st appv1alpha1.PodSetStatus) appv1alpha1.PodSetStatus {
	st.Canary.Analyses = append(st.Canary.Analyses, appv1alpha1.AnalysisRunStatus{Name: "background", Phase: "Error", Errors: 5})
	return st
}

// withRun adds a run of the current step's analysis with one measurement.
func withRun(st appv1alpha1.PodSetStatus) appv1alpha1.PodSetStatus {
	st.Canary.Analyses = []appv1alpha1.AnalysisRunStatus{{
		Name: fmt.Sprintf("steps[%d]", st.Canary.Step), Phase: "Running", Successful: 1,
		Measurements: []appv1alpha1.Measurement{{Phase: "Successful", Value: "0.001", Message: `0.001 met successCondition "result < 0.01"`}},
	}}
	return st
}

// withMessage sets the message of ps's Progressing condition.
func withMessage(ps *appv1alpha1.PodSet, msg string) *appv1alpha1.PodSet {
	ps.Status.Conditions[0].Message = msg
	return ps
}
