// Package inplace is the pure part of in-place updates
// (spec.updateStrategy.rollingUpdate.podUpdatePolicy InPlaceIfPossible and
// InPlaceOnly): which template changes a running pod can take (Classify),
// the patches that make them, the state a pod carries through its update,
// and whether the kubelet has done it. It makes no API calls; the
// reconciler's in_place_updates.go does, with these functions.
//
// What changes in place is what the API server and the kubelet allow on a
// running pod, as OpenKruise's CloneSet decides it:
//
//   - the container's image: a pod patch; the kubelet restarts the
//     container with the new image;
//   - its cpu and memory requests and limits, through the pods/resize
//     subresource, as long as none is removed and the pod's QoS class stays
//     the same (the API server's own rules for a resize); the container
//     restarts only for a resource whose resizePolicy says RestartContainer;
//   - the pod's annotations: a pod patch, nothing restarts.
//
// Anything else (command, args, env, resizePolicy, ephemeral-storage) needs
// a new pod. A spec.template's pods take the same changes of each of their
// containers, and of their labels too (template_diff.go); the rest of a
// template needs new pods.
package inplace

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/controllers/operand"
	"github.com/example/podset-operator/controllers/revision"
)

// Change is what moving a pod from one template to another takes.
type Change struct {
	// NotInPlace names the first spec field whose change needs a new pod,
	// with why; empty when the whole change can be made in place.
	NotInPlace string
	// Image: the container's image changes, and the kubelet restarts it.
	Image bool
	// Resources: cpu or memory requests or limits change (pods/resize).
	Resources bool
	// ResizeRestarts: a changed resource's resizePolicy is
	// RestartContainer, so the resize restarts the container.
	ResizeRestarts bool
	// Annotations: the pod annotations of the template change.
	Annotations bool
	// Labels: the pod labels of a spec.template change.
	Labels bool
	// Containers are, for a change that involves a spec.template, the
	// containers it reaches: a new image, or new cpu and memory. The short
	// form's one container is told by the fields above alone.
	Containers []ContainerChange
}

// ContainerChange is what an in-place update of a template's pod does to
// one of its containers.
type ContainerChange struct {
	Name string
	// Image is the container's new image, "" when it keeps its own.
	Image string
	// Resources are the container's new cpu and memory requests and
	// limits, as a resize sends them; nil when they stay.
	Resources *corev1.ResourceRequirements
	// Restarts: the kubelet restarts the container (a new image, or a
	// resize its resizePolicy restarts for).
	Restarts bool
}

// InPlace reports whether the whole change can be made to a running pod.
func (c Change) InPlace() bool { return c.NotInPlace == "" }

// Restarts reports whether the change restarts the container, which takes
// the pod out of service while it does.
func (c Change) Restarts() bool { return c.Image || c.ResizeRestarts }

// None reports whether the templates make the same pods.
func (c Change) None() bool {
	return c.NotInPlace == "" && !c.Image && !c.Resources && !c.ResizeRestarts && !c.Annotations && !c.Labels && len(c.Containers) == 0
}

// Classify says what moving a pod made from template from to template to
// takes, on an API server that allows what server says of a resize.
// defaultImage is the operator's operand image, which pods of a template
// that names none run.
func Classify(from, to revision.Template, defaultImage string, server ServerRules) Change {
	if !from.IsShortForm() || !to.IsShortForm() {
		return classifyTemplates(from, to, defaultImage, server)
	}
	var c Change
	a, b := operand.Container(from, defaultImage), operand.Container(to, defaultImage)
	a.Resources, b.Resources = DefaultedResources(a.Resources), DefaultedResources(b.Resources)
	switch {
	case !slices.Equal(a.Command, b.Command):
		if slices.Equal(from.Command, to.Command) {
			// Only the image changed, to or from the default one,
			// which runs a command of its own.
			c.NotInPlace = "spec.image: setting or unsetting it changes the command the container runs"
		} else {
			c.NotInPlace = "spec.command"
		}
	case !slices.Equal(a.Args, b.Args):
		c.NotInPlace = "spec.args"
	case !sameByKey(a.Env, b.Env, func(e corev1.EnvVar) string { return e.Name }):
		c.NotInPlace = "spec.env"
	case !sameByKey(a.ResizePolicy, b.ResizePolicy, func(p corev1.ContainerResizePolicy) string { return string(p.ResourceName) }):
		c.NotInPlace = "spec.resizePolicy"
	case from.PodAnnotations[appv1alpha1.AnnotationRestartedAt] != to.PodAnnotations[appv1alpha1.AnnotationRestartedAt]:
		c.NotInPlace = "spec.podAnnotations[" + appv1alpha1.AnnotationRestartedAt + "]: it asks for new pods"
	case appArmorChange(from.PodAnnotations, to.PodAnnotations) != "":
		c.NotInPlace = "spec.podAnnotations[" + appArmorChange(from.PodAnnotations, to.PodAnnotations) + "]: " + appArmorWhy
	}
	if c.NotInPlace != "" {
		return c
	}
	c.Image = a.Image != b.Image
	c.Annotations = !maps.Equal(from.PodAnnotations, to.PodAnnotations)
	if !equality.Semantic.DeepEqual(a.Resources, b.Resources) {
		why := resourcesRefusal(a.Resources, b.Resources)
		if qa, qb := QOSClass(a.Resources), QOSClass(b.Resources); why == "" && qa != qb {
			why = "the QoS class would change from " + string(qa) + " to " + string(qb)
		}
		if why == "" {
			why = server.resizeRefusal(a.Resources, b.Resources, b.ResizePolicy)
		}
		if why != "" {
			c.NotInPlace = "spec.resources: " + why
			return c
		}
		c.Resources = true
		c.ResizeRestarts = resizeRestarts(a.Resources, b.Resources, b.ResizePolicy)
	}
	return c
}

// appArmorPrefix starts the annotations that set a container's AppArmor
// profile, which the API server lets no update of a pod add, change or
// remove.
const appArmorPrefix = "container.apparmor.security.beta.kubernetes.io/"

const appArmorWhy = "the AppArmor annotations of a running pod cannot change"

// appArmorChange is the first AppArmor annotation (in sorted order) that
// differs between from and to, or "".
func appArmorChange(from, to map[string]string) string {
	var changed []string
	for _, pair := range [][2]map[string]string{{from, to}, {to, from}} {
		for k, v := range pair[0] {
			if w, ok := pair[1][k]; strings.HasPrefix(k, appArmorPrefix) && (!ok || w != v) {
				changed = append(changed, k)
			}
		}
	}
	if len(changed) == 0 {
		return ""
	}
	return slices.Min(changed)
}

// sameByKey reports whether two lists hold the same items, in any order.
// env and resizePolicy are lists keyed by name (listType=map), whose order the
// API server does not hold to either: its CEL rules compare such lists
// without it, and so does this. A change of order only is made in place as no
// change at all (the running container keeps its order).
func sameByKey[T any](a, b []T, key func(T) string) bool {
	if len(a) != len(b) {
		return false
	}
	byKey := make(map[string]T, len(a))
	for _, x := range a {
		byKey[key(x)] = x
	}
	for _, y := range b {
		if x, ok := byKey[key(y)]; !ok || !equality.Semantic.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// DefaultedResources is r as the API server stores it in a pod: a resource
// limited but not requested is requested at its limit. A resize must send
// those requests (a patch that names only the limits keeps the stored
// requests, and could change the QoS class), and the rules of a resize hold
// for them.
func DefaultedResources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Requests: r.Requests.DeepCopy(), Limits: r.Limits.DeepCopy()}
	for name, q := range r.Limits {
		if _, ok := out.Requests[name]; !ok {
			if out.Requests == nil {
				out.Requests = corev1.ResourceList{}
			}
			out.Requests[name] = q.DeepCopy()
		}
	}
	return out
}

// resourcesRefusal says why the API server would refuse to resize a
// container from a to b, or "" if it would not, the pod's QoS class aside:
// only cpu and memory may change, and none may be removed.
func resourcesRefusal(a, b corev1.ResourceRequirements) string {
	for _, pair := range [][2]corev1.ResourceList{{a.Requests, b.Requests}, {a.Limits, b.Limits}} {
		for name, q := range pair[0] {
			have, ok := pair[1][name]
			if !ok {
				return string(name) + " cannot be removed in place"
			}
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory && have.Cmp(q) != 0 {
				return string(name) + " cannot change in place"
			}
		}
		for name := range pair[1] {
			if _, ok := pair[0][name]; !ok && name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				return string(name) + " cannot be added in place"
			}
		}
	}
	return ""
}

// resizeRestarts reports whether a changed resource's resize policy asks
// for a container restart. Without a policy the kubelet resizes a resource
// without one.
func resizeRestarts(a, b corev1.ResourceRequirements, policy []corev1.ContainerResizePolicy) bool {
	for _, p := range policy {
		if p.RestartPolicy != corev1.RestartContainer {
			continue
		}
		if !sameQuantity(a.Requests, b.Requests, p.ResourceName) || !sameQuantity(a.Limits, b.Limits, p.ResourceName) {
			return true
		}
	}
	return false
}

func sameQuantity(a, b corev1.ResourceList, name corev1.ResourceName) bool {
	qa, oka := a[name]
	qb, okb := b[name]
	return oka == okb && qa.Cmp(qb) == 0
}

// QOSClass is the QoS class of a pod whose only container has these
// resources, as the API server computes it: BestEffort without positive cpu
// or memory requests and limits, Guaranteed when cpu and memory have
// positive limits and each request equals its limit (a missing one defaults
// to it; a request of 0 does not count, so it makes the class Burstable),
// and Burstable otherwise.
func QOSClass(r corev1.ResourceRequirements) corev1.PodQOSClass {
	compute := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	positive := func(l corev1.ResourceList, name corev1.ResourceName) (resource.Quantity, bool) {
		q, ok := l[name]
		return q, ok && q.Sign() > 0
	}
	guaranteed, any := true, false
	for _, name := range compute {
		limit, limited := positive(r.Limits, name)
		_, requested := positive(r.Requests, name)
		any = any || limited || requested
		if !limited {
			guaranteed = false
			continue
		}
		if request, ok := r.Requests[name]; ok && request.Cmp(limit) != 0 {
			guaranteed = false
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}
