package localcluster

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeName is the name of the i-th fake node.
func NodeName(i int) string { return nodeNamePrefix + strconv.Itoa(i) }

const nodeNamePrefix = "kwok-node-"

// createNodes registers the fake Nodes. They are labelled like nodes of a
// real linux/amd64 cluster so that pods with the usual nodeSelectors and
// affinities (kubernetes.io/os=linux) schedule, and sized so that thousands
// of pods fit.
func createNodes(ctx context.Context, cs kubernetes.Interface, n, podsPerNode int) error {
	for i := range n {
		if err := createNode(ctx, cs, i, podsPerNode); err != nil {
			return err
		}
	}
	return nil
}

func createNode(ctx context.Context, cs kubernetes.Interface, i, podsPerNode int) error {
	name := NodeName(i)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("1000"),
		corev1.ResourceMemory:           resource.MustParse("4Ti"),
		corev1.ResourceEphemeralStorage: resource.MustParse("10Ti"),
		corev1.ResourcePods:             *resource.NewQuantity(int64(podsPerNode), resource.DecimalSI),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"kubernetes.io/hostname": name,
				"type":                   "kwok",
			},
			Annotations: map[string]string{
				kwokNodeAnnotation: kwokNodeValue,
				// Lets the kubelet-less node skip the object TTL cache.
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{
			// kwok hands out pod IPs from here; /16 per node keeps IPs
			// unique across nodes for any pods capacity we allow.
			PodCIDR:  fmt.Sprintf("10.%d.0.0/16", 128+i),
			PodCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", 128+i)},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: "linux",
				Architecture:    "amd64",
				KubeletVersion:  "fake",
			},
		},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	return nil
}
