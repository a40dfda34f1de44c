// Package slimpod defines Pod, the parts of a Kubernetes pod that the
// operator keeps and reads: what the pod cache holds for each of the
// operator's pods, and what the reconciler, the status and the in-place
// updates read.
//
// A corev1.Pod is 1,240 bytes before it holds anything, most of them the
// spec and status fields that the operator never reads; a Pod is 320.
// With tens of thousands of cached pods, that difference was a third of the
// operator's live heap (docs/benchmarks.md, "Growth").
//
// Pod's fields have the paths of corev1.Pod's (pod.Labels,
// pod.Spec.NodeName, pod.Status.Conditions), so that code reads one as it
// reads the other; the three that only some pods need are read through
// methods of the same names (pod.ReadinessGates()).
package slimpod
