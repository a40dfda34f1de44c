//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// podAuditEvent is the part of an audit event about a pod create, delete or
// status write that auditMaxLive reads.
type podAuditEvent struct {
	Verb      string `json:"verb"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// ResponseObject is the created pod (creates are logged at
	// RequestResponse level): a generated name is known only from it. For
	// a status write it is the pod as written, with its phase.
	ResponseObject *struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	} `json:"responseObject"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
	// User is who made the request, for the trail a failed test prints.
	User struct {
		Username string `json:"username"`
	} `json:"user"`
}

// at is when the event counts. A create counts when its response was
// complete: the pod existed by then. A delete, or a status write that ends
// the pod, counts when the request was received: the pod was alive until
// then. The API server may complete such a response after a create that its
// watch event caused (a controller that sees the pod end creates a
// replacement), so ordering them by their completion would count the
// replacement and the pod it replaces as alive at once; ordered so, the
// count is a lower bound.
func (e podAuditEvent) at() time.Time {
	if e.Verb == "create" {
		return e.StageTimestamp
	}
	return e.RequestReceivedTimestamp
}

// ends says whether the event ends a pod's life: a delete (which sets its
// deletionTimestamp) or a status write to Failed or Succeeded.
func (e podAuditEvent) ends() bool {
	switch {
	case e.Verb == "delete" && e.ObjectRef.Subresource == "":
		return true
	case (e.Verb == "patch" || e.Verb == "update") && e.ObjectRef.Subresource == "status" && e.ResponseObject != nil:
		phase := e.ResponseObject.Status.Phase
		return phase == "Failed" || phase == "Succeeded"
	}
	return false
}

// auditMaxLive is the most pods alive at once in namespace ns, from the API
// server's audit log rather than a watch: a pod is alive from its successful
// create until the first successful delete of it (which sets its
// deletionTimestamp) or status write to Failed or Succeeded, each taken at
// the moment that keeps the count a lower bound of the truth
// (podAuditEvent.at); that is the liveness livePods uses. The pods of these
// tests never fail or succeed on their own; the pod garbage collector fails
// those of a deleted node before it deletes them, and a real node's kubelet
// those it has stopped before it removes them, and theirs are the only
// status writes the audit policy records. A watch observer can count
// wrong when its watch breaks (a relist hands over the pods that exist
// before the deletions of those that vanished), the audit log cannot.
func auditMaxLive(ns string) (int, error) {
	f, err := os.Open(env.cluster.AuditLogPath())
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return maxLiveInAuditLog(f, ns)
}

// maxLiveInAuditLog is auditMaxLive over an audit log's JSON lines.
func maxLiveInAuditLog(log io.Reader, ns string) (int, error) {
	events, err := podEventsInAuditLog(log, ns)
	if err != nil {
		return 0, err
	}
	live := map[string]bool{}
	most := 0
	for _, e := range events {
		switch {
		case e.Verb == "create" && e.ObjectRef.Subresource == "":
			if e.ResponseObject != nil {
				live[e.ResponseObject.Metadata.Name] = true
			}
		case e.ends():
			delete(live, e.ObjectRef.Name)
		}
		most = max(most, len(live))
	}
	return most, nil
}

// podEventsInAuditLog is the successful requests on the pods of namespace
// ns in an audit log's JSON lines, in the order in which they count
// (podAuditEvent.at).
func podEventsInAuditLog(log io.Reader, ns string) ([]podAuditEvent, error) {
	var events []podAuditEvent
	err := eachAuditEvent(log, func(e podAuditEvent) {
		if e.ObjectRef == nil || e.ResponseStatus == nil || e.ObjectRef.Resource != "pods" || e.ObjectRef.Namespace != ns {
			return
		}
		if c := e.ResponseStatus.Code; c >= 200 && c <= 299 {
			events = append(events, e)
		}
	})
	sort.SliceStable(events, func(i, j int) bool { return events[i].at().Before(events[j].at()) })
	return events, err
}

// printPodAuditTrail prints, for a failed test, every pod create, delete
// and recorded status write in namespace ns that the audit log holds, in
// order, with who made it: who ended which pod, and when, is what the
// component logs (removed with the cluster) cannot tell afterwards.
func printPodAuditTrail(ns string) {
	f, err := os.Open(env.cluster.AuditLogPath())
	if err != nil {
		fmt.Printf("----- no audit log: %v\n", err)
		return
	}
	defer f.Close()
	events, err := podEventsInAuditLog(f, ns)
	fmt.Printf("----- audit log, pods of %s (%d events, error %v): received, verb, subresource, pod, phase written, user -----\n", ns, len(events), err)
	for _, e := range events {
		phase := ""
		if e.ResponseObject != nil && e.ObjectRef.Subresource == "status" {
			phase = e.ResponseObject.Status.Phase
		}
		name := e.ObjectRef.Name
		if name == "" && e.ResponseObject != nil {
			name = e.ResponseObject.Metadata.Name
		}
		fmt.Printf("%s %s %s %s %s %s\n", e.at().Format("15:04:05.000"), e.Verb, e.ObjectRef.Subresource, name, phase, e.User.Username)
	}
}

// auditMaxRunning is the most pods running at once in namespace ns, live
// or terminating, from the API server's audit log: a pod runs from its
// successful create until its last successful delete (the one that removed
// it: a graceful delete only sets its deletionTimestamp, and the kubelet's,
// or kwok's, removes it once it has ended) or a status write to Failed or
// Succeeded, taken at the moment that keeps the count a lower bound
// (podAuditEvent.at). What podReplacementPolicy TerminationComplete
// bounds.
func auditMaxRunning(ns string) (int, error) {
	f, err := os.Open(env.cluster.AuditLogPath())
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return maxRunningInAuditLog(f, ns)
}

// maxRunningInAuditLog is auditMaxRunning over an audit log's JSON lines.
func maxRunningInAuditLog(log io.Reader, ns string) (int, error) {
	events, err := podEventsInAuditLog(log, ns)
	if err != nil {
		return 0, err
	}
	lastDelete := map[string]int{}
	for i, e := range events {
		if e.Verb == "delete" && e.ObjectRef.Subresource == "" {
			lastDelete[e.ObjectRef.Name] = i
		}
	}
	running := map[string]bool{}
	most := 0
	for i, e := range events {
		switch {
		case e.Verb == "create" && e.ObjectRef.Subresource == "":
			if e.ResponseObject != nil {
				running[e.ResponseObject.Metadata.Name] = true
			}
		case e.Verb == "delete" && e.ObjectRef.Subresource == "":
			if lastDelete[e.ObjectRef.Name] == i {
				delete(running, e.ObjectRef.Name)
			}
		case e.ends():
			delete(running, e.ObjectRef.Name)
		}
		most = max(most, len(running))
	}
	return most, nil
}

// eachAuditEvent decodes each of an audit log's JSON lines as an E and hands
// it to f. A line that does not decode is skipped: the fault matrix kills
// the API server, which may leave its last line half written.
func eachAuditEvent[E any](log io.Reader, f func(E)) error {
	s := bufio.NewScanner(log)
	s.Buffer(make([]byte, 16*1024*1024), 16*1024*1024)
	for s.Scan() {
		var e E
		if json.Unmarshal(s.Bytes(), &e) == nil {
			f(e)
		}
	}
	return s.Err()
}

// eachClusterAuditEvent is eachAuditEvent over the cluster's audit log.
func eachClusterAuditEvent[E any](f func(E)) error {
	log, err := os.Open(env.cluster.AuditLogPath())
	if err != nil {
		return err
	}
	defer log.Close()
	return eachAuditEvent(log, f)
}
