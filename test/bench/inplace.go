package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/example/podset-operator/test/localcluster"
)

// The in-place phase (make bench-inplace; needs root): on one real node
// (kubelet and containerd), owners of -inplace-pods pods are rolled to a
// changed template (-inplace-change: a new image, or new cpu and memory),
// three kinds in turn, each run in another order:
//
//   - a PodSet with podUpdatePolicy InPlaceIfPossible: each pod keeps its
//     UID and IP; the kubelet restarts its container for a new image, and
//     resizes it without a restart for new resources (resizePolicy
//     NotRequired);
//   - a PodSet with ReCreate: each pod is replaced;
//   - a Deployment: each pod is replaced, through a new ReplicaSet.
//
// All three use maxUnavailable 25% and the same maxSurge (-inplace-surge,
// default 25%), which only the replacing kinds use. A pod watch measures the
// time from the change until every live pod runs it and is Ready, and the
// most pods that were unavailable (replicas minus the Ready live pods) at
// any moment. The operand is busybox running a shell that ends on SIGTERM,
// so no kind waits out a grace period.

// Kinds of the in-place phase.
const (
	kindInPlace    = "podset-inplace"
	kindReCreate   = "podset-recreate"
	kindDeployment = "deployment"
)

// The node's images (hack/build-node-images.sh).
const (
	inPlaceFromImage = "docker.io/library/busybox:1.37.0"
	inPlaceToImage   = "docker.io/example/busybox:v2"
)

var inPlaceCommand = []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}

// nodeChange is one change of the owners' pod template that the in-place
// phase rolls out.
type nodeChange struct {
	// from and to are the container's resources before and after (nil:
	// none set); image is the image after.
	from, to *corev1.ResourceRequirements
	image    string
	// inSpec tells a pod whose spec has the change, applied one whose
	// container runs it.
	inSpec, applied func(*corev1.Pod) bool
}

// The resources of the resources change: a few tens of pods fit twice on
// a 2-core node, and only grow (a memory limit that shrinks in place waits
// for the container's usage).
var (
	inPlaceFromResources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	inPlaceToResources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("24Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("96Mi")},
	}
)

// nodeChanges are the values of -inplace-change.
var nodeChanges = map[string]nodeChange{
	"image": {
		image:  inPlaceToImage,
		inSpec: func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image == inPlaceToImage },
		applied: func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Running != nil && sameImage(cs[0].Image, inPlaceToImage)
		},
	},
	"resources": {
		from: &inPlaceFromResources, to: &inPlaceToResources, image: inPlaceFromImage,
		inSpec: func(p *corev1.Pod) bool { return sameResources(p.Spec.Containers[0].Resources, inPlaceToResources) },
		applied: func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Running != nil && cs[0].Resources != nil && sameResources(*cs[0].Resources, inPlaceToResources)
		},
	},
}

// sameImage compares two image references, with or without Docker Hub's
// library/ prefix that the kubelet reports.
func sameImage(a, b string) bool {
	return strings.TrimPrefix(a, "docker.io/library/") == strings.TrimPrefix(b, "docker.io/library/")
}

// sameResources reports whether got has the cpu and memory requests and
// limits of want.
func sameResources(got, want corev1.ResourceRequirements) bool {
	for _, pair := range [][2]corev1.ResourceList{{got.Requests, want.Requests}, {got.Limits, want.Limits}} {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			g, w := pair[0][name], pair[1][name]
			if g.Cmp(w) != 0 {
				return false
			}
		}
	}
	return true
}

// inPlaceRun is one rollout of one kind.
type inPlaceRun struct {
	Kind string `json:"kind"`
	Run  int    `json:"run"`
	// Seconds from the image change until every pod runs the new image
	// and is Ready.
	Seconds float64 `json:"seconds"`
	// MaxUnavailable is the most pods unavailable at any moment.
	MaxUnavailable int `json:"maxUnavailable"`
	// Replaced is how many pods the rollout replaced (new UIDs), Restarts
	// how many times the containers of the pods it kept restarted.
	Replaced int `json:"replaced"`
	Restarts int `json:"restarts"`
	// Where a pod's time goes, medians over the pods, in seconds from the
	// change: its turn (the pod got the change in its spec, or was created
	// with it), its container running it (the new image, or the new
	// resources the kubelet reports), the pod Ready.
	TurnSeconds    float64 `json:"turnSeconds"`
	RunningSeconds float64 `json:"runningSeconds"`
	ReadySeconds   float64 `json:"readySeconds"`
	Error          string  `json:"error,omitempty"`
}

// inPlaceReport is what bench-inplace writes to
// -out/benchmarks-inplace-surge<maxSurge>.json.
type inPlaceReport struct {
	Machine machine `json:"machine"`
	Pods    int     `json:"pods"`
	// Change is what was rolled out: a new image, or new resources.
	Change string `json:"change"`
	// MaxSurge of every owner; maxUnavailable is 25%.
	MaxSurge string       `json:"maxSurge"`
	Runs     int          `json:"runs"`
	Results  []inPlaceRun `json:"results"`
	// Medians of Seconds per kind, over the runs without an error.
	Medians map[string]float64 `json:"medians"`
}

func inPlaceBenchmark(ctx context.Context, o options) error {
	change, ok := nodeChanges[o.inPlaceChange]
	if !ok {
		return fmt.Errorf("-inplace-change %q: want image or resources", o.inPlaceChange)
	}
	node, err := localcluster.RealNodeImages(o.nodeImages)
	if err != nil {
		return err
	}
	id, err := newOperatorIdentity(o.identity, o.binDir, o.configDir)
	if err != nil {
		return err
	}
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: o.binDir, RealNode: node, Out: os.Stderr})
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stopping the cluster:", err)
		}
	}()
	typedCfg, dynCfg := benchConfig(c)
	cs, err := kubernetes.NewForConfig(typedCfg)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(dynCfg)
	if err != nil {
		return err
	}
	if err := installCRDs(ctx, dynCfg, o.crdDir); err != nil {
		return err
	}
	kubeconfig, err := id.install(ctx, c, dc)
	if err != nil {
		return err
	}
	op, err := startOperator(ctx, o.manager, kubeconfig, c.LogDir(), "operator-inplace", false, o.operatorArgs...)
	if err != nil {
		return err
	}
	defer op.stop()
	const ns = "bench-inplace"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}

	rep := inPlaceReport{Machine: describeMachine(), Pods: o.inPlacePods, Change: o.inPlaceChange, MaxSurge: o.inPlaceSurge, Runs: o.runs, Medians: map[string]float64{}}
	kinds := []string{kindInPlace, kindReCreate, kindDeployment}
	for run := 1; run <= o.runs; run++ {
		// Each run starts with another kind, so that none always runs
		// first (on a node still settling) or last.
		order := append(slices.Clone(kinds[(run-1)%len(kinds):]), kinds[:(run-1)%len(kinds)]...)
		for _, kind := range order {
			res := rollOnNode(ctx, cs, dc, ns, kind, run, o.inPlacePods, o.inPlaceSurge, change)
			fmt.Fprintf(os.Stderr, "bench: in-place phase run %d %-16s %6.2fs, at worst %d unavailable, %d replaced; per pod (median, from the change): turn %.2fs, running %.2fs, Ready %.2fs %s\n",
				run, kind, res.Seconds, res.MaxUnavailable, res.Replaced, res.TurnSeconds, res.RunningSeconds, res.ReadySeconds, res.Error)
			rep.Results = append(rep.Results, res)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	for _, kind := range kinds {
		var times []float64
		for _, r := range rep.Results {
			if r.Kind == kind && r.Error == "" {
				times = append(times, r.Seconds)
			}
		}
		if len(times) > 0 {
			rep.Medians[kind] = median(times)
		}
	}
	printInPlace(rep)
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	file := "benchmarks-inplace-surge" + strings.TrimSuffix(o.inPlaceSurge, "%") + ".json"
	if o.inPlaceChange != "image" {
		file = "benchmarks-inplace-" + o.inPlaceChange + "-surge" + strings.TrimSuffix(o.inPlaceSurge, "%") + ".json"
	}
	if err := os.WriteFile(filepath.Join(o.out, file), append(data, '\n'), 0o644); err != nil {
		return err
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			return fmt.Errorf("%s run %d: %s", r.Kind, r.Run, r.Error)
		}
		if r.Kind == kindInPlace && r.Replaced != 0 {
			return fmt.Errorf("%s run %d replaced %d pods", r.Kind, r.Run, r.Replaced)
		}
		if r.Kind == kindInPlace && change.from != nil && r.Restarts != 0 {
			return fmt.Errorf("%s run %d restarted %d containers for a resize that needs none", r.Kind, r.Run, r.Restarts)
		}
	}
	return nil
}

func printInPlace(rep inPlaceReport) {
	fmt.Printf("\nin-place phase: %d pods on one real node, a new %s, maxSurge %s, maxUnavailable 25%%, median of %d runs\n", rep.Pods, rep.Change, rep.MaxSurge, rep.Runs)
	fmt.Printf("%-16s %10s %16s\n", "kind", "seconds", "worst unavailable")
	for _, kind := range []string{kindInPlace, kindReCreate, kindDeployment} {
		worst := 0
		for _, r := range rep.Results {
			if r.Kind == kind {
				worst = max(worst, r.MaxUnavailable)
			}
		}
		fmt.Printf("%-16s %10.2f %16d\n", kind, rep.Medians[kind], worst)
	}
	if d := rep.Medians[kindDeployment]; d > 0 {
		fmt.Printf("in place / Deployment: %.2f (target at most 0.5)\n", rep.Medians[kindInPlace]/d)
	}
}

// rollOnNode creates one owner of kind, waits for its pods, changes its
// image and measures the rollout, then deletes it.
func rollOnNode(ctx context.Context, cs kubernetes.Interface, dc dynamic.Interface, ns, kind string, run, pods int, surge string, change nodeChange) inPlaceRun {
	res := inPlaceRun{Kind: kind, Run: run}
	name := fmt.Sprintf("%s-%d", kind, run)
	selector := "bench-owner=" + name
	if kind != kindDeployment {
		selector = "app.example.com/podset=" + name
	}
	fail := func(err error) inPlaceRun {
		res.Error = err.Error()
		return res
	}
	if err := createNodeOwner(ctx, cs, dc, ns, name, kind, pods, surge, change.from); err != nil {
		return fail(err)
	}
	defer deleteNodeOwner(ctx, cs, dc, ns, name, kind, selector)

	before := map[types.UID]int32{} // restart counts
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		clear(before)
		ready := 0
		for i := range list.Items {
			if p := &list.Items[i]; isLive(p) {
				before[p.UID] = restartsOf(p)
				if nodePodReady(p) && !change.inSpec(p) {
					ready++
				}
			}
		}
		return ready == pods && len(before) == pods, nil
	})
	if err != nil {
		return fail(fmt.Errorf("the pods did not start: %w", err))
	}
	w, err := watchNodePods(ctx, cs, ns, selector, pods, change)
	if err != nil {
		return fail(err)
	}
	defer w.stop()
	start := time.Now()
	if err := changeNodeOwner(ctx, cs, dc, ns, name, kind, change); err != nil {
		return fail(err)
	}
	select {
	case <-w.done:
		res.Seconds = w.doneAt.Sub(start).Seconds()
	case <-time.After(5 * time.Minute):
		return fail(fmt.Errorf("not rolled out after 5m"))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	res.MaxUnavailable = w.maxUnavailable
	var turn, running, ready []float64
	for uid, p := range w.live {
		if restarts, kept := before[uid]; !kept {
			res.Replaced++
		} else {
			res.Restarts += int(restartsOf(p) - restarts)
		}
		m := w.marks[uid]
		turn = append(turn, m.turn.Sub(start).Seconds())
		running = append(running, m.running.Sub(start).Seconds())
		ready = append(ready, m.ready.Sub(start).Seconds())
	}
	res.TurnSeconds, res.RunningSeconds, res.ReadySeconds = median(turn), median(running), median(ready)
	return res
}

// podMarks are when the watch first saw a pod with the new image in its
// spec, its container running it, and the pod Ready on it.
type podMarks struct{ turn, running, ready time.Time }

// nodePodReady reports whether p is Ready with its container ready.
func nodePodReady(p *corev1.Pod) bool {
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	return ready && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
}

// restartsOf is the restart count of p's container.
func restartsOf(p *corev1.Pod) int32 {
	if len(p.Status.ContainerStatuses) == 0 {
		return 0
	}
	return p.Status.ContainerStatuses[0].RestartCount
}

// nodePodWatch follows an owner's pods from the image change on.
type nodePodWatch struct {
	mu             sync.Mutex
	live           map[types.UID]*corev1.Pod
	marks          map[types.UID]*podMarks
	maxUnavailable int
	doneAt         time.Time
	done           chan struct{}
	stop           func()
	change         nodeChange
}

func watchNodePods(ctx context.Context, cs kubernetes.Interface, ns, selector string, pods int, change nodeChange) (*nodePodWatch, error) {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	ww, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, err
	}
	w := &nodePodWatch{live: map[types.UID]*corev1.Pod{}, marks: map[types.UID]*podMarks{}, done: make(chan struct{}), stop: ww.Stop, change: change}
	for i := range list.Items {
		if p := &list.Items[i]; isLive(p) {
			w.live[p.UID] = p
		}
	}
	go func() {
		for ev := range ww.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted || !isLive(p) {
				delete(w.live, p.UID)
			} else {
				w.live[p.UID] = p
				w.mark(p)
			}
			ready, rolled := 0, 0
			for _, lp := range w.live {
				if nodePodReady(lp) {
					ready++
					if change.applied(lp) {
						rolled++
					}
				}
			}
			w.maxUnavailable = max(w.maxUnavailable, pods-ready)
			if rolled == pods && len(w.live) == pods && w.doneAt.IsZero() {
				w.doneAt = time.Now()
				close(w.done)
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// mark records the moments of podMarks that p shows first.
func (w *nodePodWatch) mark(p *corev1.Pod) {
	m := w.marks[p.UID]
	if m == nil {
		m = &podMarks{}
		w.marks[p.UID] = m
	}
	now := time.Now()
	if m.turn.IsZero() && w.change.inSpec(p) {
		m.turn = now
	}
	if m.running.IsZero() && w.change.applied(p) {
		m.running = now
	}
	if m.ready.IsZero() && w.change.applied(p) && nodePodReady(p) {
		m.ready = now
	}
}

// nodeResizePolicy is the container's resizePolicy when the phase changes
// resources: no restart for either.
var nodeResizePolicy = []corev1.ContainerResizePolicy{
	{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
	{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
}

// createNodeOwner creates an owner of kind running inPlaceFromImage, with
// resources (and nodeResizePolicy) when they are set.
func createNodeOwner(ctx context.Context, cs kubernetes.Interface, dc dynamic.Interface, ns, name, kind string, pods int, surge string, resources *corev1.ResourceRequirements) error {
	labels := map[string]string{"bench-owner": name}
	if kind == kindDeployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(pods)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.Parse(surge)), MaxUnavailable: ptr.To(intstr.FromString("25%")),
				}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "podset", Image: inPlaceFromImage, Command: inPlaceCommand,
						SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To(int64(65532)), RunAsNonRoot: ptr.To(true)},
					}}},
				},
			},
		}
		if resources != nil {
			c := &d.Spec.Template.Spec.Containers[0]
			c.Resources, c.ResizePolicy = *resources, nodeResizePolicy
		}
		_, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		return err
	}
	policy := "ReCreate"
	if kind == kindInPlace {
		policy = "InPlaceIfPossible"
	}
	cmd := make([]any, len(inPlaceCommand))
	for i, s := range inPlaceCommand {
		cmd[i] = s
	}
	ps := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "app.example.com/v1alpha1",
		"kind":       "PodSet",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": int64(pods),
			"image":    inPlaceFromImage,
			"command":  cmd,
			"updateStrategy": map[string]any{"rollingUpdate": map[string]any{
				"podUpdatePolicy": policy, "maxSurge": surge, "maxUnavailable": "25%",
			}},
		},
	}}
	if resources != nil {
		spec := ps.Object["spec"].(map[string]any)
		spec["resources"] = toUnstructured(resources)
		spec["resizePolicy"] = toUnstructured(nodeResizePolicy)
	}
	_, err := dc.Resource(podSetGVR).Namespace(ns).Create(ctx, ps, metav1.CreateOptions{})
	return err
}

// toUnstructured is v as JSON objects and arrays, for an unstructured
// object's fields.
func toUnstructured(v any) any {
	var out any
	if err := json.Unmarshal(must(json.Marshal(v)), &out); err != nil {
		panic(err)
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// changeNodeOwner makes change to the owner's pod template: its image, and
// its resources when the change has some.
func changeNodeOwner(ctx context.Context, cs kubernetes.Interface, dc dynamic.Interface, ns, name, kind string, change nodeChange) error {
	if kind == kindDeployment {
		container := map[string]any{"name": "podset", "image": change.image}
		if change.to != nil {
			container["resources"] = change.to
		}
		patch := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{container}}}}}
		_, err := cs.AppsV1().Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, must(json.Marshal(patch)), metav1.PatchOptions{})
		return err
	}
	spec := map[string]any{"image": change.image}
	if change.to != nil {
		spec["resources"] = change.to
	}
	patch := must(json.Marshal(map[string]any{"spec": spec}))
	_, err := dc.Resource(podSetGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// deleteNodeOwner deletes the owner and waits until its pods are gone, so
// that the next run has the node to itself.
func deleteNodeOwner(ctx context.Context, cs kubernetes.Interface, dc dynamic.Interface, ns, name, kind, selector string) {
	var err error
	if kind == kindDeployment {
		err = cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{})
	} else {
		err = dc.Resource(podSetGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: deleting %s: %v\n", name, err)
		return
	}
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err == nil && len(list.Items) == 0, nil
	})
}
