//go:build multiarch

// Package multiarch_test builds the manager image for every platform of
// PLATFORMS with `make docker-buildx` (buildah, no daemon), pushes it as one
// manifest list into a registry on loopback, and checks what a cluster of
// each architecture would pull: one image per platform, each holding a
// static /manager compiled for it. Then it takes the arm64 /manager out of
// its image and runs it under qemu-aarch64-static (Debian's
// qemu-user-static) as the operator of a local cluster: it must reconcile a
// PodSet exactly as the native build does. Run it with `make test-multiarch`.
package multiarch_test

import (
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1alpha1 "github.com/example/podset-operator/api/v1alpha1"
	"github.com/example/podset-operator/internal/imagefile"
	"github.com/example/podset-operator/test/localcluster"
)

var (
	cluster  *localcluster.Cluster
	k8s      client.Client
	repoRoot string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs("../..")
	if err != nil {
		return fail(err)
	}
	repoRoot = root
	binDir := os.Getenv("K8S_BIN")
	if binDir == "" || os.Getenv("PLATFORMS") == "" || os.Getenv("VERSION") == "" {
		return fail(errors.New("K8S_BIN, PLATFORMS and VERSION must be set; run `make test-multiarch`"))
	}
	c, err := localcluster.Start(context.Background(), localcluster.Options{
		BinDir: binDir, Nodes: 1, Registry: true, Out: os.Stdout,
	})
	if err != nil {
		return fail(err)
	}
	cluster = c
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, apiextensionsv1.AddToScheme, appv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return fail(err)
		}
	}
	if k8s, err = client.New(c.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}
	return m.Run()
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "FAIL:", err)
	return 1
}

// platforms is PLATFORMS as a sorted list of "os/arch".
func platforms() []string {
	p := strings.Split(os.Getenv("PLATFORMS"), ",")
	slices.Sort(p)
	return p
}

// The ELF machine each Go architecture compiles for.
var elfMachine = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
}

// TestReleaseImages builds and pushes the manager image as a release
// would, then checks it from the side of each kind of cluster: every
// platform's image, operator-sdk's multiarch validator, a bundle pinned by
// digest for mirrored clusters, and the arm64 manager at work.
func TestReleaseImages(t *testing.T) {
	ctx := t.Context()
	ref := cluster.RegistryHost() + "/example/podset-operator:v" + os.Getenv("VERSION")
	buildAndPush(t, ctx, ref)
	var binaries map[string]string
	// The binaries outlive the subtest that takes them out of the images.
	bins := t.TempDir()
	t.Run("ManifestListHasEveryPlatform", func(t *testing.T) { binaries = checkManifestList(t, ctx, ref, bins) })
	t.Run("MultiarchValidator", func(t *testing.T) { validateBundle(t, ctx, ref) })
	t.Run("BundlePinnedByDigest", func(t *testing.T) { checkDigestPinnedBundle(t, ctx, ref) })
	t.Run("SBOMListsTheModulesOfGoMod", func(t *testing.T) { checkSBOM(t, ctx, ref, binaries) })
	t.Run("Arm64ManagerUnderEmulation", func(t *testing.T) {
		arm64, ok := binaries["arm64"]
		if !ok {
			t.Fatal("no arm64 /manager from the manifest list (PLATFORMS must have linux/arm64)")
		}
		reconcileUnderEmulation(t, t.Context(), arm64)
	})
}

// checkManifestList: the pushed list has one image per platform of
// PLATFORMS, each configured for it and holding a /manager built for it.
// It returns the /manager of each architecture.
func checkManifestList(t *testing.T, ctx context.Context, ref, dir string) map[string]string {
	r, err := name.ParseReference(ref)
	must(t, err)
	index, err := remote.Index(r, remote.WithContext(ctx), remote.WithTransport(registryTransport(t)))
	must(t, err)
	im, err := index.IndexManifest()
	must(t, err)
	var got []string
	binaries := map[string]string{}
	for _, desc := range im.Manifests {
		if desc.Platform == nil {
			t.Fatalf("manifest %s has no platform", desc.Digest)
		}
		p := desc.Platform.OS + "/" + desc.Platform.Architecture
		got = append(got, p)
		img, err := index.Image(desc.Digest)
		must(t, err)
		cfg, err := img.ConfigFile()
		must(t, err)
		if cfg.OS+"/"+cfg.Architecture != p {
			t.Errorf("%s: the image's config says %s/%s", p, cfg.OS, cfg.Architecture)
		}
		bin := filepath.Join(dir, "manager-"+desc.Platform.Architecture)
		must(t, imagefile.Extract(img, "manager", bin))
		checkBinary(t, p, bin)
		binaries[desc.Platform.Architecture] = bin
	}
	slices.Sort(got)
	if !slices.Equal(got, platforms()) {
		t.Fatalf("the manifest list %s has %v, want PLATFORMS %v", ref, got, platforms())
	}
	t.Logf("%s: a manifest list of %d images, %s, each with its /manager", ref, len(got), strings.Join(got, ", "))
	return binaries
}

// checkDigestPinnedBundle generates the bundle of a release with
// `make bundle USE_IMAGE_DIGESTS=true`, the manager and operand images
// pushed, in a copy of the files it reads (the work tree stays as it is),
// and loads it as OLM does: every image of the CSV's deployments is in
// relatedImages, every relatedImages entry is pinned by the digest the
// registry serves for the image's tag, the manager is given the pinned
// operand image, and the CSV says it supports disconnected clusters.
func checkDigestPinnedBundle(t *testing.T, ctx context.Context, managerRef string) {
	pushed, err := cluster.PushImageArchive(ctx, os.Getenv("OPERAND_ARCHIVE"))
	must(t, err)
	operand, err := cluster.RegistryRef(pushed[0])
	must(t, err)

	dir := t.TempDir()
	for _, f := range []string{"Makefile", "PROJECT", "config"} {
		must(t, exec.CommandContext(ctx, "cp", "-r", filepath.Join(repoRoot, f), dir).Run())
	}
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-o", "manifests", "bundle", "USE_IMAGE_DIGESTS=true",
		"IMG="+managerRef, "OPERAND_IMG="+operand.String(), "LOCALBIN="+filepath.Join(repoRoot, "bin"),
		"OPERATOR_SDK="+os.Getenv("OPERATOR_SDK"), "KUSTOMIZE="+os.Getenv("KUSTOMIZE"))
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "SSL_CERT_FILE="+cluster.CAFile())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make bundle USE_IMAGE_DIGESTS=true: %v\n%s", err, out)
	}

	b, err := manifests.GetBundleFromDir(filepath.Join(dir, "bundle"))
	must(t, err)
	csv := b.CSV
	related := map[string]bool{}
	for _, ri := range csv.Spec.RelatedImages {
		related[ri.Image] = true
	}
	// What the registry serves for each tag the make command was given.
	want := map[string]string{}
	for _, ref := range []string{managerRef, operand.String()} {
		r, err := name.ParseReference(ref)
		must(t, err)
		desc, err := remote.Head(r, remote.WithContext(ctx), remote.WithTransport(registryTransport(t)))
		must(t, err)
		want[r.Context().String()] = desc.Digest.String()
	}
	pinned := func(what, image string) {
		d, err := name.NewDigest(image)
		if err != nil {
			t.Errorf("%s %s is not pinned by digest", what, image)
			return
		}
		if w, ok := want[d.Context().String()]; !ok || d.DigestStr() != w {
			t.Errorf("%s %s: the registry serves %s for that repository's tag", what, image, w)
		}
	}
	var operandEnv string
	for _, dep := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		spec := dep.Spec.Template.Spec
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			pinned("container "+c.Name+" image", c.Image)
			if !related[c.Image] {
				t.Errorf("container %s image %s is not in relatedImages %v", c.Name, c.Image, csv.Spec.RelatedImages)
			}
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
					pinned(e.Name, e.Value)
					if !related[e.Value] {
						t.Errorf("%s %s is not in relatedImages %v", e.Name, e.Value, csv.Spec.RelatedImages)
					}
					operandEnv = e.Value
				}
			}
		}
	}
	for _, ri := range csv.Spec.RelatedImages {
		pinned("relatedImages "+ri.Name, ri.Image)
	}
	if operandEnv == "" || len(related) != 2 {
		t.Errorf("want the manager and the operand (RELATED_IMAGE_PODSET %q) in relatedImages, got %v", operandEnv, csv.Spec.RelatedImages)
	}
	pinned("containerImage annotation", csv.Annotations["containerImage"])
	if v := csv.Annotations["features.operators.openshift.io/disconnected"]; v != "true" {
		t.Errorf("features.operators.openshift.io/disconnected is %q in the digest-pinned bundle", v)
	}
	t.Logf("make bundle USE_IMAGE_DIGESTS=true: relatedImages %v", csv.Spec.RelatedImages)
}

// buildAndPush builds the image with the README's command for a
// multi-platform image, over the stand-ins of its base images, the builder
// given this machine's module and build caches (as test-manager-image does).
func buildAndPush(t *testing.T, ctx context.Context, ref string) {
	t.Helper()
	env := append(os.Environ(), "STORAGE_DRIVER=vfs", "BUILDAH_ISOLATION=chroot", "SSL_CERT_FILE="+cluster.CAFile())
	goenv := func(v string) string {
		out, err := exec.CommandContext(ctx, "go", "env", v).Output()
		must(t, err)
		return strings.TrimSpace(string(out))
	}
	for _, step := range [][]string{
		{"hack/build-base-images.sh"},
		{"make", "--no-print-directory", "docker-buildx", "CONTAINER_TOOL=buildah", "IMG=" + ref, "PLATFORMS=" + os.Getenv("PLATFORMS"),
			"DOCKER_BUILD_ARGS=--quiet -v " + goenv("GOMODCACHE") + ":/go/pkg/mod -v " + goenv("GOCACHE") + ":/root/.cache/go-build"},
	} {
		start := time.Now()
		cmd := exec.CommandContext(ctx, step[0], step[1:]...)
		cmd.Dir, cmd.Env = repoRoot, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(step, " "), err, out)
		}
		t.Logf("%s (%s)", strings.Join(step[:min(len(step), 3)], " "), time.Since(start).Round(time.Second))
	}
	// The pushed list and its images leave buildah's storage (a full copy
	// of each image under vfs), the images first: found by their digests.
	buildah := func(args ...string) []byte {
		cmd := exec.CommandContext(ctx, "buildah", args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("buildah %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	var list struct{ Manifests []struct{ Digest string } }
	must(t, json.Unmarshal(buildah("manifest", "inspect", ref), &list))
	var images []struct{ ID, Digest string }
	must(t, json.Unmarshal(buildah("images", "--json"), &images))
	for _, m := range list.Manifests {
		for _, img := range images {
			if img.Digest == m.Digest {
				buildah("rmi", "--force", img.ID)
			}
		}
	}
	buildah("manifest", "rm", ref)
}

// checkBinary: an ELF executable for the platform's machine, a Go build
// for that GOARCH with cgo off (the distroless base has no libc).
func checkBinary(t *testing.T, platform, path string) {
	t.Helper()
	arch := platform[strings.Index(platform, "/")+1:]
	f, err := elf.Open(path)
	must(t, err)
	defer f.Close()
	if want, ok := elfMachine[arch]; !ok || f.Machine != want {
		t.Errorf("%s: /manager is an ELF for %s", platform, f.Machine)
	}
	info, err := buildinfo.ReadFile(path)
	must(t, err)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOARCH"] != arch || settings["GOOS"] != "linux" || settings["CGO_ENABLED"] != "0" {
		t.Errorf("%s: /manager was built with GOOS=%s GOARCH=%s CGO_ENABLED=%s", platform, settings["GOOS"], settings["GOARCH"], settings["CGO_ENABLED"])
	}
}

// registryTransport is the cluster's, which trusts the CA that signs the
// registry's certificate.
func registryTransport(t *testing.T) http.RoundTripper {
	t.Helper()
	tr, err := cluster.RegistryTransport()
	must(t, err)
	return tr
}

// reconcileUnderEmulation runs the arm64 manager under qemu-aarch64-static
// against the cluster and has it create, then scale, a PodSet.
func reconcileUnderEmulation(t *testing.T, ctx context.Context, bin string) {
	t.Helper()
	qemu, err := exec.LookPath("qemu-aarch64-static")
	must(t, err)
	installCRD(t, ctx)
	logPath := filepath.Join(cluster.LogDir(), "operator-arm64.log")
	proc, err := localcluster.StartProcess("operator-arm64", qemu,
		[]string{bin, "--kubeconfig=" + cluster.KubeconfigPath(), "--metrics-bind-address=0", "--health-probe-bind-address=0"},
		[]string{"WATCH_NAMESPACE="}, logPath)
	must(t, err)
	t.Cleanup(func() {
		_ = proc.Stop()
		if t.Failed() {
			if log, err := os.ReadFile(logPath); err == nil {
				t.Logf("the arm64 manager's log:\n%s", log)
			}
		}
	})
	// It is the emulator that runs: the kernel could not run the binary
	// itself on this machine.
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", proc.Pid()))
	must(t, err)
	if filepath.Base(exe) != "qemu-aarch64-static" {
		t.Fatalf("the operator process runs %s, not the emulator", exe)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "arm64", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	must(t, k8s.Create(ctx, ns))
	ps := &appv1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "emulated"}, Spec: appv1alpha1.PodSetSpec{Replicas: ptr(int32(3))}}
	must(t, k8s.Create(ctx, ps))
	start := time.Now()
	expectExact(t, ctx, proc, ps, 3)
	t.Logf("the arm64 manager under qemu made 3 pods Ready and said so in %s", time.Since(start).Round(100*time.Millisecond))

	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(ps), ps))
	ps.Spec.Replicas = ptr(int32(5))
	must(t, k8s.Update(ctx, ps))
	expectExact(t, ctx, proc, ps, 5)
	t.Log("and scaled it to 5")
}

func installCRD(t *testing.T, ctx context.Context) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config/crd/bases/app.example.com_podsets.yaml"))
	must(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(t, yaml.Unmarshal(data, crd))
	if err := k8s.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	must(t, cluster.WaitForCRDEstablished(ctx, crd.Name, time.Minute))
}

// expectExact waits until the PodSet has n live pods, all Running and
// Ready and controlled by it, and a status that says exactly that.
func expectExact(t *testing.T, ctx context.Context, proc *localcluster.Process, ps *appv1alpha1.PodSet, n int32) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, err := proc.Exited(); exited {
			return false, fmt.Errorf("the operator exited: %w", err)
		}
		got := &appv1alpha1.PodSet{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), got); err != nil {
			return false, err
		}
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, client.InNamespace(ps.Namespace)); err != nil {
			return false, err
		}
		var names []string
		for _, p := range pods.Items {
			ref := metav1.GetControllerOf(&p)
			if p.DeletionTimestamp != nil || ref == nil || ref.UID != got.UID {
				continue
			}
			ready := p.Status.Phase == corev1.PodRunning
			for _, c := range p.Status.Conditions {
				ready = ready && (c.Type != corev1.PodReady || c.Status == corev1.ConditionTrue)
			}
			if !ready {
				last = fmt.Sprintf("pod %s is not Running and Ready", p.Name)
				return false, nil
			}
			names = append(names, p.Name)
		}
		st := got.Status
		podNames := slices.Clone(st.PodNames)
		slices.Sort(names)
		slices.Sort(podNames)
		last = fmt.Sprintf("%d live pods %v; status: generation %d/%d, replicas %d, ready %d, available %d, podNames %v",
			len(names), names, st.ObservedGeneration, got.Generation, st.Replicas, st.ReadyReplicas, st.AvailableReplicas, podNames)
		return int32(len(names)) == n && st.ObservedGeneration == got.Generation &&
			st.Replicas == n && st.ReadyReplicas == n && st.AvailableReplicas == n &&
			slices.Equal(names, podNames) &&
			meta.IsStatusConditionTrue(st.Conditions, appv1alpha1.ConditionAvailable), nil
	})
	if err != nil {
		t.Fatalf("PodSet %s/%s not exact at %d replicas: %v; last seen: %s", ps.Namespace, ps.Name, n, err, last)
	}
}

func ptr[T any](v T) *T { return &v }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// validateBundle runs operator-sdk's multiarch validator, which pulls each
// image of the CSV with podman and compares its platforms with the CSV's
// labels and the manager's node affinity, over a copy of bundle/ whose
// manager image is the one pushed. The copy names the platforms of this
// run (the committed bundle names PLATFORMS of the Makefile, to which
// test/bundle holds it): with all of them, it is the committed bundle. Then
// the same copy with one more architecture in its labels must fail: the
// validator really looked at the image.
func validateBundle(t *testing.T, ctx context.Context, ref string) {
	t.Helper()
	sdk := os.Getenv("OPERATOR_SDK")
	if sdk == "" {
		t.Fatal("OPERATOR_SDK must be set; run `make test-multiarch`")
	}
	csvPath := "manifests/podset-operator.clusterserviceversion.yaml"
	data, err := os.ReadFile(filepath.Join(repoRoot, "bundle", csvPath))
	must(t, err)
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	must(t, yaml.Unmarshal(data, csv))
	upstream := csv.Annotations["containerImage"]
	archs := map[string]bool{}
	for _, p := range platforms() {
		archs[p[strings.Index(p, "/")+1:]] = true
	}
	var arches []string
	for k := range csv.Labels {
		if a, ok := strings.CutPrefix(k, "operatorframework.io/arch."); ok {
			if !archs[a] {
				delete(csv.Labels, k)
			} else {
				arches = append(arches, a)
			}
		}
	}
	slices.Sort(arches)
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	for i := range deps {
		spec := &deps[i].Spec.Template.Spec
		for j := range spec.Containers {
			if spec.Containers[j].Image == upstream {
				spec.Containers[j].Image = ref
			}
		}
		for _, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for k, e := range term.MatchExpressions {
				if e.Key == corev1.LabelArchStable {
					term.MatchExpressions[k].Values = arches
				}
			}
		}
	}
	csv.Annotations["containerImage"] = ref
	storage := podmanEnv(t)

	validate := func(csv *operatorsv1alpha1.ClusterServiceVersion) (string, error) {
		dir := t.TempDir()
		must(t, os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, "bundle"))))
		out, err := yaml.Marshal(csv)
		must(t, err)
		must(t, os.Chmod(filepath.Join(dir, "manifests"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, csvPath), out, 0o644))
		cmd := exec.CommandContext(ctx, sdk, "bundle", "validate", dir, "--select-optional", "name=multiarch", "--optional-values=container-tools=podman")
		cmd.Env = append(os.Environ(), storage...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}

	out, err := validate(csv)
	if err != nil {
		t.Fatalf("the multiarch validator fails on the pushed image (%s):\n%s", ref, out)
	}
	for _, line := range strings.Split(out, "\n") {
		// The operand's upstream image cannot be pulled here; a user's
		// cluster pulls it (busybox is published for every platform).
		if strings.Contains(line, "level=error") || strings.Contains(line, "level=warning") && !strings.Contains(line, "unable to inspect the image ("+csv.Spec.RelatedImages[0].Image+")") {
			t.Errorf("the multiarch validator: %s", line)
		}
	}
	t.Logf("operator-sdk bundle validate --select-optional name=multiarch passes with %s for %s:\n%s", ref, strings.Join(arches, ", "), out)

	csv.Labels["operatorframework.io/arch.riscv64"] = "supported"
	out, err = validate(csv)
	if err == nil || !strings.Contains(out, "riscv64") {
		t.Errorf("the multiarch validator did not notice a label for an architecture the image lacks (riscv64): %v\n%s", err, out)
	}
	t.Logf("and fails with a label for riscv64, which the image lacks:\n%s", out)
}

// podmanEnv: podman (the validator's container tool) with a storage of the
// test's own, trusting the cluster CA that signs the registry's
// certificate.
func podmanEnv(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "storage.conf")
	must(t, os.WriteFile(conf, []byte(fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(dir, "graph"), filepath.Join(dir, "run"))), 0o644))
	t.Cleanup(func() {
		// vfs layers are plain directories; podman leaves them read-only.
		_ = exec.Command("chmod", "-R", "u+w", dir).Run()
	})
	return []string{"CONTAINERS_STORAGE_CONF=" + conf, "SSL_CERT_FILE=" + cluster.CAFile()}
}

// checkSBOM runs `make sbom` on the pushed list and reads, for each
// platform's image, the CycloneDX SBOM that refers to it: one, listing
// exactly the modules linked into that image's /manager, each at the
// version go.mod requires. binaries are the /manager of each architecture
// that checkManifestList took out of the images.
func checkSBOM(t *testing.T, ctx context.Context, ref string, binaries map[string]string) {
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "sbom", "IMG="+ref)
	cmd.Dir, cmd.Env = repoRoot, append(os.Environ(), "SSL_CERT_FILE="+cluster.CAFile())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make sbom: %v\n%s", err, out)
	}
	t.Logf("make sbom:\n%s", out)

	// go.mod's requirements (direct and indirect: since Go 1.17 it lists
	// every module the build links).
	modOut, err := exec.CommandContext(ctx, "go", "mod", "edit", "-json", filepath.Join(repoRoot, "go.mod")).Output()
	must(t, err)
	var gomod struct {
		Module  struct{ Path string }
		Require []struct{ Path, Version string }
	}
	must(t, json.Unmarshal(modOut, &gomod))
	required := map[string]string{}
	for _, r := range gomod.Require {
		required[r.Path] = r.Version
	}

	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(registryTransport(t))}
	r, err := name.ParseReference(ref)
	must(t, err)
	index, err := remote.Index(r, opts...)
	must(t, err)
	im, err := index.IndexManifest()
	must(t, err)
	for _, desc := range im.Manifests {
		platform := desc.Platform.String()
		referrers, err := remote.Referrers(r.Context().Digest(desc.Digest.String()), opts...)
		must(t, err)
		rm, err := referrers.IndexManifest()
		must(t, err)
		var sboms []string
		for _, d := range rm.Manifests {
			if d.ArtifactType == "application/vnd.cyclonedx+json" {
				sboms = append(sboms, d.Digest.String())
			}
		}
		if len(sboms) != 1 {
			t.Fatalf("%s: want one CycloneDX SBOM referring to %s, got %v", platform, desc.Digest, sboms)
		}
		art, err := remote.Image(r.Context().Digest(sboms[0]), opts...)
		must(t, err)
		layers, err := art.Layers()
		must(t, err)
		if len(layers) != 1 {
			t.Fatalf("%s: the SBOM artifact has %d layers", platform, len(layers))
		}
		rc, err := layers[0].Uncompressed()
		must(t, err)
		var bom struct {
			BOMFormat string
			Metadata  struct {
				Component struct{ Name, Version string }
			}
			Components []struct{ Name, Version string }
		}
		err = json.NewDecoder(rc).Decode(&bom)
		_ = rc.Close()
		must(t, err)

		// What the binary links, from its own build information.
		bin, ok := binaries[desc.Platform.Architecture]
		if !ok {
			t.Fatalf("%s: no /manager taken out of the image (the manifest list check failed)", platform)
		}
		info, err := buildinfo.ReadFile(bin)
		must(t, err)
		linked := map[string]string{}
		for _, d := range info.Deps {
			linked[d.Path] = d.Version
		}

		if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != gomod.Module.Path || bom.Metadata.Component.Version != "v"+os.Getenv("VERSION") {
			t.Errorf("%s: the SBOM describes %s %s (format %q), want %s v%s", platform, bom.Metadata.Component.Name, bom.Metadata.Component.Version, bom.BOMFormat, gomod.Module.Path, os.Getenv("VERSION"))
		}
		listed := map[string]string{}
		for _, c := range bom.Components {
			listed[c.Name] = c.Version
		}
		for path, v := range linked {
			if listed[path] != v {
				t.Errorf("%s: /manager links %s %s; the SBOM lists %q", platform, path, v, listed[path])
			}
			if required[path] != v {
				t.Errorf("%s: /manager links %s %s; go.mod requires %q", platform, path, v, required[path])
			}
		}
		for path := range listed {
			if _, ok := linked[path]; !ok {
				t.Errorf("%s: the SBOM lists %s, which /manager does not link", platform, path)
			}
		}
		if len(linked) == 0 || listed["sigs.k8s.io/controller-runtime"] != required["sigs.k8s.io/controller-runtime"] {
			t.Errorf("%s: the SBOM lists %d modules, controller-runtime %q", platform, len(listed), listed["sigs.k8s.io/controller-runtime"])
		}
		t.Logf("%s: SBOM %s lists the %d modules /manager links, each at go.mod's version", platform, sboms[0], len(listed))
	}
}
