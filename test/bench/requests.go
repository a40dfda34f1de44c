package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// The API server's audit log is how the benchmark accounts for every
// request a controller sends, by verb, resource and response code: the
// operator's own request counter (rest_client_requests_total) has neither
// the resource nor, before this, was read by code, and the ReplicaSet
// controller, inside kube-controller-manager, has no counter of its own.
// Both controllers' requests are logged the same way, asynchronously
// (batch mode), so neither side waits on the log.

// Identities whose requests are logged: the operator's (identity.go), the
// benchmark's admin identity, which the operator shares with
// -operator-identity admin (its requests are then told apart by their
// User-Agent), and kube-controller-manager's controllers, which run with
// their own ServiceAccounts.
const (
	adminUser                = "localcluster-admin"
	replicaSetControllerUser = "system:serviceaccount:kube-system:replicaset-controller"
	deploymentControllerUser = "system:serviceaccount:kube-system:deployment-controller"
	// operatorUserAgent is the prefix of the manager's User-Agent: client-go
	// puts the program's name first.
	operatorUserAgent = "manager/"
)

func benchAuditPolicy(operatorUser string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users: [%q, %q, %q, %q]
- level: None
`, operatorUser, adminUser, replicaSetControllerUser, deploymentControllerUser))
}

// requestTally counts requests by "verb resource[/subresource] code", for
// instance "create pods 201"; a request with no resource (discovery) is
// counted by its path.
type requestTally map[string]int

type auditRecord struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

func (r auditRecord) key() string {
	what := r.RequestURI
	if i := strings.IndexByte(what, '?'); i >= 0 {
		what = what[:i]
	}
	if r.ObjectRef != nil && r.ObjectRef.Resource != "" {
		what = r.ObjectRef.Resource
		if r.ObjectRef.Subresource != "" {
			what += "/" + r.ObjectRef.Subresource
		}
	}
	code := 0
	if r.ResponseStatus != nil {
		code = r.ResponseStatus.Code
	}
	return fmt.Sprintf("%s %s %d", r.Verb, what, code)
}

// isController tells whether a request was sent by the controller of kind:
// the operator for PodSets, the ReplicaSet controller for ReplicaSets, and
// the Deployment and ReplicaSet controllers together for Deployments.
func isController(kind, operatorUser string, r auditRecord) bool {
	switch kind {
	case "podset":
		return r.User.Username == operatorUser && strings.HasPrefix(r.UserAgent, operatorUserAgent)
	case "replicaset":
		return r.User.Username == replicaSetControllerUser
	case "deployment":
		return r.User.Username == replicaSetControllerUser || r.User.Username == deploymentControllerUser
	}
	return false
}

// auditReader reads the audit log on from where its last read ended, so
// that a long benchmark does not read its log again for every phase.
type auditReader struct {
	path   string
	offset int64
	// operatorUser is the operator's user name in the log.
	operatorUser string
}

// window is a span of a phase whose requests are tallied.
type window struct {
	from, to time.Time
	tally    requestTally
}

// tally reads the events logged since the last read and counts those of
// kind's controller received within each window, in namespace ns or in no
// namespace. Events outside every window (between phases), and those about
// other namespaces (the previous phase's, being deleted), are skipped. Once a phase has read its windows,
// their events are behind the reader: read each phase's windows once, after
// the phase.
func (a *auditReader) tally(kind, ns string, windows ...*window) error {
	f, err := os.Open(a.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return err
	}
	for _, w := range windows {
		w.tally = requestTally{}
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			// A partly written last line is read again next time.
			break
		}
		if err != nil {
			return err
		}
		a.offset += int64(len(line))
		var rec auditRecord
		if json.Unmarshal(line, &rec) != nil || !isController(kind, a.operatorUser, rec) {
			continue
		}
		if rec.ObjectRef != nil && rec.ObjectRef.Namespace != "" && rec.ObjectRef.Namespace != ns {
			continue
		}
		for _, w := range windows {
			if !rec.RequestReceived.Before(w.from) && rec.RequestReceived.Before(w.to) {
				w.tally[rec.key()]++
			}
		}
	}
	return nil
}

// requestRow is one line of the request table: the medians of one request
// key over the runs of one shape and direction, for each kind.
type requestRow struct {
	Shape      string  `json:"shape"`
	Phase      string  `json:"phase"` // "scale-up" or "scale-down"
	Request    string  `json:"request"`
	PodSet     float64 `json:"podset"`
	ReplicaSet float64 `json:"replicaset"`
}

// summariseRequests takes, for each shape, phase and request key, the
// median count over the runs without error (0 in a run where the key does
// not appear).
func summariseRequests(phases []phaseResult, shapes []shape) []requestRow {
	var rows []requestRow
	for _, s := range shapes {
		for _, dir := range []string{"scale-up", "scale-down"} {
			get := func(p phaseResult) requestTally {
				if dir == "scale-up" {
					return p.RequestsUp
				}
				return p.RequestsDown
			}
			keys := map[string]bool{}
			runs := map[string][]requestTally{}
			for _, p := range phases {
				if p.Shape != s.String() || p.Error != "" || (p.Kind != "podset" && p.Kind != "replicaset") || get(p) == nil {
					continue
				}
				runs[p.Kind] = append(runs[p.Kind], get(p))
				for k := range get(p) {
					keys[k] = true
				}
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				med := func(kind string) float64 {
					var xs []float64
					for _, t := range runs[kind] {
						xs = append(xs, float64(t[k]))
					}
					return median(xs)
				}
				rows = append(rows, requestRow{Shape: s.String(), Phase: dir, Request: k, PodSet: med("podset"), ReplicaSet: med("replicaset")})
			}
		}
	}
	return rows
}

func printRequestTable(w io.Writer, rows []requestRow) {
	fmt.Fprintln(w, "| shape | phase | request (verb resource code) | PodSet operator | ReplicaSet controller |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.Shape, r.Phase, r.Request, fmtNum(r.PodSet), fmtNum(r.ReplicaSet))
	}
}

// explainedRequests are the requests the operator sends while it scales,
// each for a reason docs/architecture.md gives ("Every request accounted
// for"); a request of any other verb and resource fails the benchmark, so
// that a new one is explained (or removed) before it lands.
var explainedRequests = map[string]bool{
	"create pods":                true, // one per pod
	"delete pods":                true, // one per pod
	"create controllerrevisions": true, // the PodSet's first template, once
	"patch podsets/status":       true, // status, paced
	"create events":              true, // one event per scaling step
	"patch events":               true, // a repeated event's series
	// A PodSet whose awaited pod events lag its writes by a second checks
	// its cache against the API server (controllers/pod_cache_check.go):
	// one list of its pods, and a read of the PodSet when they differ.
	// None in the runs measured so far; a loaded API server could bring
	// some.
	"list pods":   true,
	"get podsets": true,
	// An informer re-opening its watch: client-go ends each watch after 5
	// to 10 minutes, so one may fall into any phase (a CI smoke run saw it).
	"watch pods":                true,
	"watch podsets":             true,
	"watch controllerrevisions": true,
	"watch resourcequotas":      true,
	// The InPlaceOnly admission policy's round (internal/admission), once a
	// minute on the leader whatever the PodSets do: is the API served, the
	// CRD's UID (the policy's owner), and a server-side apply of the policy
	// and its binding, which writes nothing when they are unchanged. A
	// phase that spans the minute's tick counts one round; the longer the
	// phases (a loaded machine), the likelier. The monitoring objects'
	// round does not run here: the benchmark's manager has no POD_NAME.
	"get /apis/admissionregistration.k8s.io/v1": true,
	"get customresourcedefinitions":             true,
	"patch validatingadmissionpolicies":         true,
	"patch validatingadmissionpolicybindings":   true,
}

// unexplainedRequests lists the operator's requests in p that
// explainedRequests does not.
func unexplainedRequests(p phaseResult) []string {
	var out []string
	for dir, t := range map[string]requestTally{"scale-up": p.RequestsUp, "scale-down": p.RequestsDown} {
		for k, n := range t {
			f := strings.Fields(k)
			if len(f) == 3 && !explainedRequests[f[0]+" "+f[1]] {
				out = append(out, fmt.Sprintf("PodSet %s run %d %s: %d unexplained requests %q", p.Shape, p.Run, dir, n, k))
			}
		}
	}
	sort.Strings(out)
	return out
}
