package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The real node's cluster DNS: what CoreDNS is to a cluster, reduced to what
// the tests need. It answers A queries for Service names,
// <service>.<namespace>.svc.cluster.local (and the same without the cluster
// domain), with the Service's cluster IP, read from the API server for each
// query, and NXDOMAIN for every other name: it forwards nothing, so no query
// leaves the machine. It listens on the node's bridge address, port 53, UDP
// (a resolver asks over TCP only after a truncated answer, and one address
// never is).
//
// Pods get it through the kubelet (clusterDNS, with the usual search path);
// processes on this machine that play in-cluster components (OLM's catalog
// operator dials a catalog by its Service's name) get it through
// Cluster.ResolvConf, bind-mounted over /etc/resolv.conf in a mount namespace
// of their own.

// ClusterDomain is the real node's cluster domain.
const ClusterDomain = "cluster.local"

// dnsTTL is short: Services come and go within a test.
const dnsTTL = 5

// serviceLookup returns the cluster IPs of a Service, none for a headless
// one, and found false when it does not exist.
type serviceLookup func(ctx context.Context, namespace, name string) (ips []netip.Addr, found bool, err error)

// startClusterDNS serves the cluster's DNS on addr until the cluster stops.
func (c *Cluster) startClusterDNS(addr string) error {
	client, err := c.adminClientset()
	if err != nil {
		return err
	}
	conn, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	c.dns = conn
	lookup := func(ctx context.Context, namespace, name string) ([]netip.Addr, bool, error) {
		svc, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		var ips []netip.Addr
		for _, s := range svc.Spec.ClusterIPs {
			if ip, err := netip.ParseAddr(s); err == nil {
				ips = append(ips, ip)
			}
		}
		return ips, true, nil
	}
	go serveDNS(conn, lookup, c.logf)
	return c.writeResolvConf(addr)
}

// serveDNS answers queries on conn until it is closed.
func serveDNS(conn net.PacketConn, lookup serviceLookup, logf func(string, ...any)) {
	buf := make([]byte, 512)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				logf("cluster DNS stopped: %v", err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		answer, err := dnsAnswer(ctx, buf[:n], lookup)
		cancel()
		if err != nil {
			continue // not a query we can parse: a resolver retries
		}
		_, _ = conn.WriteTo(answer, from)
	}
}

// dnsAnswer builds the answer to one query message.
func dnsAnswer(ctx context.Context, query []byte, lookup serviceLookup) ([]byte, error) {
	var p dnsmessage.Parser
	header, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	questions, err := p.AllQuestions()
	if err != nil {
		return nil, err
	}
	resp := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: header.ID, Response: true, Authoritative: true, RecursionDesired: header.RecursionDesired},
		Questions: questions,
	}
	if header.OpCode != 0 || len(questions) != 1 {
		resp.RCode = dnsmessage.RCodeNotImplemented
		return resp.Pack()
	}
	q := questions[0]
	namespace, service, ok := serviceName(q.Name.String())
	if !ok || q.Class != dnsmessage.ClassINET {
		resp.RCode = dnsmessage.RCodeNameError
		return resp.Pack()
	}
	ips, found, err := lookup(ctx, namespace, service)
	switch {
	case err != nil:
		resp.RCode = dnsmessage.RCodeServerFailure
	case !found:
		resp.RCode = dnsmessage.RCodeNameError
	default:
		// A name that exists answers every type, with the records it has
		// of that type (none for AAAA of an IPv4 Service: NOERROR, empty).
		for _, ip := range ips {
			h := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}
			switch {
			case q.Type == dnsmessage.TypeA && ip.Is4():
				resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AResource{A: ip.As4()}})
			case q.Type == dnsmessage.TypeAAAA && ip.Is6():
				resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AAAAResource{AAAA: ip.As16()}})
			}
		}
	}
	return resp.Pack()
}

// serviceName splits a Service's DNS name, <service>.<namespace>.svc,
// optionally followed by the cluster domain, case-insensitively.
func serviceName(fqdn string) (namespace, service string, ok bool) {
	name := strings.TrimSuffix(strings.ToLower(fqdn), ".")
	name = strings.TrimSuffix(name, "."+ClusterDomain)
	rest, found := strings.CutSuffix(name, ".svc")
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	return parts[1], parts[0], true
}

// ResolvConf is a resolv.conf that resolves through the cluster's DNS with
// the search path of a pod in no particular namespace; only a real-node
// cluster has one.
func (c *Cluster) ResolvConf() string { return c.node.path("resolv.conf") }

func (c *Cluster) writeResolvConf(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	conf := fmt.Sprintf("nameserver %s\nsearch svc.%s %s\noptions ndots:5\n", host, ClusterDomain, ClusterDomain)
	return os.WriteFile(c.ResolvConf(), []byte(conf), 0o644)
}

// WithClusterDNS wraps the command bin args so that it resolves names
// through the cluster's DNS, as if it ran in a pod: in a mount namespace of
// its own, ResolvConf is bind-mounted over /etc/resolv.conf, and the command
// is exec'ed there (its PID is the one that runs bin). The host's
// /etc/resolv.conf is not touched. Needs root and util-linux's unshare.
func (c *Cluster) WithClusterDNS(bin string, args []string) (string, []string) {
	return "unshare", append([]string{"--mount", "--propagation", "private", "--",
		"sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, c.ResolvConf(), bin}, args...)
}
