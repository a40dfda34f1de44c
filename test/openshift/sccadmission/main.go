// Command sccadmission is a stand-in of OpenShift's pod admission for the
// local test clusters: OpenShift's own SecurityContextConstraints admission
// plugin (github.com/openshift/apiserver-library-go, package sccadmission),
// served as a mutating and a validating admission webhook in front of a
// plain kube-apiserver.
//
// On OpenShift the plugin runs inside the API server, mutating a pod
// (assigning its user, fsGroup and SELinux context from the namespace's
// ranges) before the webhooks and validating it after them. Here it is
// the first mutating webhook and a validating one. It reads what the
// plugin reads on OpenShift: the SecurityContextConstraints objects
// (security.openshift.io/v1), the namespaces' openshift.io/sa.scc.*
// annotations, and who may `use` each SCC, through SubjectAccessReviews
// against the cluster's RBAC.
//
// Every pod it judges is counted by namespace: GET /judgements returns
// {"<namespace>": {"admitted": N, "refused": N, "refusals": [...]}}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/openshift/apiserver-library-go/pkg/securitycontextconstraints/sccadmission"
	securityclient "github.com/openshift/client-go/security/clientset/versioned"
	securityinformers "github.com/openshift/client-go/security/informers/externalversions"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	coreapi "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
)

// plugin is the part of OpenShift's plugin that the webhook calls.
type plugin interface {
	admission.MutationInterface
	admission.ValidationInterface
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of an identity that may list SCCs and namespaces and create SubjectAccessReviews")
	listen := flag.String("listen", "127.0.0.1:0", "HTTPS address to serve on")
	certFile := flag.String("tls-cert", "", "serving certificate (PEM)")
	keyFile := flag.String("tls-key", "", "serving key (PEM)")
	addrFile := flag.String("address-file", "", "file to write the address served on to, once ready")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *listen, *certFile, *keyFile, *addrFile); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, kubeconfig, listen, certFile, keyFile, addrFile string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// In OpenShift the plugin asks the API server's authorizer in process;
	// here each decision is a SubjectAccessReview (about twenty a pod, one
	// per SCC for the requester and the pod's ServiceAccount), which
	// client-go's default 5 requests a second would hold for seconds.
	cfg.QPS, cfg.Burst = 1000, 2000
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	sec, err := securityclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Who may use an SCC is decided by the cluster's RBAC, as on OpenShift,
	// where the plugin asks the API server's authorizer. Decisions are not
	// cached for long: a test grants and revokes use.
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             time.Second,
		DenyCacheTTL:              time.Second,
		WebhookRetryBackoff:       &wait5xx,
	}.New()
	if err != nil {
		return err
	}

	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	secInformers := securityinformers.NewSharedInformerFactory(sec, 0)
	scc := sccadmission.NewConstraint()
	scc.SetAuthorizer(authz)
	scc.SetSecurityInformers(secInformers.Security().V1().SecurityContextConstraints())
	scc.SetExternalKubeInformerFactory(kubeInformers)
	if err := scc.ValidateInitialization(); err != nil {
		return err
	}
	kubeInformers.Start(ctx.Done())
	secInformers.Start(ctx.Done())
	for typ, ok := range kubeInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the %v informer did not sync", typ)
		}
	}
	for typ, ok := range secInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the %v informer did not sync", typ)
		}
	}

	w := &webhook{plugin: scc, judgements: map[string]*judgements{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", w.serve(true))
	mux.HandleFunc("/validate", w.serve(false))
	mux.HandleFunc("/judgements", w.report)
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(rw, "ok") })
	return serve(ctx, mux, listen, certFile, keyFile, addrFile)
}

// wait5xx retries a SubjectAccessReview that failed, as the API server's
// webhook authorizer does.
var wait5xx = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// judgements is what the webhook decided for one namespace's pods.
type judgements struct {
	// Admitted counts the pods the validating pass admitted, and SCCs
	// those by the SCC that admitted them: creates, and updates that change
	// a pod's spec. It runs after the API server's other admission
	// plugins, so a pod another plugin refused is not counted.
	Admitted int            `json:"admitted"`
	SCCs     map[string]int `json:"sccs"`
	// Refused counts the pods the mutating pass refused (where OpenShift's
	// plugin decides), and Refusals are their messages, OpenShift's words.
	Refused  int      `json:"refused"`
	Refusals []string `json:"refusals"`
	// ValidationRefused counts pods the validating pass refused: a pod
	// changed after the plugin admitted it into one it refuses.
	ValidationRefused int `json:"validationRefused"`
}

type webhook struct {
	plugin     plugin
	mu         sync.Mutex
	judgements map[string]*judgements
}

func (w *webhook) of(ns string) *judgements {
	j := w.judgements[ns]
	if j == nil {
		j = &judgements{SCCs: map[string]int{}}
		w.judgements[ns] = j
	}
	return j
}

func (w *webhook) report(rw http.ResponseWriter, _ *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(w.judgements)
}

func (w *webhook) serve(mutate bool) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(rw, fmt.Sprintf("decoding the AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		resp := w.admit(r.Context(), review.Request, mutate)
		resp.UID = review.Request.UID
		review.Response = resp
		review.Request = nil
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(&review)
	}
}

// admit runs the plugin's Admit (mutate) or Validate over one request.
func (w *webhook) admit(ctx context.Context, req *admissionv1.AdmissionRequest, mutate bool) *admissionv1.AdmissionResponse {
	pod, external, err := decodePod(req.Object.Raw)
	if err != nil {
		return deny(http.StatusBadRequest, err.Error())
	}
	var oldPod *coreapi.Pod
	if req.Operation == admissionv1.Update {
		if oldPod, _, err = decodePod(req.OldObject.Raw); err != nil {
			return deny(http.StatusBadRequest, err.Error())
		}
	}
	// The object the plugin sees: nil interfaces, not typed nils, for an
	// absent old object.
	var oldObj runtime.Object
	if oldPod != nil {
		oldObj = oldPod
	}
	attrs := admission.NewAttributesRecord(pod, oldObj,
		schema.GroupVersionKind(req.Kind), req.Namespace, req.Name,
		schema.GroupVersionResource(req.Resource), req.SubResource,
		admission.Operation(req.Operation), nil, req.DryRun != nil && *req.DryRun, userInfo(req))

	judged := req.SubResource == "" && (req.Operation == admissionv1.Create || (oldPod != nil && !equalSpecs(oldPod, pod)))
	if !mutate {
		err := w.plugin.Validate(ctx, attrs, nil)
		if judged {
			w.record(req, external, err, true)
		}
		if err != nil {
			return deny(http.StatusForbidden, err.Error())
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	}

	before := pod.DeepCopy()
	started := time.Now()
	err = w.plugin.Admit(ctx, attrs, nil)
	if judged && err != nil {
		w.record(req, external, err, false)
	}
	if judged {
		log.Printf("%s pod %s/%s%s by %s: mutating pass in %v, %v", req.Operation, req.Namespace, req.Name, podName(external), req.UserInfo.Username, time.Since(started).Round(time.Millisecond), verdict(pod, err))
	}
	if err != nil {
		return deny(http.StatusForbidden, err.Error())
	}
	patch, err := podPatch(before, pod)
	if err != nil {
		return deny(http.StatusInternalServerError, err.Error())
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	if len(patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	return resp
}

// record counts one judged pod of req's namespace.
func (w *webhook) record(req *admissionv1.AdmissionRequest, pod *corev1.Pod, err error, validating bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.of(req.Namespace)
	switch {
	case err == nil:
		j.Admitted++
		j.SCCs[pod.Annotations["openshift.io/scc"]]++
	case validating:
		j.ValidationRefused++
		j.Refusals = append(j.Refusals, fmt.Sprintf("%s%s (validating): %v", req.Name, podName(pod), err))
	default:
		j.Refused++
		j.Refusals = append(j.Refusals, fmt.Sprintf("%s%s: %v", req.Name, podName(pod), err))
	}
}

func verdict(pod *coreapi.Pod, err error) string {
	if err != nil {
		return "refused: " + err.Error()
	}
	return "admitted under " + pod.Annotations["openshift.io/scc"]
}

func podName(p *corev1.Pod) string {
	if p.Name == "" && p.GenerateName != "" {
		return " (" + p.GenerateName + "*)"
	}
	return ""
}

func equalSpecs(a, b *coreapi.Pod) bool {
	x, _ := json.Marshal(a.Spec)
	y, _ := json.Marshal(b.Spec)
	return string(x) == string(y)
}

// decodePod is a request's pod in the API server's internal form, which the
// plugin works on, and as sent.
func decodePod(raw []byte) (*coreapi.Pod, *corev1.Pod, error) {
	var external corev1.Pod
	if err := json.Unmarshal(raw, &external); err != nil {
		return nil, nil, fmt.Errorf("decoding the pod: %w", err)
	}
	var internal coreapi.Pod
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(&external, &internal, nil); err != nil {
		return nil, nil, fmt.Errorf("converting the pod: %w", err)
	}
	return &internal, &external, nil
}

// podPatch is the JSON patch that makes the pod as sent what the plugin
// made of it. Both internal pods are converted back the same way,
// so that the patch holds the plugin's changes and nothing a conversion
// round trip would add.
func podPatch(before, after *coreapi.Pod) ([]byte, error) {
	from, err := externalJSON(before)
	if err != nil {
		return nil, err
	}
	to, err := externalJSON(after)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.CreatePatch(from, to)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	return json.Marshal(ops)
}

func externalJSON(p *coreapi.Pod) ([]byte, error) {
	var out corev1.Pod
	if err := corev1conversion.Convert_core_Pod_To_v1_Pod(p, &out, nil); err != nil {
		return nil, err
	}
	return json.Marshal(&out)
}

func userInfo(req *admissionv1.AdmissionRequest) user.Info {
	extra := map[string][]string{}
	for k, v := range req.UserInfo.Extra {
		extra[k] = v
	}
	return &user.DefaultInfo{Name: req.UserInfo.Username, UID: req.UserInfo.UID, Groups: req.UserInfo.Groups, Extra: extra}
}

func deny(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: msg, Reason: metav1.StatusReasonForbidden,
	}}
}

func serve(ctx context.Context, h http.Handler, listen, certFile, keyFile, addrFile string) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if addrFile != "" {
		if err := os.WriteFile(addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
			return err
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, certFile, keyFile) }()
	select {
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	case err := <-errc:
		return err
	}
}
