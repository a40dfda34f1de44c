package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// schedulerArgs writes a KubeSchedulerConfiguration (the only non-deprecated
// way to set its client QPS) and returns the flags pointing at it.
func (c *Cluster) schedulerArgs() ([]string, error) {
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %v
  burst: %d
leaderElection:
  leaderElect: false
`, c.componentKubeconfig("kube-scheduler"), c.opts.SchedulerQPS, c.opts.SchedulerBurst)
	path := filepath.Join(c.workDir, "kube-scheduler.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	args := []string{
		"--config=" + path,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.ports.scheduler),
		"--cert-dir=" + filepath.Join(c.workDir, "kube-scheduler"),
		"--v=1",
	}
	return append(args, c.opts.SchedulerArgs...), nil
}
