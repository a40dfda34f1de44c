// Command sbom attaches a software bill of materials to each platform of a
// pushed manager image (`make sbom`): it takes /manager out of the image,
// has cyclonedx-gomod describe it from the module list that Go embeds in
// every binary (what `go version -m` prints: the modules and versions
// actually linked in, not what a source tree might build), and pushes the
// CycloneDX JSON beside the image as an OCI artifact whose subject is that
// image. Registries with the OCI referrers API list it there; for the others
// the artifact is indexed under the referrers tag (sha256-<digest>) that
// the OCI distribution spec defines, which is what `oras discover` and
// `cosign tree` read.
//
// usage: sbom -cyclonedx-gomod PATH -version vX.Y.Z IMAGE
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/example/podset-operator/internal/imagefile"
)

// MediaType is the SBOM's artifact type (its config's media type) and its
// one layer's: CycloneDX JSON.
const MediaType types.MediaType = "application/vnd.cyclonedx+json"

func main() {
	generator := flag.String("cyclonedx-gomod", "cyclonedx-gomod", "the cyclonedx-gomod binary")
	version := flag.String("version", "", "the manager's version, recorded as the SBOM's main component version")
	flag.Parse()
	if flag.NArg() != 1 || *version == "" {
		fmt.Fprintln(os.Stderr, "usage: sbom -cyclonedx-gomod PATH -version vX.Y.Z IMAGE")
		os.Exit(2)
	}
	if err := run(*generator, *version, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

func run(generator, version, image string) error {
	ref, err := name.ParseReference(image)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return err
	}
	// One image, or one per platform of a manifest list.
	images := map[string]v1.Image{}
	if desc.MediaType.IsIndex() {
		index, err := desc.ImageIndex()
		if err != nil {
			return err
		}
		im, err := index.IndexManifest()
		if err != nil {
			return err
		}
		for _, m := range im.Manifests {
			if m.Platform == nil {
				return fmt.Errorf("%s: manifest %s names no platform", image, m.Digest)
			}
			// docker buildx adds its provenance attestations to the list
			// as manifests of platform unknown/unknown: not an image.
			if m.Platform.OS == "unknown" || m.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
				continue
			}
			img, err := index.Image(m.Digest)
			if err != nil {
				return err
			}
			images[m.Platform.String()] = img
		}
	} else {
		img, err := desc.Image()
		if err != nil {
			return err
		}
		images["the image"] = img
	}
	work, err := os.MkdirTemp("", "sbom-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for platform, img := range images {
		bin := filepath.Join(work, "manager")
		if err := imagefile.Extract(img, "manager", bin); err != nil {
			return fmt.Errorf("%s (%s): %w", image, platform, err)
		}
		out := filepath.Join(work, "sbom.json")
		cmd := exec.Command(generator, "bin", "-json", "-version", version, "-output", out, bin)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w", generator, strings.Join(cmd.Args[1:], " "), err)
		}
		sbom, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		digest, err := attach(ref.Context(), img, sbom, opts)
		if err != nil {
			return fmt.Errorf("%s (%s): %w", image, platform, err)
		}
		fmt.Printf("%s (%s): SBOM %s@%s\n", image, platform, ref.Context(), digest)
	}
	return nil
}

// attach pushes sbom into repo as an artifact referring to img.
func attach(repo name.Repository, img v1.Image, sbom []byte, opts []remote.Option) (v1.Hash, error) {
	subject, err := descriptor(img)
	if err != nil {
		return v1.Hash{}, err
	}
	artifact, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(sbom, MediaType)})
	if err != nil {
		return v1.Hash{}, err
	}
	artifact = mutate.MediaType(artifact, types.OCIManifestSchema1)
	artifact = mutate.ConfigMediaType(artifact, MediaType)
	withSubject, ok := mutate.Subject(artifact, subject).(v1.Image)
	if !ok {
		return v1.Hash{}, errors.New("the artifact with its subject is not an image")
	}
	digest, err := withSubject.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	return digest, remote.Write(repo.Digest(digest.String()), withSubject, opts...)
}

func descriptor(img v1.Image) (v1.Descriptor, error) {
	mt, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Digest: digest, Size: size}, nil
}
