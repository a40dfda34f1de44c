// Package resizerules reads what the API server allows of an in-place
// resize (inplace.ServerRules) from its discovery and its version, for the
// manager to hand to the reconciler.
package resizerules

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	"github.com/example/podset-operator/controllers/inplace"
)

// Discover reads what the API server allows of an in-place
// resize: whether it serves pods/resize (discovery), and its version for
// the rule discovery does not tell (a memory limit lowered on 1.33 and
// 1.34). It asks again, backing off up to 30 s, until the server answers
// or ctx ends: the operator can do nothing before it answers anyway.
//
// The rules are read once. A control plane upgraded while the operator
// runs only ever allows more, so the rules read at start stay safe: a
// change they say needs new pods gets new pods, and the operator's next
// start reads the new rules.
func Discover(ctx context.Context, disc discovery.DiscoveryInterface, log logr.Logger) (inplace.ServerRules, error) {
	var rules inplace.ServerRules
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 30 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		var err error
		rules, err = rulesOf(disc)
		if err != nil {
			log.Error(err, "reading the API server's version and resources; trying again")
			return false, nil
		}
		return true, nil
	})
	return rules, err
}

func rulesOf(disc discovery.DiscoveryInterface) (inplace.ServerRules, error) {
	v, err := disc.ServerVersion()
	if err != nil {
		return inplace.ServerRules{}, fmt.Errorf("reading the API server's version: %w", err)
	}
	core, err := disc.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return inplace.ServerRules{}, fmt.Errorf("listing the resources of the core API: %w", err)
	}
	served := slices.ContainsFunc(core.APIResources, func(r metav1.APIResource) bool { return r.Name == "pods/resize" })
	return inplace.ServerRulesOf(v.GitVersion, served)
}
