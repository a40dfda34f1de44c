// Package imagefile copies one file out of a container image, as the
// image's layers leave it (mutate.Extract flattens them, whiteouts applied).
// The release tooling (hack/sbom) and the image tests take /manager out of
// each platform's image with it.
package imagefile

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Extract writes the image's file at path (relative to /, e.g. "manager")
// to dst, executable: `go version -m` and the kernel read only executables.
func Extract(img v1.Image, path, dst string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("/%s is not in the image", path)
		}
		if err != nil {
			return err
		}
		if strings.TrimPrefix(h.Name, "./") != path {
			continue
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, tr); err != nil {
			_ = out.Close()
			return err
		}
		return out.Close()
	}
}
