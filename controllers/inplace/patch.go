package inplace

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
	"github.com/example/podset-operator/controllers/slimpod"
)

// The patches are strategic merge patches: containers merge by name and
// conditions by type, so each patch names only what it changes, and what
// others wrote to the pod (a LimitRange's defaults, another controller's
// annotations or conditions) stays.

// UpdatePatch is the pod patch that moves pod from template from to
// template to (hash toHash) in place, once any resize is done: the image,
// the template's annotations (those it dropped are removed), the revision
// label and the update's state. It carries pod's resourceVersion, so that
// the API server refuses it if pod changed since it was read.
func UpdatePatch(pod *slimpod.Pod, from, to revision.Template, toHash string, st State, defaultImage string) []byte {
	annotations := mapPatch(from.PodAnnotations, to.PodAnnotations, nil)
	annotations[appv1alpha1.AnnotationInPlaceUpdate] = st.Encode()
	patch := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": pod.ResourceVersion,
			"labels":          map[string]string{appv1alpha1.LabelRevisionHash: toHash},
			"annotations":     annotations,
		},
	}
	if image := operand.Container(to, defaultImage).Image; image != operand.Container(from, defaultImage).Image {
		patch["spec"] = map[string]any{"containers": []map[string]any{{
			"name":  operand.ContainerName,
			"image": image,
		}}}
	}
	return mustJSON(patch)
}

// TemplateUpdatePatch is UpdatePatch for a change c that involves a
// spec.template: each changed container's image, the template's labels
// (those it dropped are removed, or set back to the operator's value of
// that key) and annotations, the revision label and the update's state.
func TemplateUpdatePatch(pod *slimpod.Pod, from, to revision.Template, toHash string, st State, c Change, defaultImage string) []byte {
	a, b := operand.PodTemplate(from, defaultImage), operand.PodTemplate(to, defaultImage)
	annotations := mapPatch(a.Annotations, b.Annotations, nil)
	annotations[appv1alpha1.AnnotationInPlaceUpdate] = st.Encode()
	labels := mapPatch(a.Labels, b.Labels, operand.Labels(&appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: pod.Labels[appv1alpha1.LabelPodSet]}}))
	labels[appv1alpha1.LabelRevisionHash] = toHash
	patch := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": pod.ResourceVersion,
			"labels":          labels,
			"annotations":     annotations,
		},
	}
	var containers []map[string]any
	for _, cc := range c.Containers {
		if cc.Image != "" {
			containers = append(containers, map[string]any{"name": cc.Name, "image": cc.Image})
		}
	}
	if len(containers) > 0 {
		patch["spec"] = map[string]any{"containers": containers}
	}
	return mustJSON(patch)
}

// mapPatch is the part of a merge patch that moves a map of the pod's
// metadata from one template's to the next's: every key of to, and null
// for each key to dropped, or its value in defaults (the operator's labels come
// back where a template stops setting its own).
func mapPatch(from, to, defaults map[string]string) map[string]any {
	out := map[string]any{}
	for k := range from {
		if _, kept := to[k]; !kept {
			out[k] = nil
			if v, ok := defaults[k]; ok {
				out[k] = v
			}
		}
	}
	for k, v := range to {
		out[k] = v
	}
	return out
}

// ResizePatch is the pods/resize patch that gives the container the cpu and
// memory r (WantedResources). Requests and limits it does not name stay as
// they are.
func ResizePatch(r corev1.ResourceRequirements) []byte {
	return mustJSON(map[string]any{"spec": map[string]any{"containers": []map[string]any{{
		"name":      operand.ContainerName,
		"resources": r,
	}}}})
}

// ResizePatchOf is the pods/resize patch of the resize st awaits: of the
// short form's container, or of each container of a template's pod that
// awaits one.
func ResizePatchOf(st State) []byte {
	if !st.Template {
		return ResizePatch(*st.Resources)
	}
	var containers []map[string]any
	for _, cu := range st.Containers {
		if cu.Resources != nil {
			containers = append(containers, map[string]any{"name": cu.Name, "resources": cu.Resources})
		}
	}
	return mustJSON(map[string]any{"spec": map[string]any{"containers": containers}})
}

// WantedResources are the cpu and memory requests and limits the container
// of template to's pods has, as the API server stores them.
func WantedResources(to revision.Template, defaultImage string) corev1.ResourceRequirements {
	return computeResources(DefaultedResources(operand.Container(to, defaultImage).Resources))
}

// computeResources is the cpu and memory part of r, which a resize changes.
func computeResources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	pick := func(l corev1.ResourceList) corev1.ResourceList {
		out := corev1.ResourceList{}
		maps.Copy(out, l)
		maps.DeleteFunc(out, func(name corev1.ResourceName, _ resource.Quantity) bool {
			return name != corev1.ResourceCPU && name != corev1.ResourceMemory
		})
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: pick(r.Requests), Limits: pick(r.Limits)}
}

// GatePatch is the pods/status patch that sets the in-place gate's
// condition. A patch that puts a pod back in service (status True) carries
// the resourceVersion the decision was made on: if the pod changed since,
// say a new update began, it is refused and decided again.
func GatePatch(pod *slimpod.Pod, status corev1.ConditionStatus, reason, message string, now time.Time) []byte {
	metadata := map[string]any{}
	if status == corev1.ConditionTrue {
		metadata["resourceVersion"] = pod.ResourceVersion
	}
	return mustJSON(map[string]any{
		"metadata": metadata,
		"status": map[string]any{"conditions": []corev1.PodCondition{{
			Type:               appv1alpha1.PodConditionInPlaceUpdateReady,
			Status:             status,
			Reason:             reason,
			Message:            message,
			LastTransitionTime: metav1.NewTime(now),
		}}},
	})
}

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding a pod patch: %v", err))
	}
	return raw
}
