//go:build e2e && realnode

package e2e

// The operator-sdk commands that users run against a cluster, run here as
// the README gives them, on the real node: the pods they create really run,
// from images the node pulls from the cluster's registry.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/example/podset-operator/test/localcluster"
)

// scorecardUntarImage replaces the scorecard's default untar image (an
// upstream digest that no local build can match) with the node's busybox,
// whose tar does the same.
const scorecardUntarImage = "docker.io/library/busybox:1.37.0"

// makeTarget runs `make TARGET VARS...` in the repository, as a user would,
// against the local cluster.
func makeTarget(t *testing.T, target string, vars ...string) (string, error) {
	cmd := exec.CommandContext(t.Context(), "make", append([]string{"-s", target}, vars...)...)
	cmd.Dir = env.repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.cluster.KubeconfigPath())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		step("make %s failed: %v\n%s", target, err, stderr.String())
	}
	return string(out), err
}

// testRealScorecard: `make scorecard` runs the bundle's six scorecard tests
// as pods on the node, their image pulled from the registry under the name
// that bundle/tests/scorecard/config.yaml gives, and every one passes.
func testRealScorecard(t *testing.T) {
	ns := newNamespace(t, "real-scorecard", nil)
	ran := watchCompletedPods(t, ns, "app=scorecard-test", "scorecard-test")

	step("make scorecard in %s (six tests, each a pod)", ns)
	out, err := makeTarget(t, "scorecard", "SCORECARD_FLAGS=--namespace="+ns+" --untar-image="+scorecardUntarImage+" --output=json")
	Expect(err).NotTo(HaveOccurred(), "make scorecard: %s", out)

	// operator-sdk's v1alpha3 TestList, the fields this test reads.
	var list struct {
		Items []struct {
			Spec struct {
				Image      string   `json:"image"`
				Entrypoint []string `json:"entrypoint"`
			} `json:"spec"`
			Status struct {
				Results []struct {
					Name   string   `json:"name"`
					State  string   `json:"state"`
					Errors []string `json:"errors"`
				} `json:"results"`
			} `json:"status"`
		} `json:"items"`
	}
	Expect(json.Unmarshal([]byte(out), &list)).To(Succeed(), "scorecard output: %s", out)
	Expect(list.Items).To(HaveLen(6), "scorecard output: %s", out)
	for _, item := range list.Items {
		Expect(item.Status.Results).NotTo(BeEmpty(), "test %v has no result", item.Spec.Entrypoint)
		for _, r := range item.Status.Results {
			Expect(r.State).To(Equal("pass"), "scorecard test %s: %v", r.Name, r.Errors)
		}
		Expect(item.Spec.Image).To(HavePrefix("quay.io/operator-framework/scorecard-test:"))
	}
	// The results come from the test pods' logs; check that there were
	// six pods and that their test container ran to completion on the node.
	pods := ran()
	Expect(pods).To(HaveLen(6), "scorecard test pods whose test container exited 0: %v", pods)
	for name, node := range pods {
		Expect(node).To(Equal(localcluster.RealNodeName), "pod %s", name)
	}
}

// watchCompletedPods watches the pods of ns that match selector from now
// on; the function it returns stops the watch and gives the pods whose
// container exited with code 0, with their node. (The scorecard deletes a
// test pod as soon as its container has terminated, often before the
// kubelet reports the pod Succeeded.)
func watchCompletedPods(t *testing.T, ns, selector, container string) func() map[string]string {
	ctx, cancel := context.WithCancel(t.Context())
	w, err := env.clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	Expect(err).NotTo(HaveOccurred())
	var (
		mu        sync.Mutex
		succeeded = map[string]string{}
		done      = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Error {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == container && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
					mu.Lock()
					succeeded[p.Name] = p.Spec.NodeName
					mu.Unlock()
				}
			}
		}
	}()
	return func() map[string]string {
		cancel()
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return succeeded
	}
}
