package localcluster

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/net/dns/dnsmessage"
)

func TestServiceName(t *testing.T) {
	for _, tc := range []struct {
		name            string
		namespace, svc  string
		isServiceRecord bool
	}{
		{"kubernetes.default.svc.cluster.local.", "default", "kubernetes", true},
		{"podset-catalog.olm.svc.", "olm", "podset-catalog", true},
		{"Podset-Catalog.OLM.svc.Cluster.Local.", "olm", "podset-catalog", true},
		// What a pod's search path makes of "podset-catalog.olm.svc" first.
		{"podset-catalog.olm.svc.default.svc.cluster.local.", "", "", false},
		{"podset-catalog.olm.svc.svc.cluster.local.", "", "", false},
		{"olm.svc.cluster.local.", "", "", false},
		{"quay.io.", "", "", false},
		{"example.com.cluster.local.", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, svc, ok := serviceName(tc.name)
			NewWithT(t).Expect([]any{ns, svc, ok}).To(Equal([]any{tc.namespace, tc.svc, tc.isServiceRecord}))
		})
	}
}

func TestDNSAnswer(t *testing.T) {
	services := map[string][]netip.Addr{
		"olm/podset-catalog": {netip.MustParseAddr("10.0.0.42")},
		"default/kubernetes": {netip.MustParseAddr("10.0.0.1")},
		"default/headless":   nil,
	}
	lookup := func(_ context.Context, namespace, name string) ([]netip.Addr, bool, error) {
		if namespace == "broken" {
			return nil, false, errors.New("the API server is down")
		}
		ips, ok := services[namespace+"/"+name]
		return ips, ok, nil
	}
	for _, tc := range []struct {
		name    string
		qtype   dnsmessage.Type
		rcode   dnsmessage.RCode
		answers []string
	}{
		{"podset-catalog.olm.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.0.0.42"}},
		{"kubernetes.default.svc.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.0.0.1"}},
		// An IPv4 Service has no AAAA record, but its name exists.
		{"kubernetes.default.svc.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, nil},
		{"headless.default.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, nil},
		{"missing.default.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
		// Nothing is forwarded: a name outside the cluster does not exist.
		{"quay.io.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
		{"x.broken.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeServerFailure, nil},
	} {
		t.Run(tc.name+"/"+tc.qtype.String(), func(t *testing.T) {
			g := NewWithT(t)
			query := dnsmessage.Message{
				Header:    dnsmessage.Header{ID: 4711, RecursionDesired: true},
				Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(tc.name), Type: tc.qtype, Class: dnsmessage.ClassINET}},
			}
			raw, err := query.Pack()
			g.Expect(err).NotTo(HaveOccurred())
			out, err := dnsAnswer(t.Context(), raw, lookup)
			g.Expect(err).NotTo(HaveOccurred())
			var resp dnsmessage.Message
			g.Expect(resp.Unpack(out)).To(Succeed())
			g.Expect(resp.ID).To(Equal(uint16(4711)))
			g.Expect(resp.Response).To(BeTrue())
			g.Expect(resp.RCode).To(Equal(tc.rcode))
			g.Expect(resp.Questions).To(Equal(query.Questions))
			var got []string
			for _, a := range resp.Answers {
				g.Expect(a.Header.Name).To(Equal(query.Questions[0].Name))
				switch body := a.Body.(type) {
				case *dnsmessage.AResource:
					got = append(got, netip.AddrFrom4(body.A).String())
				default:
					t.Fatalf("unexpected record %v", a)
				}
			}
			g.Expect(got).To(Equal(tc.answers))
		})
	}
}
