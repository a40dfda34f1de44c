//go:build e2e && realnode

package localcluster_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/example/podset-operator/test/localcluster"
)

// TestRealNodeCrashIsCleanedUp kills the process that runs a real node, with
// a container running, as a crash would (SIGKILL: no Stop). Its children go
// with it, but the container, its shim, its mounts, cgroups and veth, the
// bridge and the firewall rules stay. `localcluster --cleanup` must then
// leave the host exactly as it was before. It needs root, the real node's
// packages and images, and the localcluster command (LOCALCLUSTER_BIN), as
// `make test-real-node` provides.
func TestRealNodeCrashIsCleanedUp(t *testing.T) {
	RegisterTestingT(t)
	bin := os.Getenv("LOCALCLUSTER_BIN")
	if bin == "" {
		t.Fatal("LOCALCLUSTER_BIN is not set: run `make test-real-node`")
	}
	images := os.Getenv("NODE_IMAGES")
	Expect(images).NotTo(BeEmpty(), "NODE_IMAGES")
	Expect(localcluster.Cleanup(nil)).To(Succeed())
	before, err := localcluster.SnapshotHost()
	Expect(err).NotTo(HaveOccurred())

	work := t.TempDir()
	cmd := exec.Command(bin, "--bin-dir", binDir(t), "--real-node", "--node-images", images, "--work-dir", work)
	stdout, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	logFile, err := os.Create(filepath.Join(work, "localcluster.log"))
	Expect(err).NotTo(HaveOccurred())
	defer logFile.Close()
	cmd.Stderr = logFile
	Expect(cmd.Start()).To(Succeed())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
		_ = localcluster.Cleanup(nil)
	})

	// The command prints the kubeconfig once the node is Ready.
	kubeconfig := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if p, ok := strings.CutPrefix(s.Text(), "export KUBECONFIG="); ok {
				kubeconfig <- p
			}
		}
	}()
	var path string
	Eventually(kubeconfig).WithTimeout(3*time.Minute).Should(Receive(&path), "the real node did not start; see %s", logFile.Name())
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())

	t.Log("starting a container, so that the crash leaves one behind")
	Expect(localcluster.WaitForDefaultServiceAccount(t.Context(), cs, "default")).To(Succeed())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "left-behind", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "c", Image: "docker.io/library/busybox:1.37.0", Command: []string{"sleep", "3600"},
				SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To(int64(65532))},
			}},
		},
	}
	_, err = cs.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		p, err := cs.CoreV1().Pods("default").Get(t.Context(), pod.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
	}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("SIGKILL to the process that runs the node")
	Expect(cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
	killed = true
	_ = cmd.Wait()
	// Its children (the kubelet, containerd, the control plane) die with
	// it (Pdeathsig); the container does not.
	Eventually(func() string {
		out, _ := exec.Command("pgrep", "-f", "containerd-shim.*"+work).Output()
		return strings.TrimSpace(string(out))
	}).WithTimeout(10*time.Second).ShouldNot(BeEmpty(), "no shim outlived the crash: the test proves nothing")
	left, err := localcluster.SnapshotHost()
	Expect(err).NotTo(HaveOccurred())
	Expect(before.Diff(left)).NotTo(BeEmpty(), "the crash left nothing to clean up: the test proves nothing")
	t.Logf("left by the crash:\n%s", before.Diff(left))

	out, err := exec.Command(bin, "--cleanup").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "localcluster --cleanup: %s", out)
	t.Logf("localcluster --cleanup:\n%s", out)
	after, err := localcluster.SnapshotHost()
	Expect(err).NotTo(HaveOccurred())
	Expect(before.Diff(after)).To(BeEmpty())
	pids, _ := exec.Command("pgrep", "-f", work).Output()
	Expect(strings.TrimSpace(string(pids))).To(BeEmpty(), "processes of the crashed node are still running")
	Expect(filepath.Join(work, "node")).NotTo(BeADirectory())
}

// TestCleanupRefusesWhileARealNodeRuns: Cleanup leaves a running real node
// alone (it holds the host lock, as a running node does).
func TestCleanupRefusesWhileARealNodeRuns(t *testing.T) {
	RegisterTestingT(t)
	Expect(os.MkdirAll("/run/localcluster-realnode", 0o700)).To(Succeed())
	f, err := os.OpenFile("/run/localcluster-realnode/lock", os.O_CREATE|os.O_RDWR, 0o600)
	Expect(err).NotTo(HaveOccurred())
	Expect(syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)).To(Succeed())
	Expect(localcluster.Cleanup(nil)).To(MatchError(ContainSubstring("another real node runs on this host")))
	Expect(f.Close()).To(Succeed()) // the node ends
	Expect(localcluster.Cleanup(nil)).To(Succeed(), "the lock is free and there is no state: nothing to do")
	Expect("/run/localcluster-realnode").NotTo(BeADirectory(), "Cleanup left its lock behind")
}
