//go:build e2e && realnode

package e2e

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// testRealOpenShiftSample: under OpenShift's SCC admission (its stand-in,
// test/openshift), the sample's containers really run as the first user of
// the namespace's range (the user the admission would assign, and admits),
// turn Ready and serve their pod's name.
func testRealOpenShiftSample(t *testing.T) {
	oc := startOpenShiftAdmission(t)
	ns, first := oc.namespace(t, "real-openshift-sample")
	uid := strconv.FormatInt(first, 10)
	mustKubectl(t, "apply", "-n", ns, "-f", "config/samples/app_v1alpha1_podset.yaml")
	expectSettled(t, ns, 3)
	oc.expectAllAdmitted(t, ns, first, 3)
	httpClient := &http.Client{Timeout: 5 * time.Second}
	for _, p := range livePods(Default, t.Context(), ns, sample) {
		Eventually(func(g Gomega) {
			g.Expect(inspectContainer(g, &p).uid).To(Equal(uid), "effective UID of %s", p.Name)
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		Eventually(func(g Gomega) {
			resp, err := httpClient.Get("http://" + p.Status.PodIP + ":8080/")
			g.Expect(err).NotTo(HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			g.Expect(string(body)).To(Equal(p.Name))
		}).WithContext(t.Context()).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		step("pod %s: runs as UID %s, the first of its namespace's range, admitted under restricted-v2, Ready, and serves its name", p.Name, uid)
	}
}
