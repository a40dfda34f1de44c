package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// The rollout phase: owners of one kind (PodSets, or Deployments of the same
// template) are created and left to settle, then every owner's pod template
// gets a new annotation, which replaces every pod under the default
// RollingUpdate strategy of both (maxSurge 25%, maxUnavailable 25%). A pod
// watch measures when every pod runs the new template and is Ready and
// every owner's status reports it, and the most live and fewest ready pods
// of any one owner at any moment, against the strategy's bounds.

// rolloutAnnotation marks the new template.
const rolloutAnnotation = "bench.podset.example.com/rollout"

var deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// rolloutResult is one rollout run of one kind.
type rolloutResult struct {
	Kind     string `json:"kind"` // podset or deployment
	Shape    string `json:"shape"`
	Owners   int    `json:"owners"`
	Replicas int    `json:"replicas"`
	// Template is -template: the pods' template (empty: the short form's).
	Template  string `json:"template,omitempty"`
	Run       int    `json:"run"`
	WentFirst bool   `json:"wentFirst"`
	Target    int    `json:"targetPods"`

	// PodsRolledS: every live pod runs the new template and is Ready, and
	// no old pod is live. RolledS: that, and every owner's status says so.
	PodsRolledS float64 `json:"podsRolledSeconds"`
	RolledS     float64 `json:"rolledSeconds"`
	// The bounds of one owner, and the worst any owner reached.
	SurgeBound       int `json:"maxLivePerOwnerBound"`
	ReadyBound       int `json:"minReadyPerOwnerBound"`
	MaxLivePerOwner  int `json:"maxLivePerOwner"`
	MinReadyPerOwner int `json:"minReadyPerOwner"`
	// Created is the number of new pods; one per replaced pod is ideal.
	Created int `json:"podsCreated"`
	// OperatorCreated is, for a PodSet, how many pods the operator says
	// its creates made (podset_operator_pod_creates_total, created or
	// uncertain) during the rollout: when Created is off, it tells a pod
	// the operator really made too many from one the watch miscounted.
	OperatorCreated int `json:"operatorPodsCreated,omitempty"`
	// EndedByOthers is, for a PodSet, how many pods ended during the
	// rollout (marked for deletion or gone, as the watch saw them) beyond
	// those the operator deleted (podset_operator_pod_deletes_total): pods
	// something else removed, each of which the operator rightly replaced.
	// kwok is that something: when a new pod gets the name of an old pod
	// kwok has just finalized (one name among 2000 in 27^5), kwok's second
	// delete by name, from its stale view of the old pod, removes the new
	// one. A Deployment's pods never reuse an old pod's name: each
	// ReplicaSet has its own name prefix.
	EndedByOthers int `json:"podsEndedByOthers,omitempty"`
	// Operator only: its writes per replaced pod.
	WritesPerReplaced float64 `json:"operatorWritesPerReplacedPod,omitempty"`

	Error string `json:"error,omitempty"`
}

// rolloutBounds are the strategy's bounds for one owner of replicas pods with
// maxSurge and maxUnavailable 25%: surge rounds up, unavailability down, and
// when both are 0 one pod may be unavailable.
func rolloutBounds(replicas int) (maxLive, minReady int) {
	surge := int(math.Ceil(float64(replicas) * 0.25))
	unavailable := replicas / 4
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return replicas + surge, replicas - unavailable
}

// rolloutWatcher follows every pod of a namespace by owner.
type rolloutWatcher struct {
	eventCount
	mu     sync.Mutex
	start  time.Time
	owners map[string]*ownerPods
	// newReady counts live, Ready pods of the new template; oldLive live
	// pods of the old one.
	newReady, oldLive int
	// created holds every new pod seen since begin, by UID, deleted or
	// not: a pod whose deletion is reported twice (an event, then a
	// relist's tombstone) is still one pod. ended holds every pod, new or
	// old, seen marked for deletion or gone since begin.
	created, ended    sets.Set[types.UID]
	target            int
	done              time.Duration
	maxLive, minReady int
}

type ownerPods struct {
	pods            map[types.UID]podState
	live, readyLive int
}

func watchRollout(ctx context.Context, cs kubernetes.Interface, ns string) (*rolloutWatcher, error) {
	w := &rolloutWatcher{owners: map[string]*ownerPods{}, minReady: math.MaxInt}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj, false) },
		UpdateFunc: func(_, obj any) { w.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			w.observe(obj, true)
		},
	})
	if err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("pod informer of %s did not sync", ns)
	}
	return w, nil
}

// podOwner is the owner a pod belongs to: the PodSet label, or the label the
// benchmark puts in a Deployment's template.
func podOwner(p *corev1.Pod) string {
	if o := p.Labels["app.example.com/podset"]; o != "" {
		return o
	}
	return p.Labels[ownerLabel]
}

func (w *rolloutWatcher) observe(obj any, deleted bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.saw()
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.owners[podOwner(p)]
	if o == nil {
		o = &ownerPods{pods: map[types.UID]podState{}}
		w.owners[podOwner(p)] = o
	}
	isNew := p.Annotations[rolloutAnnotation] != ""
	old := o.pods[p.UID]
	if isNew && w.created != nil {
		w.created.Insert(p.UID)
	}
	if (deleted || p.DeletionTimestamp != nil) && w.ended != nil {
		w.ended.Insert(p.UID)
	}
	cur := podState{live: !deleted && isLive(p)}
	cur.ready = cur.live && isReady(p)
	if deleted {
		delete(o.pods, p.UID)
	} else {
		o.pods[p.UID] = cur
	}
	o.live += b2i(cur.live) - b2i(old.live)
	o.readyLive += b2i(cur.ready) - b2i(old.ready)
	if isNew {
		w.newReady += b2i(cur.ready) - b2i(old.ready)
	} else {
		w.oldLive += b2i(cur.live) - b2i(old.live)
	}
	if w.start.IsZero() {
		return
	}
	w.maxLive = max(w.maxLive, o.live)
	w.minReady = min(w.minReady, o.readyLive)
	if w.done == 0 && w.newReady >= w.target && w.oldLive == 0 {
		w.done = now.Sub(w.start)
	}
}

// begin starts the clock: from now on, bounds are tracked.
func (w *rolloutWatcher) begin(start time.Time, target int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start, w.target, w.created, w.ended = start, target, sets.New[types.UID](), sets.New[types.UID]()
	for _, o := range w.owners {
		w.maxLive = max(w.maxLive, o.live)
		w.minReady = min(w.minReady, o.readyLive)
	}
}

func (w *rolloutWatcher) result() (done time.Duration, maxLive, minReady, created int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done, w.maxLive, w.minReady, w.created.Len()
}

// endedSince is how many pods have been seen marked for deletion or gone
// since begin.
func (w *rolloutWatcher) endedSince() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended.Len()
}

// rolledOut is "the status reports it": the owner has seen the new spec and
// counts exactly replicas pods, all of them updated and available.
func rolledOut(u *unstructured.Unstructured, replicas int64) bool {
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	total, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
	updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
	available, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
	return observed >= u.GetGeneration() && total == replicas && updated == replicas && available == replicas
}

// statusWatcher records when every owner first reports the rollout done.
type statusWatcher struct {
	eventCount
	mu       sync.Mutex
	start    time.Time
	replicas int64
	want     int
	owners   map[string]bool
	done     time.Duration
}

func watchRolloutStatus(ctx context.Context, dc dynamic.Interface, gvr schema.GroupVersionResource, ns string, owners int, replicas int64) (*statusWatcher, error) {
	w := &statusWatcher{owners: map[string]bool{}, want: owners, replicas: replicas}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, ns, nil)
	inf := f.ForResource(gvr).Informer()
	observe := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		now := time.Now()
		w.saw()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.owners[u.GetName()] = rolledOut(u, w.replicas) && !w.start.IsZero() &&
			u.GetAnnotations()[rolloutAnnotation] != ""
		if w.start.IsZero() || w.done != 0 {
			return
		}
		n := 0
		for _, ok := range w.owners {
			n += b2i(ok)
		}
		if n >= w.want {
			w.done = now.Sub(w.start)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, o any) { observe(o) }}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("%s informer of %s did not sync", gvr.Resource, ns)
	}
	return w, nil
}

func (w *statusWatcher) begin(start time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start = start
}

func (w *statusWatcher) rolledAfter() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

// rolloutDriver creates the owners of a rollout phase and changes their
// template. The owner itself carries the rollout annotation too, so that
// the status watcher knows which spec its status is about.
type rolloutDriver interface {
	create(ctx context.Context, ns string, owners, replicas, width int) error
	roll(ctx context.Context, ns string, owners int) error
}

type podSetRollout struct{ podSetDriver }

// roll adds the rollout annotation to the pods' annotations: the short
// form's podAnnotations, or the template's.
func (d podSetRollout) roll(ctx context.Context, ns string, owners int) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"1"}},"spec":{"podAnnotations":{%q:"1"}}}`, rolloutAnnotation, rolloutAnnotation)
	if d.template != nil {
		patch = fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"1"}},"spec":{"template":{"metadata":{"annotations":{%q:"1"}}}}}`, rolloutAnnotation, rolloutAnnotation)
	}
	return parallel(ctx, owners, clientParallelism, func(ctx context.Context, i int) error {
		_, err := d.dc.Resource(podSetGVR).Namespace(ns).Patch(ctx, ownerName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// deploymentRollout writes Deployments whose pods are the PodSets' pods, as
// replicaSetDriver's ReplicaSets are.
type deploymentRollout struct {
	cs       kubernetes.Interface
	template *corev1.PodTemplateSpec
}

func (d deploymentRollout) create(ctx context.Context, ns string, owners, replicas, width int) error {
	return parallel(ctx, owners, width, func(ctx context.Context, i int) error {
		labels := map[string]string{ownerLabel: ownerName(i)}
		tmpl := ownerPodTemplate(labels, d.template)
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: ownerName(i), Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: tmpl,
				// The defaults, spelled out: the PodSet's are the same.
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
			},
		}
		_, err := d.cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{})
		return err
	})
}

func (d deploymentRollout) roll(ctx context.Context, ns string, owners int) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"1"}},"spec":{"template":{"metadata":{"annotations":{%q:"1"}}}}}`, rolloutAnnotation, rolloutAnnotation)
	return parallel(ctx, owners, clientParallelism, func(ctx context.Context, i int) error {
		_, err := d.cs.AppsV1().Deployments(ns).Patch(ctx, ownerName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// rolloutPhase runs one rollout of one kind at one shape.
func (b *bench) rolloutPhase(ctx context.Context, kind string, s shape, run int, first bool) rolloutResult {
	res := rolloutResult{Kind: kind, Shape: s.String(), Owners: s.owners, Replicas: s.replicas, Template: b.opts.templateName, Run: run, WentFirst: first, Target: s.pods()}
	res.SurgeBound, res.ReadyBound = rolloutBounds(s.replicas)
	ns := fmt.Sprintf("roll-%s-%s-r%d", kind, s, run)
	logf("rollout %s %s run %d: starting in namespace %s", kind, s, run, ns)
	if err := b.rolloutPhaseIn(ctx, ns, &res); err != nil {
		res.Error = err.Error()
		logf("rollout %s %s run %d: ERROR %v", kind, s, run, err)
	} else {
		logf("rollout %s %s run %d: pods rolled %.2fs, status %.2fs; most live per owner %d (bound %d), fewest ready %d (bound %d); new pods %d; writes/replaced pod %.2f",
			kind, s, run, res.PodsRolledS, res.RolledS, res.MaxLivePerOwner, res.SurgeBound, res.MinReadyPerOwner, res.ReadyBound, res.Created, res.WritesPerReplaced)
		if res.EndedByOthers > 0 {
			logf("rollout %s %s run %d: %d pods ended by something other than the operator (kwok, finalizing an old pod whose name a new pod took) and replaced", kind, s, run, res.EndedByOthers)
		}
	}
	if err := b.endPhase(ctx, ns); err != nil && res.Error == "" {
		res.Error = "cleanup: " + err.Error()
	}
	return res
}

func (b *bench) rolloutPhaseIn(ctx context.Context, ns string, res *rolloutResult) error {
	if err := createNamespace(ctx, b.cs, ns); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		driver rolloutDriver
		gvr    schema.GroupVersionResource
	)
	if res.Kind == "podset" {
		driver, gvr = podSetRollout{podSetDriver{dc: b.dc, template: b.opts.template}}, podSetGVR
	} else {
		driver, gvr = deploymentRollout{cs: b.cs, template: b.opts.template}, deploymentGVR
	}
	pw, err := watchRollout(wctx, b.cs, ns)
	if err != nil {
		return err
	}
	sw, err := watchRolloutStatus(wctx, b.dc, gvr, ns, res.Owners, int64(res.Replicas))
	if err != nil {
		return err
	}
	if err := driver.create(ctx, ns, res.Owners, res.Replicas, clientParallelism); err != nil {
		return fmt.Errorf("creating owners: %w", err)
	}
	if err := waitUntil(ctx, b.opts.phaseTimeout, b.opts.stallTimeout, "every old pod Ready", func() bool {
		pw.mu.Lock()
		defer pw.mu.Unlock()
		ready := 0
		for _, o := range pw.owners {
			ready += o.readyLive
		}
		return ready >= res.Target && len(pw.owners) >= res.Owners
	}, pw); err != nil {
		return err
	}
	time.Sleep(settle)
	before, err := b.op.scrape()
	if err != nil {
		return err
	}

	start := time.Now()
	pw.begin(start, res.Target)
	sw.begin(start)
	if err := driver.roll(ctx, ns, res.Owners); err != nil {
		return fmt.Errorf("changing the template: %w", err)
	}
	if err := waitUntil(ctx, b.opts.phaseTimeout, b.opts.stallTimeout, "every pod rolled and every status caught up", func() bool {
		done, _, _, _ := pw.result()
		return done > 0 && sw.rolledAfter() > 0
	}, pw, sw); err != nil {
		done, maxLive, minReady, created := pw.result()
		return fmt.Errorf("%w (pods rolled after %s, new pods %d, most live per owner %d, fewest ready %d)", err, done, created, maxLive, minReady)
	}
	done, maxLive, minReady, created := pw.result()
	res.PodsRolledS, res.RolledS = secs(done), secs(max(done, sw.rolledAfter()))
	res.MaxLivePerOwner, res.MinReadyPerOwner, res.Created = maxLive, minReady, created
	if res.Kind == "podset" {
		time.Sleep(settle)
		after, err := b.op.scrape()
		if err != nil {
			return err
		}
		res.WritesPerReplaced = (after.writes() - before.writes()) / float64(res.Target)
		res.OperatorCreated = after.podsCreatedSince(before)
		res.EndedByOthers = max(pw.endedSince()-after.podsDeletedSince(before), 0)
	}
	return nil
}

// rolloutViolations are the correctness failures of the PodSet rollouts: a
// bound crossed, a pod too many, or a rollout that did not finish. The
// Deployment's are reported, not enforced.
func rolloutViolations(results []rolloutResult) []string {
	var out []string
	for _, r := range results {
		if r.Kind != "podset" {
			continue
		}
		switch {
		case r.Error != "":
			out = append(out, fmt.Sprintf("PodSet rollout %s run %d: %s", r.Shape, r.Run, r.Error))
		case r.MaxLivePerOwner > r.SurgeBound:
			out = append(out, fmt.Sprintf("PodSet rollout %s run %d: %d live pods in one PodSet, bound %d", r.Shape, r.Run, r.MaxLivePerOwner, r.SurgeBound))
		case r.MinReadyPerOwner < r.ReadyBound:
			out = append(out, fmt.Sprintf("PodSet rollout %s run %d: %d ready pods in one PodSet, bound %d", r.Shape, r.Run, r.MinReadyPerOwner, r.ReadyBound))
		case r.Created-r.EndedByOthers != r.Target:
			out = append(out, fmt.Sprintf("PodSet rollout %s run %d: %d new pods for %d replaced and %d ended by something else (the operator counted %d pods made)",
				r.Shape, r.Run, r.Created, r.Target, r.EndedByOthers, r.OperatorCreated))
		}
	}
	return out
}

// rolloutMedian is one figure of one rollout shape.
type rolloutMedian struct {
	Shape      string  `json:"shape"`
	Figure     string  `json:"figure"`
	PodSet     float64 `json:"podset"`
	Deployment float64 `json:"deployment"`
	Ratio      float64 `json:"ratio,omitempty"`
}

func summariseRollouts(results []rolloutResult, shapes []shape) []rolloutMedian {
	figures := []struct {
		name  string
		get   func(rolloutResult) float64
		ratio bool
	}{
		{"every pod on the new template and Ready (s)", func(r rolloutResult) float64 { return r.PodsRolledS }, true},
		{"and every status reports it (s)", func(r rolloutResult) float64 { return r.RolledS }, true},
		{"most live pods in one owner", func(r rolloutResult) float64 { return float64(r.MaxLivePerOwner) }, false},
		{"bound: replicas + maxSurge", func(r rolloutResult) float64 { return float64(r.SurgeBound) }, false},
		{"fewest ready pods in one owner", func(r rolloutResult) float64 { return float64(r.MinReadyPerOwner) }, false},
		{"bound: replicas - maxUnavailable", func(r rolloutResult) float64 { return float64(r.ReadyBound) }, false},
		{"new pods", func(r rolloutResult) float64 { return float64(r.Created) }, false},
		{"operator writes per replaced pod", func(r rolloutResult) float64 { return r.WritesPerReplaced }, false},
	}
	var rows []rolloutMedian
	for _, s := range shapes {
		for _, f := range figures {
			collect := func(kind string) []float64 {
				var xs []float64
				for _, r := range results {
					if r.Kind == kind && r.Shape == s.String() && r.Error == "" {
						xs = append(xs, f.get(r))
					}
				}
				return xs
			}
			row := rolloutMedian{Shape: s.String(), Figure: f.name, PodSet: median(collect("podset")), Deployment: median(collect("deployment"))}
			if f.ratio && row.Deployment > 0 {
				row.Ratio = row.PodSet / row.Deployment
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func printRolloutTable(w io.Writer, rows []rolloutMedian) {
	fmt.Fprintln(w, "| shape | rollout figure | PodSet | Deployment | PodSet/Deployment |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|")
	for _, r := range rows {
		ratio, dep := "", fmtNum(r.Deployment)
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		if r.Figure == "operator writes per replaced pod" {
			dep = "n/a"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.Shape, r.Figure, fmtNum(r.PodSet), dep, ratio)
	}
}
