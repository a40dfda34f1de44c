package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
)

// Nodes created by the cluster carry this annotation; kwok manages exactly
// those (and leaves any other Node alone).
const (
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeValue      = "fake"
)

// kwokArgs points kwok at the Stage objects its module ships (bin/kwok-stages,
// copied there by hack/build-tool.sh): without Stages kwok does nothing.
func (c *Cluster) kwokArgs() ([]string, error) {
	stageDir := filepath.Join(c.opts.BinDir, "kwok-stages")
	stages, err := filepath.Glob(filepath.Join(stageDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("no kwok Stage YAMLs in %s (run `make cluster-tools`)", stageDir)
	}
	sort.Strings(stages)
	stages = slices.DeleteFunc(stages, func(s string) bool { return filepath.Base(s) == "kustomization.yaml" })
	args := []string{
		"--kubeconfig=" + c.componentKubeconfig("kwok"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=" + kwokNodeValue,
		// kube-controller-manager marks a node unreachable when its lease is
		// older than 40s; kwok's default lease duration lets that happen and
		// every pod then turns NotReady.
		"--node-lease-duration-seconds=40",
		"--server-address=" + "127.0.0.1:" + strconv.Itoa(c.ports.kwok),
		// Only used for nodes without spec.podCIDR; ours all have one.
		"--cidr=10.64.0.0/12",
		// The pods of a lost node (LoseNode) are left alone. The flag is
		// deprecated in favour of Stage selectors, which would have to
		// repeat the condition in each of kwok's pod Stages.
		"--disregard-status-with-annotation-selector=" + lostNodePodAnnotation,
	}
	for _, s := range stages {
		args = append(args, "--config="+s)
	}
	if n := c.opts.KwokPodParallelism; n > 0 {
		path := filepath.Join(c.workDir, "kwok-configuration.yaml")
		// A configuration given on the command line is not defaulted:
		// the other parallelisms must be set too (kwok's defaults), or
		// kwok refuses to start ("node leases parallelism must be
		// greater than 0").
		cfg := fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: %d
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
`, n)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--config="+path)
	}
	return append(args, c.opts.KwokArgs...), nil
}

// kwokEnv isolates kwok from a ~/.kwok/kwok.yaml of the user, which it would
// otherwise load in addition to our configuration.
func (c *Cluster) kwokEnv() ([]string, error) {
	home := filepath.Join(c.workDir, "kwok-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	return []string{"HOME=" + home}, nil
}
