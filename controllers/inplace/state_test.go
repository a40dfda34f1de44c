package inplace_test

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/inplace"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

// updatedPod is a pod whose in-place update to revision "new" began when
// its container was "old-id", with its generation at 2.
func updatedPod(st inplace.State, cs corev1.ContainerStatus, observed int64, conditions ...corev1.PodCondition) *slimpod.Pod {
	cs.Name = operand.ContainerName
	return &slimpod.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Generation: 2,
			Labels:      map[string]string{appv1alpha1.LabelRevisionHash: "new"},
			Annotations: map[string]string{appv1alpha1.AnnotationInPlaceUpdate: st.Encode()},
		},
		Status: slimpod.PodStatus{ContainerStatuses: []corev1.ContainerStatus{cs}, Conditions: conditions},
		Extra:  slimpod.NewExtra(nil, nil, observed),
	}
}

func TestDone(t *testing.T) {
	restart := inplace.State{Revision: "new", Restart: true, ContainerID: "containerd://old-id"}
	want := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	resize := inplace.State{Revision: "new", Resize: true, Resources: want}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	resized := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	for _, tc := range []struct {
		name string
		pod  *slimpod.Pod
		want bool
	}{
		{"the old container still runs", updatedPod(restart, corev1.ContainerStatus{ContainerID: "containerd://old-id", State: running, Ready: true}, 2), false},
		{"a new container, ready", updatedPod(restart, corev1.ContainerStatus{ContainerID: "containerd://new-id", State: running, Ready: true}, 2), true},
		{"a new container, not ready yet", updatedPod(restart, corev1.ContainerStatus{ContainerID: "containerd://new-id", State: running}, 2), false},
		{"a new container, but the kubelet has not seen the latest spec", updatedPod(restart, corev1.ContainerStatus{ContainerID: "containerd://new-id", State: running, Ready: true}, 1), false},
		{"no observed generation reported (an older kubelet, kwok)", updatedPod(restart, corev1.ContainerStatus{ContainerID: "containerd://new-id", State: running, Ready: true}, 0), true},
		{
			"the new image cannot be pulled",
			updatedPod(restart, corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}, 2), false,
		},
		{"resized", updatedPod(resize, corev1.ContainerStatus{ContainerID: "x", State: running, Ready: true, Resources: resized}, 2), true},
		{"not resized yet", updatedPod(resize, corev1.ContainerStatus{ContainerID: "x", State: running, Ready: true, Resources: &corev1.ResourceRequirements{}}, 2), false},
		{
			"resized, but another resize is in progress",
			updatedPod(resize, corev1.ContainerStatus{ContainerID: "x", State: running, Ready: true, Resources: resized}, 2,
				corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}), false,
		},
		{"no container status", &slimpod.Pod{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			st, ok := inplace.StateOf(tc.pod)
			if tc.pod.Annotations == nil {
				g.Expect(ok).To(BeFalse())
				g.Expect(inplace.Pending(tc.pod)).To(BeFalse(), "a pod with no update is not pending")
				return
			}
			g.Expect(ok).To(BeTrue())
			g.Expect(inplace.Done(tc.pod, st)).To(Equal(tc.want))
			g.Expect(inplace.Pending(tc.pod)).To(Equal(!tc.want))
		})
	}
}

func TestPendingOnlyForTheRevisionThePodCarries(t *testing.T) {
	pod := updatedPod(inplace.State{Revision: "other", Restart: true, ContainerID: "a"}, corev1.ContainerStatus{ContainerID: "a"}, 0)
	NewWithT(t).Expect(inplace.Pending(pod)).To(BeFalse(), "a state left from an update to another revision does not hold the pod back")
	pod.Annotations[appv1alpha1.AnnotationInPlaceUpdate] = "not json"
	NewWithT(t).Expect(inplace.Pending(pod)).To(BeFalse(), "an unreadable state counts as none")
}

func TestStuck(t *testing.T) {
	g := NewWithT(t)
	waiting := func(reason, msg string) *slimpod.Pod {
		return updatedPod(inplace.State{Revision: "new"}, corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}, 0)
	}
	g.Expect(inplace.Stuck(waiting("ImagePullBackOff", "Back-off pulling image \"nope\""))).To(Equal(`pod p: container podset: ImagePullBackOff: Back-off pulling image "nope"`))
	g.Expect(inplace.Stuck(waiting("ContainerCreating", ""))).To(BeEmpty(), "a container on its way is not stuck")
	infeasible := updatedPod(inplace.State{Revision: "new"}, corev1.ContainerStatus{}, 0, corev1.PodCondition{
		Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity",
	})
	g.Expect(inplace.Stuck(infeasible)).To(Equal("pod p: resize infeasible: Node didn't have enough capacity"))
}

func TestPatches(t *testing.T) {
	g := NewWithT(t)
	pod := &slimpod.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42"}}
	from := revision.Template{Image: "a:1", PodAnnotations: map[string]string{"gone": "x", "kept": "1"}}
	to := revision.Template{Image: "a:2", PodAnnotations: map[string]string{"kept": "2"}, Resources: inplacetestRes()}
	st := inplace.State{Revision: "new", Restart: true, ContainerID: "c"}

	var update map[string]any
	g.Expect(json.Unmarshal(inplace.UpdatePatch(pod, from, to, "new", st, "default"), &update)).To(Succeed())
	g.Expect(update).To(Equal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": "42",
			"labels":          map[string]any{appv1alpha1.LabelRevisionHash: "new"},
			"annotations": map[string]any{
				"gone": nil, "kept": "2",
				appv1alpha1.AnnotationInPlaceUpdate: `{"revision":"new","restart":true,"containerID":"c"}`,
			},
		},
		"spec": map[string]any{"containers": []any{map[string]any{"name": operand.ContainerName, "image": "a:2"}}},
	}))

	update = nil
	to.Image = from.Image
	g.Expect(json.Unmarshal(inplace.UpdatePatch(pod, from, to, "new", st, "default"), &update)).To(Succeed())
	g.Expect(update).NotTo(HaveKey("spec"), "no new image: the spec is left alone")

	var resize map[string]any
	g.Expect(json.Unmarshal(inplace.ResizePatch(inplace.WantedResources(to, "default")), &resize)).To(Succeed())
	g.Expect(resize).To(Equal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name":      operand.ContainerName,
		"resources": map[string]any{"requests": map[string]any{"cpu": "200m"}},
	}}}}), "ephemeral-storage is not part of a resize")

	resize = nil
	limitsOnly := revision.Template{Resources: &appv1alpha1.Resources{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	g.Expect(json.Unmarshal(inplace.ResizePatch(inplace.WantedResources(limitsOnly, "default")), &resize)).To(Succeed())
	g.Expect(resize).To(Equal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name":      operand.ContainerName,
		"resources": map[string]any{"requests": map[string]any{"cpu": "2"}, "limits": map[string]any{"cpu": "2"}},
	}}}}), "a limit without a request is requested at the limit, as the API server stores it")

	var gate map[string]any
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	g.Expect(json.Unmarshal(inplace.GatePatch(pod, corev1.ConditionTrue, appv1alpha1.ReasonInPlaceUpdateReady, "", now), &gate)).To(Succeed())
	g.Expect(gate["metadata"]).To(Equal(map[string]any{"resourceVersion": "42"}), "putting a pod back in service is refused if it changed since")
	gate = nil
	g.Expect(json.Unmarshal(inplace.GatePatch(pod, corev1.ConditionFalse, appv1alpha1.ReasonInPlaceUpdating, "", now), &gate)).To(Succeed())
	g.Expect(gate["metadata"]).To(BeEmpty(), "taking a pod out of service is never refused")
	g.Expect(gate["status"]).To(Equal(map[string]any{"conditions": []any{map[string]any{
		"type": appv1alpha1.PodConditionInPlaceUpdateReady, "status": "False", "reason": appv1alpha1.ReasonInPlaceUpdating,
		"lastProbeTime": nil, "lastTransitionTime": "2026-11-27T08:00:00Z",
	}}}))
}

func inplacetestRes() *appv1alpha1.Resources {
	return &appv1alpha1.Resources{Requests: corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("200m"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}}
}

func TestResizeLost(t *testing.T) {
	g := NewWithT(t)
	want := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	st := inplace.State{Revision: "new", Resize: true, Resources: want}
	old := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	g.Expect(inplace.ResizeLost(updatedPod(st, corev1.ContainerStatus{Resources: old}, 2), st)).To(BeTrue(), "the kubelet shows neither the resize nor one under way")
	g.Expect(inplace.ResizeLost(updatedPod(st, corev1.ContainerStatus{Resources: old}, 2,
		corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}), st)).To(BeFalse(), "under way")
	g.Expect(inplace.ResizeLost(updatedPod(st, corev1.ContainerStatus{Resources: old}, 2,
		corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred}), st)).To(BeFalse(), "pending")
	g.Expect(inplace.ResizeLost(updatedPod(st, corev1.ContainerStatus{Resources: want}, 2), st)).To(BeFalse(), "done")
	g.Expect(inplace.ResizeLost(updatedPod(st, corev1.ContainerStatus{Resources: old}, 2), inplace.State{Revision: "new"})).To(BeFalse(), "no resize awaited")
}

// A template's pod awaits each changed container on its own: the restarted
// one anew, the resized one at its new resources; the others only report.
func TestDoneForATemplatesContainers(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	want := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	pod := func(webID string, metricsCPU string) *slimpod.Pod {
		return &slimpod.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2},
			Extra:      slimpod.NewExtra(nil, nil, 2),
			Status: slimpod.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				{Name: "proxy", ContainerID: "containerd://proxy", State: running, Ready: true, RestartCount: 4},
				{Name: "web", ContainerID: webID, State: running, Ready: true, RestartCount: 1},
				{Name: "metrics", ContainerID: "containerd://m", State: running, Ready: true,
					Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(metricsCPU)}}},
			}},
		}
	}
	before := pod("containerd://web-old", "100m")
	changes := []inplace.ContainerChange{{Name: "web", Image: "web:2", Restarts: true}, {Name: "metrics", Resources: want}}
	st := inplace.State{Revision: "new", Template: true, Restart: true, Resize: true, Containers: inplace.NewContainerUpdates(before, changes)}

	g := NewWithT(t)
	g.Expect(st.Containers).To(ConsistOf(
		inplace.ContainerUpdate{Name: "proxy", Restarts: 4},
		inplace.ContainerUpdate{Name: "web", Restart: true, ContainerID: "containerd://web-old", Restarts: 1},
		inplace.ContainerUpdate{Name: "metrics", Resources: want}))
	g.Expect(inplace.Done(before, st)).To(BeFalse())
	g.Expect(inplace.Done(pod("containerd://web-new", "100m"), st)).To(BeFalse(), "metrics not resized yet")
	g.Expect(inplace.ResizeLost(pod("containerd://web-new", "100m"), st)).To(BeTrue())
	g.Expect(inplace.Done(pod("containerd://web-old", "200m"), st)).To(BeFalse(), "web not restarted yet")
	g.Expect(inplace.Done(pod("containerd://web-new", "200m"), st)).To(BeTrue())
	g.Expect(inplace.ResizeLost(pod("containerd://web-new", "200m"), st)).To(BeFalse())

	// Restarts since the revision count per container: the update's own
	// restart of web is not the revision's.
	cs := pod("containerd://web-new", "200m").Status.ContainerStatuses
	g.Expect(st.RestartsBefore(&cs[0])).To(BeEquivalentTo(4))
	g.Expect(st.RestartsBefore(&cs[1])).To(BeEquivalentTo(2))

	// The state reads back as it was written.
	var back inplace.State
	g.Expect(json.Unmarshal([]byte(st.Encode()), &back)).To(Succeed())
	g.Expect(back.Template).To(BeTrue())
	g.Expect(back.Containers).To(HaveLen(3))

	// Its resize names only the resized container.
	g.Expect(string(inplace.ResizePatchOf(st))).To(MatchJSON(`{"spec":{"containers":[{"name":"metrics","resources":{"requests":{"cpu":"200m"}}}]}}`))
}

// A change of a template's labels and annotations only awaits nothing of
// its containers.
func TestDoneForATemplatesMetadataChange(t *testing.T) {
	g := NewWithT(t)
	st := inplace.State{Revision: "new", Template: true}
	pod := &slimpod.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1}}
	g.Expect(inplace.Done(pod, st)).To(BeTrue())
}

func TestTemplateUpdatePatch(t *testing.T) {
	g := NewWithT(t)
	tmpl := func(image string, labels, annotations map[string]string) revision.Template {
		return revision.Template{Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}, {Name: "metrics", Image: "m:1"}}},
		}}
	}
	from := tmpl("web:1", map[string]string{"tier": "front", appv1alpha1.LabelName: "shop"}, map[string]string{"a": "1"})
	to := tmpl("web:2", map[string]string{"tier": "back"}, map[string]string{"b": "2"})
	c := inplace.Classify(from, to, "", inplace.ServerRules{})
	g.Expect(c.InPlace()).To(BeTrue())
	pod := &slimpod.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "7", Labels: map[string]string{appv1alpha1.LabelPodSet: "shop-ps"}}}
	st := inplace.State{Revision: "h2", Template: true}

	var patch map[string]any
	g.Expect(json.Unmarshal(inplace.TemplateUpdatePatch(pod, from, to, "h2", st, c, ""), &patch)).To(Succeed())
	g.Expect(patch).To(HaveKeyWithValue("metadata", And(
		HaveKeyWithValue("resourceVersion", "7"),
		HaveKeyWithValue("labels", Equal(map[string]any{
			"tier": "back", appv1alpha1.LabelRevisionHash: "h2",
			// Dropped by the template: the operator's own value again.
			appv1alpha1.LabelName: appv1alpha1.NameValue,
		})),
		HaveKeyWithValue("annotations", And(HaveKeyWithValue("a", BeNil()), HaveKeyWithValue("b", "2"), HaveKey(appv1alpha1.AnnotationInPlaceUpdate))),
	)))
	g.Expect(patch).To(HaveKeyWithValue("spec", Equal(map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web:2"}}})))
}

// A template's pod is stuck when a container its update restarts cannot
// start, whatever that container's name.
func TestStuckForATemplatesContainer(t *testing.T) {
	g := NewWithT(t)
	st := inplace.State{Revision: "new", Template: true, Restart: true, Containers: []inplace.ContainerUpdate{
		{Name: "web"}, {Name: "metrics", Restart: true, ContainerID: "containerd://old"},
	}}
	pod := &slimpod.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{appv1alpha1.AnnotationInPlaceUpdate: st.Encode()}},
		Status: slimpod.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "web", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "metrics", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such tag"}}},
		}},
	}
	g.Expect(inplace.Stuck(pod)).To(Equal("pod p: container metrics: ImagePullBackOff: no such tag"))
}
