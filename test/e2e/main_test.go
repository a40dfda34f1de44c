//go:build e2e

// Package e2e proves the operator's behaviour end to end: a real control
// plane (test/localcluster: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok nodes), the CRD and RBAC rendered from config/default
// as `make deploy` would apply them, and the manager binary running as a
// separate process with the identity of its ServiceAccount.
//
// Run it with `make test-e2e`, which builds the binaries and sets:
//
//	K8S_BIN      directory of the cluster binaries (and kubectl)
//	MANAGER_BIN  the operator binary (bin/manager)
//	KUSTOMIZE    the pinned kustomize binary
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/test/localcluster"
)

// env is the state shared by every test of the suite.
var env struct {
	repoRoot   string
	cluster    *localcluster.Cluster
	kubectlBin string
	admin      client.Client // cluster-admin, for observing and cleaning up
	clientset  kubernetes.Interface
	// The operator's namespace and ServiceAccount, as rendered from
	// config/default.
	operatorNS, operatorSA string
	// deployment is the rendered manager Deployment (applied into operatorNS).
	deployment *unstructured.Unstructured
	// applyStderr is what `kubectl apply` printed for config/default
	// (warnings, e.g. from Pod Security admission).
	applyStderr string
	operator    *operatorProcess
}

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(appv1alpha1.AddToScheme(scheme))
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run sets the suite up, runs it and always tears down what it started.
// clusterOptions change the local cluster's options before it starts: the
// real-node suite puts its node there.
var clusterOptions []func(*localcluster.Options) error

// operatorInCluster makes the manager Deployment of config/default the
// operator of the run, instead of a manager process: the real-node suite
// sets it (under kwok the Deployment's pod never runs).
var operatorInCluster bool

// afterClusterStop run once the cluster has stopped; an error fails the run
// (the real-node suite checks that the host is as it was).
var afterClusterStop []func() error

func run(m *testing.M) (code int) {
	ctx := context.Background()
	root, err := filepath.Abs("../..")
	if err != nil {
		return fail(err)
	}
	env.repoRoot = root
	binDir := envOr("K8S_BIN", filepath.Join(root, "bin", "k8s-v1.37.0-etcd-v3.6.16-kwok-v0.8.0"))
	env.kubectlBin = filepath.Join(binDir, "kubectl")
	managerBin := envOr("MANAGER_BIN", filepath.Join(root, "bin", "manager"))
	// kubectl finds the kubectl-podset plugin on PATH, as a user's would.
	pluginBin := envOr("PLUGIN_BIN", filepath.Join(root, "bin", "kubectl-podset"))
	if err := os.Setenv("PATH", filepath.Dir(pluginBin)+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return fail(err)
	}
	for _, b := range []string{env.kubectlBin, managerBin, pluginBin} {
		if _, err := os.Stat(b); err != nil {
			return fail(fmt.Errorf("%w: run the suite with `make test-e2e`, which builds it", err))
		}
	}

	// Render config/default first: the audit policy must name the
	// operator's ServiceAccount before the API server starts.
	step("rendering config/default with kustomize")
	objs, err := renderDefault(root)
	if err != nil {
		return fail(err)
	}

	step("starting the local cluster")
	workDir := envOr("E2E_WORK_DIR", "")
	opts := localcluster.Options{
		BinDir:      binDir,
		WorkDir:     workDir,
		KeepWorkDir: os.Getenv("E2E_KEEP") != "",
		Nodes:       3,
		AuditPolicy: auditPolicy(env.operatorNS, env.operatorSA),
		Out:         os.Stdout,
	}
	for _, change := range clusterOptions {
		if err := change(&opts); err != nil {
			return fail(err)
		}
	}
	defer func() {
		for _, check := range afterClusterStop {
			if err := check(); err != nil {
				fmt.Fprintln(os.Stderr, "FAIL after the cluster stopped:", err)
				code = 1
			}
		}
	}()
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return fail(err)
	}
	env.cluster = c
	defer func() {
		step("stopping the local cluster")
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	if env.admin, err = client.New(c.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}
	if env.clientset, err = kubernetes.NewForConfig(c.RESTConfig()); err != nil {
		return fail(err)
	}

	step("applying config/default (CRD, namespace, RBAC, manager Deployment) as `make deploy` would")
	if env.applyStderr, err = applyObjects(ctx, objs); err != nil {
		return fail(err)
	}

	if operatorInCluster {
		// The manager Deployment that config/default applied runs for
		// real, from its image: it is the operator of this run.
		step("waiting for the manager Deployment %s/%s to be Available (its image runs on the real node)", env.operatorNS, env.deployment.GetName())
		if _, _, err := kubectl(ctx, "rollout", "status", "-n", env.operatorNS, "deployment/"+env.deployment.GetName(), "--timeout=3m"); err != nil {
			return fail(err)
		}
		code = m.Run()
		if code != 0 {
			out, _, _ := kubectl(ctx, "logs", "-n", env.operatorNS, "deployment/"+env.deployment.GetName(), "--tail=60")
			fmt.Printf("----- the manager pod's log -----\n%s\ncomponent logs: %s (set E2E_KEEP=1 to keep them)\n", out, c.LogDir())
		}
		return code
	}

	step("starting the operator with a TokenRequest token of ServiceAccount %s/%s", env.operatorNS, env.operatorSA)
	saCfg, err := c.ServiceAccountConfig(ctx, env.operatorNS, env.operatorSA, 2*time.Hour)
	if err != nil {
		return fail(err)
	}
	saKubeconfig := filepath.Join(c.WorkDir(), "operator.kubeconfig")
	if err := localcluster.WriteKubeconfig(saKubeconfig, saCfg); err != nil {
		return fail(err)
	}
	env.operator = &operatorProcess{
		bin:        managerBin,
		kubeconfig: saKubeconfig,
		logPath:    filepath.Join(c.LogDir(), "operator.log"),
	}
	if err := env.operator.start(); err != nil {
		return fail(err)
	}
	defer env.operator.stop()

	code = m.Run()
	if code != 0 {
		env.operator.printLogTail(60)
		fmt.Printf("component logs: %s (set E2E_KEEP=1 to keep them)\n", c.LogDir())
	}
	return code
}

// renderDefault runs kustomize on config/default and records the operator's
// namespace, ServiceAccount and Deployment. The namespace is labelled
// restricted here even if the scaffolding already does it: the suite checks
// that the manager Deployment is admitted under that profile.
func renderDefault(root string) ([]*unstructured.Unstructured, error) {
	var cmd *exec.Cmd
	if k := os.Getenv("KUSTOMIZE"); k != "" {
		cmd = exec.Command(k, "build", filepath.Join(root, "config", "default"))
	} else {
		cmd = exec.Command(env.kubectlBin, "kustomize", filepath.Join(root, "config", "default"))
	}
	rendered, err := localcluster.Render(cmd)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, u := range rendered {
		switch u.GetKind() {
		case "Namespace":
			labels := u.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels["pod-security.kubernetes.io/enforce"] = "restricted"
			labels["pod-security.kubernetes.io/enforce-version"] = "latest"
			u.SetLabels(labels)
		case "ServiceAccount":
			env.operatorNS, env.operatorSA = u.GetNamespace(), u.GetName()
		case "Deployment":
			env.deployment = u
		}
		objs = append(objs, u)
	}
	if env.operatorSA == "" || env.deployment == nil {
		return nil, fmt.Errorf("config/default renders no ServiceAccount or no Deployment")
	}
	return objs, nil
}

// applyObjects applies objs with kubectl (server-side, since the CRD is too
// large for the last-applied annotation) and returns kubectl's stderr, where
// API warnings are printed.
func applyObjects(ctx context.Context, objs []*unstructured.Unstructured) (string, error) {
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return "", err
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	_, stderr, err := kubectlIn(ctx, &buf, "apply", "--server-side", "--force-conflicts", "-f", "-")
	if err != nil {
		return stderr, err
	}
	// The CRD must be served before PodSets can be applied.
	return stderr, env.cluster.WaitForCRDEstablished(ctx, "podsets.app.example.com", time.Minute)
}

// auditPolicy records, at Metadata level, every request made by the
// operator's ServiceAccount; the least-privilege test reads it to compare
// what the operator uses with what its RBAC grants. The ReplicaSet and
// Deployment controllers' requests are recorded too, for the fault
// matrix's throttled API server, which counts both sides' requests. It also records every
// pod create (with the created pod, for its name) and delete, by anyone, and
// the pod garbage collector's and the kubelets' status writes (with the pod,
// for its phase: the garbage collector marks a deleted node's pods Failed
// before it deletes them, and a real node's kubelet marks a deleted pod
// Failed or Succeeded once its containers have stopped, a moment before it
// removes it): the fault matrix and the pods-leaving scenarios count live
// and running pods from them, the API server's own record, which no broken
// watch can blur.
func auditPolicy(ns, sa string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: RequestResponse
  verbs: ["create"]
  resources: [{group: "", resources: ["pods"]}]
- level: Metadata
  verbs: ["delete"]
  resources: [{group: "", resources: ["pods"]}]
- level: RequestResponse
  users: ["system:serviceaccount:kube-system:pod-garbage-collector"]
  verbs: ["patch", "update"]
  resources: [{group: "", resources: ["pods/status"]}]
- level: RequestResponse
  userGroups: ["system:nodes"]
  verbs: ["patch", "update"]
  resources: [{group: "", resources: ["pods/status"]}]
- level: Metadata
  users: ["system:serviceaccount:%s:%s", "system:serviceaccount:kube-system:replicaset-controller", "system:serviceaccount:kube-system:deployment-controller"]
- level: None
`, ns, sa))
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "e2e setup failed:", err)
	return 1
}

// step prints what the suite is doing, so a CI log reads like a tutorial.
func step(format string, args ...any) {
	fmt.Printf("=== e2e: "+format+"\n", args...)
}
