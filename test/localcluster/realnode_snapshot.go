package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// HostSnapshot is what a real node must leave as it found it: network
// links, firewall chains, the kubelet's cgroups, the host directories it
// may create, ip_forward. The tests take one before and one after.
type HostSnapshot struct {
	links, chains, cgroups, dirs []string
	ipForward                    string
}

// SnapshotHost takes a HostSnapshot.
func SnapshotHost() (HostSnapshot, error) {
	var s HostSnapshot
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			s.links = append(s.links, strings.TrimSuffix(strings.Split(f[1], "@")[0], ":"))
		}
	}
	for _, cmd := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(cmd).Output()
		if err != nil {
			return s, err
		}
		s.chains = append(s.chains, userChains(cmd, string(out))...)
	}
	s.cgroups, _ = filepath.Glob("/sys/fs/cgroup/*/kubepods")
	for _, d := range []string{"/var/lib/cni", "/var/log/pods", "/var/log/containers", "/run/localcluster-realnode", "/var/lib/kubelet"} {
		if _, err := os.Stat(d); err == nil {
			s.dirs = append(s.dirs, d)
		} else if !errors.Is(err, os.ErrNotExist) {
			return s, err
		}
	}
	fwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	s.ipForward = strings.TrimSpace(string(fwd))
	return s, err
}

func (s HostSnapshot) String() string {
	return fmt.Sprintf("%d links, %d firewall chains, %d kubepods cgroups, ip_forward %s", len(s.links), len(s.chains), len(s.cgroups), s.ipForward)
}

// Diff says what differs in after, one line each; "" when nothing does.
func (s HostSnapshot) Diff(after HostSnapshot) string {
	var out []string
	extra := func(what string, a, b []string) {
		for _, x := range b {
			if !slices.Contains(a, x) {
				out = append(out, what+" "+x+" was left behind")
			}
		}
		for _, x := range a {
			if !slices.Contains(b, x) {
				out = append(out, what+" "+x+" was removed")
			}
		}
	}
	extra("link", s.links, after.links)
	extra("firewall chain", s.chains, after.chains)
	extra("cgroup", s.cgroups, after.cgroups)
	extra("directory", s.dirs, after.dirs)
	if s.ipForward != after.ipForward {
		out = append(out, "ip_forward was "+s.ipForward+", is "+after.ipForward)
	}
	return strings.Join(out, "\n")
}

// builtinChains are the kernel's own chains of the iptables tables. They
// exist as soon as anything touches a table: on a machine where nothing has,
// iptables-save prints no table at all before the real node and the empty
// built-in chains after it, which the node cannot remove and which filter
// nothing (policy ACCEPT, no rule once the node's jumps are gone).
var builtinChains = map[string]bool{"PREROUTING": true, "INPUT": true, "FORWARD": true, "OUTPUT": true, "POSTROUTING": true}

// userChains lists the chains other than the built-in ones in the output of
// cmd (iptables-save or ip6tables-save), as cmd/table/chain.
func userChains(cmd, save string) []string {
	var chains []string
	table := ""
	for _, line := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"):
			if chain := strings.Fields(line[1:])[0]; !builtinChains[chain] {
				chains = append(chains, cmd+"/"+table+"/"+chain)
			}
		}
	}
	return chains
}
