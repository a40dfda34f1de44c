package imagefile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestExtractTakesTheTopLayersFile(t *testing.T) {
	layer := func(files map[string]string) mutate.Addendum {
		var buf bytes.Buffer
		must(t, writeTar(&buf, files))
		data := buf.Bytes()
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		must(t, err)
		return mutate.Addendum{Layer: l}
	}
	img, err := mutate.Append(empty.Image, layer(map[string]string{"manager": "old", "etc/passwd": "x"}), layer(map[string]string{"manager": "new"}))
	must(t, err)
	dst := filepath.Join(t.TempDir(), "manager")
	must(t, Extract(img, "manager", dst))
	got, err := os.ReadFile(dst)
	must(t, err)
	if string(got) != "new" {
		t.Errorf("extracted %q, want the upper layer's %q", got, "new")
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("the extracted file is not executable: %v %v", fi.Mode(), err)
	}
	if err := Extract(img, "missing", dst); err == nil {
		t.Error("a file the image lacks extracted without an error")
	}
}
