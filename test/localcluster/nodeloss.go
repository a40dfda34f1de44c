package localcluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// A lost node, for the fault matrix. kwok renews a node's Lease, reports its
// status and plays its pods' lifecycle only while it holds that Lease (its
// high-availability mode: another holder means another kwok serves the
// node). A Lease taken by a holder that never renews it again therefore
// leaves the node as a host that lost power or network leaves it: no
// heartbeat, so the node lifecycle controller marks it unreachable after its
// grace period and taints it NoExecute, and its pods, evicted once their
// toleration runs out, stay Terminating, since no kubelet confirms their
// end.
//
// kwok decides whether it holds a Lease from its informer cache, which can
// lag by tens of seconds; while it wrongly believes it holds a lost node's
// Lease, it would end the node's evicted pods as a live kubelet does. So the
// pods bound to a lost node also carry lostNodePodAnnotation, which kwok is
// started to disregard (kwokArgs): nothing ends them, whatever kwok's view
// of the Lease.
const lostNodeHolder = "lost-host"

// lostNodePodAnnotation marks the pods of a lost node; kwok neither reports
// their status nor ends them while they carry it (a step of kwok's that was
// already queued for a pod when it was marked still runs: marking comes
// before the evictions, so that none of those is one of their deletions).
const lostNodePodAnnotation = "localcluster.podset-operator.example.com/on-lost-node"

// LoseNode makes the node name go silent, as above, and marks the pods bound
// to it.
func (c *Cluster) LoseNode(ctx context.Context, name string) error {
	err := c.updateNodeLease(ctx, name, func(spec *coordinationv1.LeaseSpec) {
		spec.HolderIdentity = ptr.To(lostNodeHolder)
		spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		// Far ahead: kwok takes a Lease over only once it has expired.
		spec.LeaseDurationSeconds = ptr.To(int32(3600))
	})
	if err != nil {
		return err
	}
	return c.MarkPodsOfLostNode(ctx, name)
}

// MarkPodsOfLostNode marks the pods bound to lost node name that are not
// marked yet: those the scheduler bound there after LoseNode, before the
// node lifecycle controller tainted it.
func (c *Cluster) MarkPodsOfLostNode(ctx context.Context, name string) error {
	return c.markPodsOfNode(ctx, name, true)
}

// RestoreNode gives a lost node back to kwok: with the Lease released and
// its pods unmarked, kwok takes the Lease at its next renewal, reports the
// node Ready again and ends the pods left Terminating there, as a kubelet
// coming back would.
//
// The pods are unmarked first: kwok syncs a node's pods when it takes its
// Lease, and pods still marked then would be skipped for good.
func (c *Cluster) RestoreNode(ctx context.Context, name string) error {
	if err := c.markPodsOfNode(ctx, name, false); err != nil {
		return err
	}
	return c.updateNodeLease(ctx, name, func(spec *coordinationv1.LeaseSpec) {
		spec.HolderIdentity, spec.RenewTime = nil, nil
	})
}

// markPodsOfNode sets (lost) or removes lostNodePodAnnotation on the pods
// bound to node name, in every namespace. A pod gone meanwhile is skipped.
func (c *Cluster) markPodsOfNode(ctx context.Context, name string, lost bool) error {
	cs, err := c.adminClientset()
	if err != nil {
		return err
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return fmt.Errorf("listing the pods of node %s: %w", name, err)
	}
	value, doing := `"true"`, "marking"
	if !lost {
		value, doing = "null", "unmarking"
	}
	patch := []byte(`{"metadata":{"annotations":{"` + lostNodePodAnnotation + `":` + value + `}}}`)
	for _, pod := range pods.Items {
		if _, marked := pod.Annotations[lostNodePodAnnotation]; marked == lost {
			continue
		}
		_, err := cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s pod %s/%s of node %s: %w", doing, pod.Namespace, pod.Name, name, err)
		}
	}
	return nil
}

// RecreateNode registers a fake node again after a test deleted it; kwok
// serves it as soon as it appears.
func (c *Cluster) RecreateNode(ctx context.Context, name string) error {
	i, err := strconv.Atoi(strings.TrimPrefix(name, nodeNamePrefix))
	if err != nil || NodeName(i) != name {
		return fmt.Errorf("%q is not a node of the local cluster", name)
	}
	cs, err := c.adminClientset()
	if err != nil {
		return err
	}
	return createNode(ctx, cs, i, c.opts.PodsPerNode)
}

func (c *Cluster) updateNodeLease(ctx context.Context, name string, change func(*coordinationv1.LeaseSpec)) error {
	cs, err := c.adminClientset()
	if err != nil {
		return err
	}
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	// kwok renews the Lease concurrently; a conflict means it did, and
	// the change is made again on what it wrote.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the Lease of node %s: %w", name, err)
		}
		change(&lease.Spec)
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
}
