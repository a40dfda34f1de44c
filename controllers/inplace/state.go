package inplace

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/slimpod"
)

// State is what a pod carries, in the annotation AnnotationInPlaceUpdate,
// through an in-place update: the revision it moves to, and what tells
// that the kubelet has made the change. It is written in the same patch as
// the revision label, so a pod never has one without the other, and it
// stays once the update is done: whether it is done is judged from the
// pod's status each time (Done), which a restarted operator can do too.
type State struct {
	// Revision is the hash of the revision the pod moves to.
	Revision string `json:"revision"`
	// Restart: a new container is awaited (a new image, or a resize that
	// restarts), one whose ID differs from ContainerID.
	Restart     bool   `json:"restart,omitempty"`
	ContainerID string `json:"containerID,omitempty"`
	// Resize: the container's cpu and memory are awaited at Resources.
	Resize    bool                         `json:"resize,omitempty"`
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Restarts is the container's restart count when the update was
	// made: the restarts since the pod took the revision are counted
	// from it (plus the update's own restart, with Restart). Absent in
	// the states that earlier releases wrote.
	Restarts *int32 `json:"restarts,omitempty"`
	// Containers are, for a pod of a spec.template, what the update awaits
	// of each of its containers, by name (Restart and Resize above then say
	// whether any of them awaits one). The fields above are the short
	// form's, whose pods have one container, as earlier releases wrote them.
	Containers []ContainerUpdate `json:"containers,omitempty"`
	// Template: the pod is a spec.template's, and Containers say what the
	// update awaits (none, for a change of labels or annotations only).
	Template bool `json:"template,omitempty"`
}

// ContainerUpdate is what an in-place update awaits of one container of a
// template's pod.
type ContainerUpdate struct {
	Name string `json:"name"`
	// Restart: a container other than ContainerID is awaited.
	Restart     bool   `json:"restart,omitempty"`
	ContainerID string `json:"containerID,omitempty"`
	// Resources: the container's cpu and memory are awaited at these.
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Restarts is the container's restart count when the update was made.
	Restarts int32 `json:"restarts"`
}

// NewContainerUpdates are the states of every container of pod (init
// containers included, whose restarts count too) for an update that makes
// the given changes: the restart count of each, and what the changed ones
// await.
func NewContainerUpdates(pod *slimpod.Pod, changes []ContainerChange) []ContainerUpdate {
	byName := map[string]ContainerChange{}
	for _, c := range changes {
		byName[c.Name] = c
	}
	var out []ContainerUpdate
	for _, cs := range pod.Status.ContainerStatuses {
		cu := ContainerUpdate{Name: cs.Name, Restarts: cs.RestartCount}
		if c, ok := byName[cs.Name]; ok {
			delete(byName, cs.Name)
			cu.Restart, cu.Resources = c.Restarts, c.Resources
			if c.Restarts {
				cu.ContainerID = cs.ContainerID
			}
		}
		out = append(out, cu)
	}
	// A container the kubelet has not reported yet.
	for _, c := range changes {
		if _, left := byName[c.Name]; left {
			out = append(out, ContainerUpdate{Name: c.Name, Restart: c.Restarts, Resources: c.Resources})
		}
	}
	return out
}

// RestartsBefore is how many of the container's restarts (status cs) are
// not the revision's: those before the update, and the update's own. For
// a state without Restarts, the count is taken from cs: the update's own
// restart is still to come while cs shows the container from before it.
func (st State) RestartsBefore(cs *corev1.ContainerStatus) int32 {
	if st.Template {
		for _, cu := range st.Containers {
			if cs != nil && cu.Name == cs.Name {
				if cu.Restart {
					return cu.Restarts + 1
				}
				return cu.Restarts
			}
		}
		if cs == nil {
			return 0
		}
		return cs.RestartCount
	}
	own := int32(0)
	if st.Restart {
		own = 1
	}
	switch {
	case st.Restarts != nil:
		return *st.Restarts + own
	case cs == nil:
		return 0
	case st.Restart && cs.ContainerID == st.ContainerID:
		return cs.RestartCount + own
	default:
		return cs.RestartCount
	}
}

// StateOf reads the state of pod's in-place update, if it has one.
func StateOf(pod *slimpod.Pod) (State, bool) {
	raw, ok := pod.Annotations[appv1alpha1.AnnotationInPlaceUpdate]
	if !ok {
		return State{}, false
	}
	var st State
	if err := json.Unmarshal([]byte(raw), &st); err != nil || st.Revision == "" {
		// Not ours to read (a hand edit): judged as no update at all,
		// so the pod is counted by its revision label alone.
		return State{}, false
	}
	return st, true
}

// Encode is the annotation value of st.
func (st State) Encode() string {
	raw, err := json.Marshal(st)
	if err != nil {
		// Strings, booleans and quantities always encode.
		panic(fmt.Sprintf("encoding an in-place update state: %v", err))
	}
	return string(raw)
}

// Pending reports whether pod is going through an in-place update that the
// kubelet has not finished: it carries the update revision's label, but
// does not run that revision yet, so it does not count as updated.
func Pending(pod *slimpod.Pod) bool {
	st, ok := StateOf(pod)
	if !ok || st.Revision != pod.Labels[appv1alpha1.LabelRevisionHash] {
		return false
	}
	return !Done(pod, st)
}

// Done reports whether the kubelet has made the change st awaits:
//
//   - it has seen the pod's latest spec (status.observedGeneration, where the
//     kubelet reports one);
//   - for a restart, a container other than the one before the update runs
//     and is ready. The container ID is what tells, not the image ID: a new
//     tag of the same digest has the same image ID, and judging by it would
//     wait forever (OpenKruise's CloneSet #2297);
//   - for a resize, the container's resources in the status are those
//     asked for, and no resize is pending or in progress.
func Done(pod *slimpod.Pod, st State) bool {
	if observed := pod.ObservedGeneration(); observed != 0 && observed < pod.Generation {
		return false
	}
	if st.Resize && !st.Template && st.Resources == nil {
		// A resize awaited at nothing known: never done.
		return false
	}
	for _, cu := range st.awaited() {
		cs := containerStatusNamed(pod, cu.Name)
		if cs == nil {
			return false
		}
		if cu.Restart && (cs.ContainerID == "" || cs.ContainerID == cu.ContainerID || cs.State.Running == nil || !cs.Ready) {
			return false
		}
		if cu.Resources != nil && !resourcesReported(cs, cu.Resources) {
			return false
		}
	}
	if st.Resize {
		for _, c := range pod.Status.Conditions {
			if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
				return false
			}
		}
	}
	return true
}

// ResizeLost reports whether the resize st awaits shows nowhere in the
// kubelet's report: the container's resources are not yet those asked for,
// and no resize is pending or under way. Either the resize was never sent,
// or the kubelet has not seen it yet; sending it again is harmless.
func ResizeLost(pod *slimpod.Pod, st State) bool {
	if !st.Resize || !st.Template && st.Resources == nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	for _, cu := range st.awaited() {
		if cu.Resources != nil && !resourcesReported(containerStatusNamed(pod, cu.Name), cu.Resources) {
			return true
		}
	}
	return false
}

// awaited is what the update awaits of each container: the template's
// containers, or the short form's one container.
func (st State) awaited() []ContainerUpdate {
	if st.Template {
		return st.Containers
	}
	cu := ContainerUpdate{Name: operand.ContainerName, Restart: st.Restart, ContainerID: st.ContainerID}
	if st.Resize {
		cu.Resources = st.Resources
	}
	return []ContainerUpdate{cu}
}

// resourcesReported reports whether the kubelet reports the container's
// resources at want.
func resourcesReported(cs *corev1.ContainerStatus, want *corev1.ResourceRequirements) bool {
	return cs != nil && cs.Resources != nil && covers(cs.Resources.Requests, want.Requests) && covers(cs.Resources.Limits, want.Limits)
}

// covers reports whether have holds every quantity of want.
func covers(have, want corev1.ResourceList) bool {
	for name, q := range want {
		if h, ok := have[name]; !ok || h.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// ContainerStatus is the status of the short form's container, or nil.
func ContainerStatus(pod *slimpod.Pod) *corev1.ContainerStatus {
	return containerStatusNamed(pod, operand.ContainerName)
}

func containerStatusNamed(pod *slimpod.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// stuckReasons are the reasons a container waits with that no wait ends:
// the image cannot be pulled or run, or the container keeps crashing.
var stuckReasons = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CrashLoopBackOff":           true,
	"CreateContainerError":       true,
	"CreateContainerConfigError": true,
	"RunContainerError":          true,
}

// Stuck says why pod's in-place update does not come to an end, or "" when
// nothing says it will not: its new container cannot start, or the kubelet
// found the resize infeasible.
func Stuck(pod *slimpod.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonInfeasible {
			return fmt.Sprintf("pod %s: resize infeasible: %s", pod.Name, c.Message)
		}
	}
	names := []string{operand.ContainerName}
	if st, ok := StateOf(pod); ok && st.Template {
		names = nil
		for _, cu := range st.Containers {
			if cu.Restart {
				names = append(names, cu.Name)
			}
		}
	}
	for _, name := range names {
		if cs := containerStatusNamed(pod, name); cs != nil && cs.State.Waiting != nil && stuckReasons[cs.State.Waiting.Reason] {
			msg := fmt.Sprintf("pod %s: container %s: %s", pod.Name, cs.Name, cs.State.Waiting.Reason)
			if cs.State.Waiting.Message != "" {
				msg += ": " + cs.State.Waiting.Message
			}
			return msg
		}
	}
	return ""
}
