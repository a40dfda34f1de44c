package inplace

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// ServerRules is what the API server the operator talks to allows of a resize,
// where it allows less than the newest Kubernetes. The zero value is the
// newest: every cpu and memory change within the QoS class, through
// pods/resize.
type ServerRules struct {
	// NoResize: the server does not serve pods/resize (Kubernetes before
	// 1.33), so cpu and memory change only with a new pod.
	NoResize bool
	// NoMemoryLimitDecrease: the server refuses to lower a container's
	// memory limit in place, or to set one where there was none, unless
	// the container's memory resizePolicy is RestartContainer (Kubernetes
	// 1.33 and 1.34; 1.35 lets the kubelet decide). The container cannot
	// be restarted into the lower limit either, the resize itself being
	// refused, so the change needs a new pod.
	NoMemoryLimitDecrease bool
}

// ServerRulesOf is the ServerRules of an API server of this version (its /version
// gitVersion, as "v1.33.5-eks-1a2b3c" or "v1.34.2+rhos") that serves
// pods/resize or not, as its discovery says. The version tells only what
// discovery cannot: the memory-limit rule of 1.33 and 1.34.
func ServerRulesOf(gitVersion string, resizeServed bool) (ServerRules, error) {
	v, err := version.ParseGeneric(gitVersion)
	if err != nil {
		return ServerRules{}, fmt.Errorf("the API server's version %q: %w", gitVersion, err)
	}
	s := ServerRules{NoResize: !resizeServed}
	if resizeServed && v.Major() == 1 && (v.Minor() == 33 || v.Minor() == 34) {
		s.NoMemoryLimitDecrease = true
	}
	return s, nil
}

// String says what the server does not allow, for the operator's log.
func (s ServerRules) String() string {
	switch {
	case s.NoResize:
		return "no pods/resize: cpu and memory changes replace the pod"
	case s.NoMemoryLimitDecrease:
		return "pods/resize, but a lower or new memory limit replaces the pod unless the container's memory resizePolicy is RestartContainer"
	default:
		return "pods/resize for every cpu and memory change within the QoS class"
	}
}

// resizeRefusal says why this server would refuse to resize a container
// from a to b (its defaulted resources) under policy, or "" if it would
// not. The rules every version has (no resource removed, only cpu and
// memory, the QoS class) are resourcesRefusal's and the callers'.
func (s ServerRules) resizeRefusal(a, b corev1.ResourceRequirements, policy []corev1.ContainerResizePolicy) string {
	if s.NoResize {
		return "cpu and memory change in place only through pods/resize, which this API server does not serve (Kubernetes 1.33 and later do)"
	}
	if !s.NoMemoryLimitDecrease || memoryResizePolicy(policy) == corev1.RestartContainer {
		return ""
	}
	newLimit, limited := b.Limits[corev1.ResourceMemory]
	oldLimit, wasLimited := a.Limits[corev1.ResourceMemory]
	switch {
	case limited && wasLimited && newLimit.Cmp(oldLimit) < 0:
		return "this API server (Kubernetes 1.33 or 1.34) lowers a memory limit in place only when the container's memory resizePolicy is RestartContainer"
	case limited && !wasLimited:
		return "this API server (Kubernetes 1.33 or 1.34) adds a memory limit in place only when the container's memory resizePolicy is RestartContainer"
	}
	return ""
}

// memoryResizePolicy is the container's resize policy for memory; "" when
// it has none, which the API server defaults to NotRequired.
func memoryResizePolicy(policy []corev1.ContainerResizePolicy) corev1.ResourceResizeRestartPolicy {
	for _, p := range policy {
		if p.ResourceName == corev1.ResourceMemory {
			return p.RestartPolicy
		}
	}
	return ""
}
