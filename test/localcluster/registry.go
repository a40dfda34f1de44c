package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The real node pulls its images from a registry of its own: Debian's
// docker-registry (the CNCF distribution registry), serving HTTPS on
// loopback with a certificate of the cluster's CA. HTTPS because the
// operator-sdk commands read images over HTTPS only, whatever their flags
// say (see docs/local-cluster.md).
//
// containerd takes it as a mirror of the public registries whose names the
// project's files use (docker.io, quay.io, gcr.io, registry.k8s.io), with no
// fallback to them: an image keeps its upstream name (the CSV's manager
// image, the scorecard's test image) and is pushed here under the same
// repository path. The registry is also reachable by its own name,
// Cluster.RegistryHost, which is what tools on this machine (operator-sdk,
// buildah) use.

// mirroredRegistries are the registries that containerd looks up in the
// local one instead; the value is the upstream endpoint that containerd
// would use, for the record in hosts.toml.
var mirroredRegistries = map[string]string{
	"docker.io":       "https://registry-1.docker.io",
	"quay.io":         "https://quay.io",
	"gcr.io":          "https://gcr.io",
	"registry.k8s.io": "https://registry.k8s.io",
}

const (
	registryCert = "registry.crt"
	registryKey  = "registry.key"
)

// RegistryBinary is Debian's docker-registry (hack/install-real-node.sh
// installs it).
const RegistryBinary = "/usr/bin/docker-registry"

// startRegistry runs the registry with its storage in the work directory.
func (c *Cluster) startRegistry(ctx context.Context) error {
	if _, _, err := c.pki.issue(registryCert, registryKey, "localcluster-registry", nil, true,
		[]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
		return err
	}
	dir := filepath.Join(c.workDir, "registry")
	if err := os.MkdirAll(filepath.Join(dir, "storage"), 0o700); err != nil {
		return err
	}
	q := strconv.Quote
	config := `version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: ` + q(filepath.Join(dir, "storage")) + `
  delete:
    enabled: true
http:
  addr: ` + q(c.RegistryHost()) + `
  tls:
    certificate: ` + q(c.pki.path(registryCert)) + `
    key: ` + q(c.pki.path(registryKey)) + `
`
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(config), 0o600); err != nil {
		return err
	}
	c.logf("starting registry on %s", c.RegistryHost())
	p, err := StartProcess("registry", RegistryBinary, []string{"serve", filepath.Join(dir, "config.yml")}, nil, filepath.Join(c.LogDir(), "registry.log"))
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	transport, err := c.RegistryTransport()
	if err != nil {
		return err
	}
	client := &http.Client{Transport: transport}
	return waitFor(ctx, "registry", []*Process{p}, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.RegistryHost()+"/v2/", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		return nil
	})
}

// RegistryHost is the registry's address, "127.0.0.1:PORT", the host part
// of the names under which tools on this machine push and pull. Empty
// without a real node or Options.Registry.
func (c *Cluster) RegistryHost() string {
	if c.opts.RealNode == nil && !c.opts.Registry {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(c.ports.registry)
}

// CAFile is the cluster's CA certificate, which signs the API server's and
// the registry's serving certificates (for SSL_CERT_FILE, or buildah's
// --cert-dir).
func (c *Cluster) CAFile() string { return c.pki.path(caCertFile) }

// RegistryTransport trusts the cluster CA only: what a client of the
// registry on this machine uses.
func (c *Cluster) RegistryTransport() (*http.Transport, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.pki.caPEM()) {
		return nil, errors.New("the cluster CA does not parse")
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // loopback only, whatever the environment says
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// writeRegistryHosts writes containerd's registry configuration
// (config_path): the local registry by its own name, and as the only
// endpoint of every mirrored registry (server and host both point to it,
// so containerd never falls back to the Internet).
func (n *realNode) writeRegistryHosts(registryHost, caFile string) error {
	q := strconv.Quote
	local := "https://" + registryHost
	write := func(dir string) error {
		// ca at the top applies to server: containerd falls back to it
		// when the host has no such image, and would then fail on TLS
		// instead of saying "not found".
		hosts := `server = ` + q(local) + `
ca = ` + q(caFile) + `

[host.` + q(local) + `]
  capabilities = ["pull", "resolve"]
  ca = ` + q(caFile) + `
`
		if err := os.MkdirAll(n.path("certs.d", dir), 0o700); err != nil {
			return err
		}
		return os.WriteFile(n.path("certs.d", dir, "hosts.toml"), []byte(hosts), 0o600)
	}
	if err := write(registryHost); err != nil {
		return err
	}
	for reg := range mirroredRegistries {
		if err := write(reg); err != nil {
			return err
		}
	}
	return nil
}

// PushImageArchive pushes every image of a docker-archive (what `buildah
// push IMAGE docker-archive:FILE:NAME` writes) into the registry, under the
// repository path and tag of each name it carries: quay.io/a/b:v1 becomes
// RegistryHost/a/b:v1, which the node pulls as quay.io/a/b:v1.
func (c *Cluster) PushImageArchive(ctx context.Context, archive string) ([]string, error) {
	if c.RegistryHost() == "" {
		return nil, errors.New("the cluster has no registry (no real node, no Options.Registry)")
	}
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	transport, err := c.RegistryTransport()
	if err != nil {
		return nil, err
	}
	var pushed []string
	for _, desc := range manifest {
		for _, repoTag := range desc.RepoTags {
			tag, err := name.NewTag(repoTag)
			if err != nil {
				return pushed, fmt.Errorf("%s: %w", archive, err)
			}
			img, err := tarball.ImageFromPath(archive, &tag)
			if err != nil {
				return pushed, fmt.Errorf("%s: %w", archive, err)
			}
			dst, err := c.RegistryRef(repoTag)
			if err != nil {
				return pushed, err
			}
			if err := remote.Write(dst, img, remote.WithContext(ctx), remote.WithTransport(transport)); err != nil {
				return pushed, fmt.Errorf("pushing %s to %s: %w", repoTag, dst, err)
			}
			pushed = append(pushed, repoTag)
		}
	}
	if len(pushed) == 0 {
		return nil, fmt.Errorf("%s names no image", archive)
	}
	return pushed, nil
}

// RegistryRef is where the image that pods call ref lives in the local
// registry: its repository path and tag under RegistryHost.
func (c *Cluster) RegistryRef(ref string) (name.Tag, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return name.Tag{}, err
	}
	if tag.RegistryStr() != c.RegistryHost() {
		if _, ok := mirroredRegistries[tag.RegistryStr()]; !ok && tag.RegistryStr() != name.DefaultRegistry {
			return name.Tag{}, fmt.Errorf("%s: the node pulls only from %s and the registries it mirrors (%s)", ref, c.RegistryHost(), strings.Join(mirroredNames(), ", "))
		}
	}
	return name.NewTag(c.RegistryHost() + "/" + tag.RepositoryStr() + ":" + tag.TagStr())
}

func mirroredNames() []string {
	names := make([]string, 0, len(mirroredRegistries))
	for n := range mirroredRegistries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ctrCommand runs ctr against the node's containerd, in the CRI namespace.
func (c *Cluster) ctrCommand(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ctr", append([]string{"--address", c.node.containerdSocket(), "-n", "k8s.io"}, args...)...)
}
