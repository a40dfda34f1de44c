package rolloutstate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand/operandtest"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/rollout"
	"github.com/example/podset-operator/controllers/rolloutstate"
	"github.com/example/podset-operator/controllers/slimpod"
)

// world is a PodSet "web" whose template moved from image v1 (revision 1)
// to v2 (revision 2), with both revisions stored.
type world struct {
	ps       *appv1alpha1.PodSet
	v1, v2   *appsv1.ControllerRevision
	revision revision.State
}

func newWorld(t *testing.T, replicas int32, strategy appv1alpha1.RollingUpdate) world {
	t.Helper()
	ps := operandtest.PodSet(replicas)
	ps.Spec.UpdateStrategy.RollingUpdate = &strategy
	w := world{ps: ps, v1: storedRevision(t, ps, "img:v1", 1), v2: storedRevision(t, ps, "img:v2", 2)}
	w.revision = revision.State{All: []*appsv1.ControllerRevision{w.v1, w.v2}}
	w.revision.Update, w.revision.UpdateHash = w.v2, revision.HashOf(w.v2)
	w.revision.UpdateTemplate, _ = w.revision.Template(w.revision.UpdateHash)
	w.revision.Current, w.revision.CurrentHash = w.v1, revision.HashOf(w.v1)
	w.revision.CurrentTemplate, _ = w.revision.Template(w.revision.CurrentHash)
	ps.Spec.Image = "img:v2"
	return w
}

// onlyUpdate is w's revisions with revision 1 deleted.
func onlyUpdate(w world) revision.State {
	rs := revision.State{All: []*appsv1.ControllerRevision{w.v2}, Update: w.v2, Current: w.v2, UpdateHash: revision.HashOf(w.v2), CurrentHash: revision.HashOf(w.v2)}
	rs.UpdateTemplate, _ = rs.Template(rs.UpdateHash)
	rs.CurrentTemplate = rs.UpdateTemplate
	return rs
}

func storedRevision(t *testing.T, ps *appv1alpha1.PodSet, image string, n int64) *appsv1.ControllerRevision {
	t.Helper()
	p := ps.DeepCopy()
	p.Spec.Image = image
	tmpl := revision.FromPodSet(p)
	data, err := revision.Encode(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	hash := revision.Hash(tmpl, nil)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: revision.Name(ps.Name, hash), Labels: map[string]string{appv1alpha1.LabelRevisionHash: hash}},
		Data:       data,
		Revision:   n,
	}
}

// pod is a pod of revision cr, available unless an option says otherwise.
func pod(name string, cr *appsv1.ControllerRevision, opts ...operandtest.Option) *slimpod.Pod {
	base := []operandtest.Option{
		operandtest.WithLabels(map[string]string{appv1alpha1.LabelRevisionHash: revision.HashOf(cr)}),
		operandtest.ReadySince(operandtest.Now.Add(-time.Hour)),
	}
	return operandtest.Pod(name, append(base, opts...)...)
}

// notReady turns the pod's Ready condition False.
func notReady() operandtest.Option {
	return func(p *slimpod.Pod) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
	}
}

func gated() operandtest.Option {
	return func(p *slimpod.Pod) {
		p.Extra = slimpod.NewExtra(slices.Concat(p.ReadinessGates(), []corev1.PodReadinessGate{{ConditionType: appv1alpha1.PodConditionInPlaceUpdateReady}}), p.Containers(), p.ObservedGeneration())
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: appv1alpha1.PodConditionInPlaceUpdateReady, Status: corev1.ConditionTrue})
	}
}

func names(pods []*slimpod.Pod) string {
	var n []string
	for _, p := range pods {
		n = append(n, p.Name)
	}
	return strings.Join(n, ",")
}

var (
	noSurge   = appv1alpha1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	inPlace   = appv1alpha1.RollingUpdate{PodUpdatePolicy: appv1alpha1.InPlaceIfPossiblePodUpdatePolicy}
	inPlaceOn = appv1alpha1.RollingUpdate{PodUpdatePolicy: appv1alpha1.InPlaceOnlyPodUpdatePolicy, MaxUnavailable: ptr.To(intstr.FromInt32(1))}
)

// Of sorts the live pods by revision and counts them for the arithmetic;
// Complete is true only when every wanted pod runs the update revision
// (partition of them the old one), available.
func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name              string
		replicas          int32
		strategy          appv1alpha1.RollingUpdate
		rollingBack       bool
		pods              func(w world) []*slimpod.Pod
		updated, old      string
		wantUpdated       rollout.Group
		wantOld           rollout.Group
		wantCanCreateOld  bool
		wantComplete      bool
		wantPartitionUsed int
	}{
		{
			name: "all on the update revision, available", replicas: 2, strategy: noSurge,
			pods:        func(w world) []*slimpod.Pod { return []*slimpod.Pod{pod("a", w.v2), pod("b", w.v2)} },
			updated:     "a,b",
			wantUpdated: rollout.Group{Live: 2, Available: 2}, wantCanCreateOld: true, wantComplete: true,
		},
		{
			name: "one old pod left", replicas: 2, strategy: noSurge,
			pods:    func(w world) []*slimpod.Pod { return []*slimpod.Pod{pod("a", w.v2), pod("b", w.v1)} },
			updated: "a", old: "b",
			wantUpdated: rollout.Group{Live: 1, Available: 1}, wantOld: rollout.Group{Live: 1, Available: 1}, wantCanCreateOld: true,
		},
		{
			name: "a new pod not yet ready", replicas: 2, strategy: noSurge,
			pods:        func(w world) []*slimpod.Pod { return []*slimpod.Pod{pod("a", w.v2), pod("b", w.v2, notReady())} },
			updated:     "a,b",
			wantUpdated: rollout.Group{Live: 2, Available: 1}, wantCanCreateOld: true,
		},
		{
			name: "terminating and failed pods count for nothing", replicas: 1, strategy: noSurge,
			pods: func(w world) []*slimpod.Pod {
				return []*slimpod.Pod{pod("a", w.v2), pod("b", w.v1, operandtest.TerminatingSince(operandtest.Now)), pod("c", w.v1, operandtest.InPhase(corev1.PodFailed))}
			},
			updated:     "a",
			wantUpdated: rollout.Group{Live: 1, Available: 1}, wantCanCreateOld: true, wantComplete: true,
		},
		{
			name: "partition keeps an old pod: complete", replicas: 2,
			strategy: appv1alpha1.RollingUpdate{Partition: ptr.To[int32](1)},
			pods:     func(w world) []*slimpod.Pod { return []*slimpod.Pod{pod("a", w.v2), pod("b", w.v1)} },
			updated:  "a", old: "b",
			wantUpdated: rollout.Group{Live: 1, Available: 1}, wantOld: rollout.Group{Live: 1, Available: 1}, wantCanCreateOld: true,
			wantComplete: true, wantPartitionUsed: 1,
		},
		{
			name: "rolling back ignores partition: not complete", replicas: 2, rollingBack: true,
			strategy: appv1alpha1.RollingUpdate{Partition: ptr.To[int32](1)},
			pods:     func(w world) []*slimpod.Pod { return []*slimpod.Pod{pod("a", w.v2), pod("b", w.v1)} },
			updated:  "a", old: "b",
			wantUpdated: rollout.Group{Live: 1, Available: 1}, wantOld: rollout.Group{Live: 1, Available: 1}, wantCanCreateOld: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.replicas, tc.strategy)
			w.revision.RollingBack = tc.rollingBack
			st, err := rolloutstate.Of(w.ps, &w.revision, rolloutstate.Cluster{}, tc.pods(w), operandtest.Now)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(st.Updated); got != tc.updated {
				t.Errorf("Updated = %q, want %q", got, tc.updated)
			}
			if got := names(st.Old); got != tc.old {
				t.Errorf("Old = %q, want %q", got, tc.old)
			}
			if st.Input.Updated != tc.wantUpdated || st.Input.Old != tc.wantOld {
				t.Errorf("groups = %+v / %+v, want %+v / %+v", st.Input.Updated, st.Input.Old, tc.wantUpdated, tc.wantOld)
			}
			if st.Input.CanCreateOld != tc.wantCanCreateOld {
				t.Errorf("CanCreateOld = %v, want %v", st.Input.CanCreateOld, tc.wantCanCreateOld)
			}
			if st.Input.Strategy.Partition != tc.wantPartitionUsed {
				t.Errorf("Partition = %d, want %d", st.Input.Strategy.Partition, tc.wantPartitionUsed)
			}
			if got := st.Complete(); got != tc.wantComplete {
				t.Errorf("Complete() = %v, want %v", got, tc.wantComplete)
			}
		})
	}
}

// A strategy that does not resolve is an error that names the field.
func TestOfNamesTheStrategyField(t *testing.T) {
	w := newWorld(t, 3, appv1alpha1.RollingUpdate{MaxSurge: ptr.To(intstr.FromString("many"))})
	_, err := rolloutstate.Of(w.ps, &w.revision, rolloutstate.Cluster{}, nil, operandtest.Now)
	if err == nil || !strings.Contains(err.Error(), "spec.updateStrategy.rollingUpdate") {
		t.Fatalf("err = %v, want one naming spec.updateStrategy.rollingUpdate", err)
	}
}

// Recreate counts the old pods that are terminating, which it waits for,
// and resolves to no surge; recreate set beside another type is an error
// that names the field.
func TestOfRecreate(t *testing.T) {
	w := newWorld(t, 2, appv1alpha1.RollingUpdate{})
	w.ps.Spec.UpdateStrategy = appv1alpha1.UpdateStrategy{Type: appv1alpha1.RecreateStrategyType}
	pods := []*slimpod.Pod{
		pod("a", w.v1), pod("b", w.v1, operandtest.TerminatingSince(operandtest.Now)),
		pod("c", w.v2, operandtest.TerminatingSince(operandtest.Now)), pod("d", w.v1, operandtest.InPhase(corev1.PodFailed)),
	}
	st, err := rolloutstate.Of(w.ps, &w.revision, rolloutstate.Cluster{}, pods, operandtest.Now)
	if err != nil {
		t.Fatal(err)
	}
	if st.Input.OldTerminating != 1 || st.Input.Old.Live != 1 || !st.Input.Strategy.Recreate || st.Input.Strategy.MaxSurge != 0 {
		t.Errorf("input = %+v, want one old pod live, one terminating, Recreate without surge", st.Input)
	}
	if plan := st.Input; rollout.Step(plan).CreateUpdated != 0 {
		t.Errorf("a pod is created while old ones are left")
	}

	w.ps.Spec.UpdateStrategy = appv1alpha1.UpdateStrategy{Recreate: &appv1alpha1.RecreateUpdate{}}
	_, err = rolloutstate.Of(w.ps, &w.revision, rolloutstate.Cluster{}, nil, operandtest.Now)
	if err == nil || !strings.Contains(err.Error(), "spec.updateStrategy.recreate may only be set when type is Recreate, not RollingUpdate") {
		t.Fatalf("err = %v, want one naming spec.updateStrategy.recreate", err)
	}
}

// Under an in-place policy, the old pods that carry the gate and whose
// revision's template differs only in the image move in place; the others
// are kept (InPlaceOnly) with the reason of the first by name.
func TestInPlaceMoves(t *testing.T) {
	for _, tc := range []struct {
		name      string
		strategy  appv1alpha1.RollingUpdate
		pods      func(w world) []*slimpod.Pod
		unstored  bool
		wantMoves string
		wantKept  string
		wantOldIP rollout.Group
	}{
		{
			name: "gated old pods move", strategy: inPlace,
			pods:      func(w world) []*slimpod.Pod { return []*slimpod.Pod{pod("a", w.v1, gated()), pod("b", w.v1, gated())} },
			wantMoves: "a,b", wantOldIP: rollout.Group{Live: 2, Available: 2},
		},
		{
			name: "a pod without the gate is kept, and named", strategy: inPlaceOn,
			pods: func(w world) []*slimpod.Pod {
				return []*slimpod.Pod{pod("b", w.v1), pod("a", w.v1, gated()), pod("c", w.v1)}
			},
			wantMoves: "a", wantKept: "pod b: made without the in-place readiness gate", wantOldIP: rollout.Group{Live: 1, Available: 1},
		},
		{
			name: "a pod of an unstored revision is kept", strategy: inPlaceOn, unstored: true,
			pods:     func(w world) []*slimpod.Pod { return []*slimpod.Pod{pod("a", w.v1, gated())} },
			wantKept: "pod a: its revision is not stored",
		},
		{
			name: "ReCreate moves nothing", strategy: noSurge,
			pods: func(w world) []*slimpod.Pod { return []*slimpod.Pod{pod("a", w.v1, gated())} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 2, tc.strategy)
			pods := tc.pods(w)
			if tc.unstored {
				w.revision = onlyUpdate(w)
			}
			st, err := rolloutstate.Of(w.ps, &w.revision, rolloutstate.Cluster{}, pods, operandtest.Now)
			if err != nil {
				t.Fatal(err)
			}
			var moved []*slimpod.Pod
			for _, p := range st.Old {
				if mv, ok := st.Moves[p.UID]; ok {
					if mv.Pod != p || mv.Change.NotInPlace != "" {
						t.Errorf("move of %s = %+v", p.Name, mv)
					}
					moved = append(moved, p)
				}
			}
			if got := names(moved); got != tc.wantMoves {
				t.Errorf("moves = %q, want %q", got, tc.wantMoves)
			}
			if got := st.FirstKeptInPlace(); !strings.HasPrefix(got, tc.wantKept) || (tc.wantKept == "") != (got == "") {
				t.Errorf("FirstKeptInPlace() = %q, want it to start with %q", got, tc.wantKept)
			}
			if st.Input.OldInPlace != tc.wantOldIP {
				t.Errorf("OldInPlace = %+v, want %+v", st.Input.OldInPlace, tc.wantOldIP)
			}
		})
	}
}

// Toward judges the rollout as auto-rollback returning the pods to another
// revision would: the old revision's pods are then the updated ones, and
// partition does not keep any of the spec's.
func TestToward(t *testing.T) {
	w := newWorld(t, 2, appv1alpha1.RollingUpdate{Partition: ptr.To[int32](1)})
	pods := []*slimpod.Pod{pod("a", w.v1), pod("b", w.v2)}
	back, ok := rolloutstate.Toward(w.ps, &w.revision, w.v1, rolloutstate.Cluster{}, pods, operandtest.Now)
	if !ok {
		t.Fatal("Toward(v1) found no template")
	}
	if names(back.Updated) != "a" || names(back.Old) != "b" || back.Input.Strategy.Partition != 0 || back.Complete() {
		t.Errorf("toward v1: updated %q old %q partition %d complete %v; want a, b, 0, false",
			names(back.Updated), names(back.Old), back.Input.Strategy.Partition, back.Complete())
	}
	if w.revision.Update != w.v2 || w.revision.RollingBack {
		t.Error("Toward changed the revisions it was given")
	}
	done, _ := rolloutstate.Toward(w.ps, &w.revision, w.v1, rolloutstate.Cluster{}, []*slimpod.Pod{pod("a", w.v1), pod("c", w.v1)}, operandtest.Now)
	if !done.Complete() {
		t.Error("toward v1 with every pod on v1: not complete")
	}
	w.revision = onlyUpdate(w)
	if _, ok := rolloutstate.Toward(w.ps, &w.revision, w.v1, rolloutstate.Cluster{}, pods, operandtest.Now); ok {
		t.Error("Toward a revision whose template is not stored: ok")
	}
}
