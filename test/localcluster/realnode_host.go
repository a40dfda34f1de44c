package localcluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What a real node changes on the host, and how it is put back.
//
// The node's network is a bridge of its own with a private subnet; pods get
// their addresses from it and the kubelet serves on its first address. A
// firewall chain of its own drops every packet that would cross between the
// bridge and any other interface, in both directions, and any packet for
// the node's subnet that comes from outside; and the host's own packets for
// the Service range that kube-proxy has not translated to a pod are refused:
// nothing of the test network leaves the machine, whatever ip_forward says.
//
// Before it changes anything, the node records what it will have to restore
// (ip_forward, which directories and firewall chains existed) in a state
// file under /run. Stop restores from it; so does the next start, and
// Cleanup, after a crash: the state file outlives the process that wrote it.
const (
	nodeBridge = "lcbr0"
	// nodeBridgeMAC is locally administered, from nodeIP.
	nodeBridgeMAC = "02:00:0a:d5:00:01"
	nodeSubnet    = "10.213.0.0/24"
	nodeIP        = "10.213.0.1"
	podRangeMin   = "10.213.0.10"
	guardChain    = "LOCALCLUSTER-GUARD"
	stateDir      = "/run/localcluster-realnode"
	ipForward     = "/proc/sys/net/ipv4/ip_forward"
)

// hostState is what Cleanup needs to put the host back.
type hostState struct {
	// WorkDir is the node's directory (containerd, kubelet, CNI state).
	WorkDir string `json:"workDir"`
	// IPForward is net.ipv4.ip_forward before the node started.
	IPForward string `json:"ipForward"`
	// Chains are the firewall chains, per command and table, that existed
	// before: only the others are removed.
	Chains map[string][]string `json:"chains"`
	// CreatedDirs are host directories that did not exist before and that
	// the kubelet or the CNI plugins create outside WorkDir.
	CreatedDirs []string `json:"createdDirs"`
}

// hostDirs are created outside the work directory by the kubelet or the CNI
// plugins whatever their configuration says: the kubelet's device plugin
// socket, for one, is always /var/lib/kubelet/device-plugins/kubelet.sock,
// whatever --root-dir says (found on a machine where /var/lib/kubelet had
// never existed).
var hostDirs = []string{"/var/lib/cni", "/var/log/containers", "/var/log/pods", "/var/lib/kubelet"}

func statePath() string { return filepath.Join(stateDir, "state.json") }

// lockHost takes the host-wide lock of the real node: its bridge, firewall
// chain and cgroups have fixed names, so one runs at a time. The lock goes
// with the process (flock), so a crashed run does not hold it.
func lockHost() (*os.File, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(stateDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another real node runs on this host (lock %s): %w", f.Name(), err)
	}
	return f, nil
}

// prepareHost records the host's state, then creates the bridge and the
// guard. A leftover of a crashed run is cleaned up first.
func prepareHost(workDir string, apiserverPort int) error {
	if err := cleanupHost(nil); err != nil {
		return fmt.Errorf("cleaning up after an earlier real node: %w", err)
	}
	fwd, err := os.ReadFile(ipForward)
	if err != nil {
		return err
	}
	st := hostState{WorkDir: workDir, IPForward: strings.TrimSpace(string(fwd)), Chains: map[string][]string{}}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			chains, err := listChains(cmd, table)
			if err != nil {
				return err
			}
			st.Chains[cmd+"/"+table] = chains
		}
	}
	for _, d := range hostDirs {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			st.CreatedDirs = append(st.CreatedDirs, d)
		}
	}
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(statePath(), raw, 0o600); err != nil {
		return err
	}

	// The guard first: no pod exists before it.
	for _, args := range guardRules(apiserverPort) {
		if err := run("iptables", args...); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		// A bridge whose address is not set takes the lowest of its
		// ports' and changes it as pods come and go: a pod that resolved
		// the gateway before another pod's veth left then sends to an
		// address the bridge no longer has, and its packets to the node
		// are lost until its ARP entry expires. A set address stays.
		{"link", "add", nodeBridge, "address", nodeBridgeMAC, "type", "bridge"},
		{"addr", "add", nodeIP + "/24", "dev", nodeBridge},
		{"link", "set", nodeBridge, "up"},
	} {
		if err := run("ip", args...); err != nil {
			return err
		}
	}
	return nil
}

// guardRules are the iptables commands that put the guard in place.
func guardRules(apiserverPort int) [][]string {
	return [][]string{
		{"-N", guardChain},
		// Between the bridge and the bridge: pod to pod, allowed.
		{"-A", guardChain, "-i", nodeBridge, "-o", nodeBridge, "-j", "RETURN"},
		// Forwarded from the bridge elsewhere, or from elsewhere to it.
		{"-A", guardChain, "-i", nodeBridge, "-j", "DROP"},
		{"-A", guardChain, "-o", nodeBridge, "-j", "DROP"},
		{"-I", "FORWARD", "1", "-j", guardChain},
		// For the node's subnet from any interface but the bridge and
		// loopback (the kubelet serves on the bridge address).
		{"-N", guardChain + "-IN"},
		{"-A", guardChain + "-IN", "-i", "lo", "-j", "RETURN"},
		{"-A", guardChain + "-IN", "-i", nodeBridge, "-j", "RETURN"},
		{"-A", guardChain + "-IN", "-d", nodeSubnet, "-j", "DROP"},
		// The API server listens on every interface; only loopback
		// and the bridge may reach it.
		{"-A", guardChain + "-IN", "-p", "tcp", "--dport", strconv.Itoa(apiserverPort), "-j", "DROP"},
		{"-I", "INPUT", "1", "-j", guardChain + "-IN"},
		// The host's own packets for a ClusterIP are translated to a
		// pod's address by kube-proxy's nat rules before the filter
		// table sees them. One still addressed to the Service range
		// is for a Service kube-proxy has not programmed (yet): the
		// range has no route of its own, so it would leave by the
		// default route. It is refused instead, and the client sees
		// a refused connection at once.
		{"-N", guardChain + "-OUT"},
		{"-A", guardChain + "-OUT", "-d", serviceCIDR, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"},
		{"-A", guardChain + "-OUT", "-d", serviceCIDR, "-j", "REJECT"},
		{"-I", "OUTPUT", "1", "-j", guardChain + "-OUT"},
	}
}

// GuardDrops reports how many forwarded packets the guard has dropped so
// far.
func GuardDrops() (int, error) { return guardCount(guardChain, "DROP") }

// GuardRejects reports how many of the host's own packets for the Service
// range the guard has refused so far: packets kube-proxy had not translated.
func GuardRejects() (int, error) { return guardCount(guardChain+"-OUT", "REJECT") }

// guardCount is the packet count of a guard chain's rules with target.
func guardCount(chain, target string) (int, error) {
	out, err := exec.Command("iptables", "-w", "-t", "filter", "-L", chain, "-v", "-x", "-n").Output()
	if err != nil {
		return 0, fmt.Errorf("iptables -L %s: %w", chain, err)
	}
	total := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[2] == target {
			n, err := strconv.Atoi(f[0])
			if err != nil {
				return 0, fmt.Errorf("parsing %q: %w", line, err)
			}
			total += n
		}
	}
	return total, nil
}

// Cleanup removes what a real node left on the host: its processes and
// those of its containers, mounts, cgroups, firewall chains, bridge and
// directories, and restores ip_forward. It reads what to restore from the
// state file that the node wrote at start; without one it does nothing. It
// is safe to run twice, and it is what `localcluster --cleanup` runs after a
// crash. It refuses while a real node runs (its lock is held): that one is
// stopped, not cleaned up after. log, when set, is told each step.
func Cleanup(log func(format string, args ...any)) error {
	lock, err := lockHost()
	if err != nil {
		return fmt.Errorf("not cleaning up: %w", err)
	}
	err = cleanupHost(log)
	_ = os.Remove(lock.Name())
	_ = lock.Close()
	_ = os.Remove(stateDir) // only if empty: a state file that could not be acted on stays
	return err
}

// cleanupHost is Cleanup for a caller that holds the host lock.
func cleanupHost(log func(format string, args ...any)) error {
	if log == nil {
		log = func(string, ...any) {}
	}
	raw, err := os.ReadFile(statePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st hostState
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("%s: %w", statePath(), err)
	}
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	log("restoring the host after the real node in %s", st.WorkDir)

	// Processes first: what runs holds mounts and cgroups. The containers'
	// processes live in the kubelet's cgroups, their shims (which outlive
	// containerd) are found by the containerd socket they serve.
	killed := killPIDs(kubepodsPIDs())
	killed += killPIDs(shimPIDs(st.WorkDir))
	if killed > 0 {
		log("killed %d leftover container processes and shims", killed)
	}
	note(unmountUnder(st.WorkDir))
	note(removeKubepodsCgroups())

	// The bridge's veths go with their network namespaces; the bridge does
	// not.
	if exec.Command("ip", "link", "show", nodeBridge).Run() == nil {
		note(run("ip", "link", "del", nodeBridge))
	}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			note(removeChains(cmd, table, st.Chains[cmd+"/"+table]))
		}
	}
	if st.IPForward != "" {
		note(os.WriteFile(ipForward, []byte(st.IPForward+"\n"), 0o644))
	}
	for _, d := range st.CreatedDirs {
		note(os.RemoveAll(d))
	}
	// Pod log links that the kubelet left in a /var/log/containers that
	// existed before.
	if links, err := filepath.Glob("/var/log/containers/*.log"); err == nil {
		for _, l := range links {
			if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, st.WorkDir+"/") {
				note(os.Remove(l))
			}
		}
	}
	// Everything of the node's own lives in its directory: containerd's
	// root and state, the kubelet's, CNI's configuration and leases.
	note(os.RemoveAll(filepath.Join(st.WorkDir, "node")))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.Remove(statePath())
}

// kubepodsPIDs are the processes in the kubelet's pod cgroups.
func kubepodsPIDs() []int {
	var pids []int
	_ = filepath.WalkDir("/sys/fs/cgroup/pids/kubepods", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "cgroup.procs" {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// shimPIDs are the containerd shims serving a containerd under workDir.
func shimPIDs(workDir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.Contains(filepath.Base(args[0]), "containerd-shim") &&
			slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, workDir+"/") }) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func killPIDs(pids []int) int {
	n := 0
	for _, pid := range pids {
		if pid > 1 && pid != os.Getpid() && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	// Give the kernel a moment to release what they held.
	if n > 0 {
		time.Sleep(500 * time.Millisecond)
	}
	return n
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount decodes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeKubepodsCgroups removes the kubelet's cgroups (cgroupfs driver,
// cgroup root "/") in every hierarchy, deepest first.
func removeKubepodsCgroups() error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if fi, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil && fi.IsDir() {
		roots = append(roots, "/sys/fs/cgroup/kubepods") // cgroup v2
	}
	var errs []error
	for _, root := range roots {
		if fi, err := os.Lstat(filepath.Dir(root)); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue // cpu -> cpu,cpuacct: the same hierarchy twice
		}
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// listChains lists the chains of a table (iptables-save's ":NAME" lines).
func listChains(cmd, table string) ([]string, error) {
	out, err := exec.Command(cmd+"-save", "-t", table).Output()
	if err != nil {
		return nil, fmt.Errorf("%s-save -t %s: %w", cmd, table, err)
	}
	var chains []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, ":") {
			chains = append(chains, strings.Fields(line[1:])[0])
		}
	}
	return chains, nil
}

// removeChains removes the chains of a table that were not there before
// and that the node, the kubelet or the CNI plugins make (LOCALCLUSTER-*,
// KUBE-*, CNI-*), with the rules that jump to them.
func removeChains(cmd, table string, before []string) error {
	out, err := exec.Command(cmd+"-save", "-t", table).Output()
	if err != nil {
		return fmt.Errorf("%s-save -t %s: %w", cmd, table, err)
	}
	ours := map[string]bool{}
	var rules []string
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			name := strings.Fields(line[1:])[0]
			if !slices.Contains(before, name) && (strings.HasPrefix(name, "LOCALCLUSTER-") || strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "CNI-")) {
				ours[name] = true
			}
		case strings.HasPrefix(line, "-A "):
			rules = append(rules, line)
		}
	}
	var errs []error
	// Rules of other chains that jump to ours go first.
	for _, r := range rules {
		f := strings.Fields(r)
		if ours[f[1]] {
			continue
		}
		if i := slices.Index(f, "-j"); i > 0 && i+1 < len(f) && ours[f[i+1]] {
			// kube-proxy's rules carry quoted comments.
			args := append([]string{"-w", "-t", table, "-D"}, splitRule(r)[1:]...)
			if out, err := exec.Command(cmd, args...).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w: %s", cmd, strings.Join(args, " "), err, bytes.TrimSpace(out)))
			}
		}
	}
	for name := range ours {
		_ = exec.Command(cmd, "-w", "-t", table, "-F", name).Run()
	}
	for name := range ours {
		if out, err := exec.Command(cmd, "-w", "-t", table, "-X", name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s -t %s -X %s: %w: %s", cmd, table, name, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// splitRule splits an iptables-save rule into arguments, as a shell would
// its double quotes and backslash escapes.
func splitRule(rule string) []string {
	var (
		args   []string
		cur    strings.Builder
		quoted bool
		inArg  bool
	)
	for i := 0; i < len(rule); i++ {
		switch ch := rule[i]; {
		case ch == '\\' && i+1 < len(rule):
			i++
			cur.WriteByte(rule[i])
			inArg = true
		case ch == '"':
			quoted = !quoted
			inArg = true
		case ch == ' ' && !quoted:
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteByte(ch)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}

// run runs a host command, its output in the error.
func run(name string, args ...string) error {
	if name == "iptables" || name == "ip6tables" {
		args = append([]string{"-w"}, args...)
	}
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
