package olm_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installCRDs creates the CRDs of the Prometheus Operator's group that the
// *.yaml files of dir hold, once want accepts the list of those files,
// deletes them when the test ends (waiting until they are gone), and waits
// until each is Established.
func installCRDs(t *testing.T, ctx context.Context, dir string, want func(files []string) error) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	must(t, err)
	if err := want(files); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		must(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		must(t, utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(crd))
		if crd.Spec.Group != monitoringGroup {
			t.Fatalf("%s: a CRD of group %q", f, crd.Spec.Group)
		}
		must(t, k8s.Create(ctx, crd))
		names = append(names, crd.Name)
		t.Cleanup(func() {
			bg := context.Background()
			_ = k8s.Delete(bg, crd)
			_ = poll(bg, time.Minute, func() (bool, string, error) {
				err := k8s.Get(bg, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
				return apierrors.IsNotFound(err), "CRD " + crd.Name + " still there", client.IgnoreNotFound(err)
			})
		})
	}
	for _, name := range names {
		must(t, waitEstablished(ctx, name))
	}
}
