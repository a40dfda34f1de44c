package localcluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
const lostNodeHolder = "lost-host"

// LoseNode makes the node name go silent, as above.
func (c *Cluster) LoseNode(ctx context.Context, name string) error {
	return c.updateNodeLease(ctx, name, func(spec *coordinationv1.LeaseSpec) {
		spec.HolderIdentity = ptr.To(lostNodeHolder)
		spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		// Far ahead: kwok takes a Lease over only once it has expired.
		spec.LeaseDurationSeconds = ptr.To(int32(3600))
	})
}

// RestoreNode gives a lost node back to kwok: with the Lease released, kwok
// takes it at its next renewal, reports the node Ready again and ends the
// pods left Terminating there, as a kubelet coming back would.
func (c *Cluster) RestoreNode(ctx context.Context, name string) error {
	return c.updateNodeLease(ctx, name, func(spec *coordinationv1.LeaseSpec) {
		spec.HolderIdentity, spec.RenewTime = nil, nil
	})
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
