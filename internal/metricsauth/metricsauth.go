// Package metricsauth guards the operator's metrics endpoint the way the
// kubelet and the API server guard theirs: a request must carry a bearer
// token that the API server authenticates (a TokenReview), and the user it
// belongs to must be allowed the request's verb on its path (a
// SubjectAccessReview of a non-resource URL, e.g. "get /metrics", which the
// bundle's metrics-reader ClusterRole grants). Without a token the answer is
// 401, without permission 403.
//
// controller-runtime's filters.WithAuthenticationAndAuthorization does the
// same through k8s.io/apiserver's delegating authenticator and authorizer.
// This package exists because that import is over a third of the operator's
// binary (77.5 MB with it, 47.9 MB without) and part of its memory at rest:
// k8s.io/apiserver links in CEL, OpenTelemetry and gRPC, whose
// initialisation costs heap and touched code pages (docs/architecture.md,
// "Memory"), for two API calls. The two reviews are made with client-go's typed clients, and their
// answers are cached as the delegating ones are (a token for a minute, an
// allowed request for five, a denied one for thirty seconds), so that a
// Prometheus scraping every few seconds costs the API server nothing.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long review answers are reused.
const (
	TokenCacheTTL = time.Minute
	AllowCacheTTL = 5 * time.Minute
	DenyCacheTTL  = 30 * time.Second
	// ReviewTimeout bounds one review call.
	ReviewTimeout = 10 * time.Second
	// maxCached bounds each cache: past it, expired entries are dropped,
	// and if none is, the whole cache (a flood of distinct tokens must not
	// grow the operator's memory).
	maxCached = 1024
)

// Reviewer makes the two reviews; the API server's in production.
type Reviewer interface {
	// ReviewToken returns the user a token belongs to, or ok false when
	// the API server does not authenticate it.
	ReviewToken(ctx context.Context, token string) (user authenticationv1.UserInfo, ok bool, err error)
	// ReviewAccess reports whether user may do verb on the non-resource
	// path, and the authorizer's reason when not.
	ReviewAccess(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (allowed bool, reason string, err error)
}

// FilterProvider is a metricsserver.Options.FilterProvider that reviews
// through the API server of config.
func FilterProvider(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	return NewFilter(apiServerReviewer{authn: authn, authz: authz}, time.Now), nil
}

// NewFilter returns the filter that reviews every request with r, caching
// the answers; now is the clock of the caches.
func NewFilter(r Reviewer, now func() time.Time) metricsserver.Filter {
	g := &guard{reviewer: r, now: now, tokens: map[[32]byte]tokenAnswer{}, access: map[accessKey]accessAnswer{}}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			g.serve(log, next, w, req)
		}), nil
	}
}

type guard struct {
	reviewer Reviewer
	now      func() time.Time

	mu sync.Mutex
	// tokens is keyed by the token's SHA-256: the operator keeps no
	// caller's credentials in memory.
	tokens map[[32]byte]tokenAnswer
	access map[accessKey]accessAnswer
}

type tokenAnswer struct {
	user    authenticationv1.UserInfo
	ok      bool
	expires time.Time
}

type accessKey struct {
	user, verb, path string
}

type accessAnswer struct {
	allowed bool
	reason  string
	expires time.Time
}

func (g *guard) serve(log logr.Logger, next http.Handler, w http.ResponseWriter, req *http.Request) {
	token, found := bearerToken(req)
	if !found {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	user, ok, err := g.authenticate(req.Context(), token)
	if err != nil {
		log.Error(err, "reviewing a metrics client's token")
		http.Error(w, "Authentication failed", http.StatusInternalServerError)
		return
	}
	if !ok {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	verb := strings.ToLower(req.Method)
	allowed, reason, err := g.authorize(req.Context(), user, verb, req.URL.Path)
	if err != nil {
		log.Error(err, "reviewing a metrics client's access", "user", user.Username)
		http.Error(w, fmt.Sprintf("Authorization for user %s failed", user.Username), http.StatusInternalServerError)
		return
	}
	if !allowed {
		log.V(4).Info("metrics access denied", "user", user.Username, "verb", verb, "path", req.URL.Path, "reason", reason)
		http.Error(w, fmt.Sprintf("Authorization denied for user %s", user.Username), http.StatusForbidden)
		return
	}
	next.ServeHTTP(w, req)
}

// bearerToken is the token of an "Authorization: Bearer" header.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func (g *guard) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	key := sha256.Sum256([]byte(token))
	g.mu.Lock()
	a, cached := g.tokens[key]
	g.mu.Unlock()
	if cached && g.now().Before(a.expires) {
		return a.user, a.ok, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ReviewTimeout)
	defer cancel()
	user, ok, err := g.reviewer.ReviewToken(ctx, token)
	if err != nil {
		return user, false, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	prune(g.tokens, now, func(a tokenAnswer) time.Time { return a.expires })
	g.tokens[key] = tokenAnswer{user: user, ok: ok, expires: now.Add(TokenCacheTTL)}
	return user, ok, nil
}

func (g *guard) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, string, error) {
	// The username alone is not the key: the same name may come with other
	// groups or extra attributes (a ServiceAccount's token and a user's
	// certificate, a token with scopes), and the authorizer sees them all.
	key := accessKey{user: userKey(user), verb: verb, path: path}
	g.mu.Lock()
	a, cached := g.access[key]
	g.mu.Unlock()
	if cached && g.now().Before(a.expires) {
		return a.allowed, a.reason, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ReviewTimeout)
	defer cancel()
	allowed, reason, err := g.reviewer.ReviewAccess(ctx, user, verb, path)
	if err != nil {
		return false, "", err
	}
	ttl := DenyCacheTTL
	if allowed {
		ttl = AllowCacheTTL
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	prune(g.access, now, func(a accessAnswer) time.Time { return a.expires })
	g.access[key] = accessAnswer{allowed: allowed, reason: reason, expires: now.Add(ttl)}
	return allowed, reason, nil
}

// userKey is everything of user that an authorizer may decide on, in one
// string (JSON sorts the extra attributes' keys).
func userKey(user authenticationv1.UserInfo) string {
	b, err := json.Marshal(user)
	if err != nil { // a struct of strings always marshals
		panic(err)
	}
	return string(b)
}

// prune makes room in a full cache: it drops the expired entries, and
// everything if none had expired.
func prune[K comparable, V any](m map[K]V, now time.Time, expires func(V) time.Time) {
	if len(m) < maxCached {
		return
	}
	for k, v := range m {
		if !now.Before(expires(v)) {
			delete(m, k)
		}
	}
	if len(m) >= maxCached {
		clear(m)
	}
}

// apiServerReviewer reviews through the API server.
type apiServerReviewer struct {
	authn authenticationclient.TokenReviewsGetter
	authz authorizationclient.SubjectAccessReviewsGetter
}

func (a apiServerReviewer) ReviewToken(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	review, err := a.authn.TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, false, fmt.Errorf("creating a TokenReview: %w", err)
	}
	// A token the API server does not accept comes back unauthenticated,
	// usually with an error that says why (expired, unknown): that is a
	// 401 for the caller, not a failure of the operator.
	return review.Status.User, review.Status.Authenticated, nil
}

func (a apiServerReviewer) ReviewAccess(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, string, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review, err := a.authz.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  user.Username,
			UID:                   user.UID,
			Groups:                user.Groups,
			Extra:                 extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	// An evaluation error (RBAC found a binding to a missing role
	// somewhere) does not make the answer wrong: not allowed is a 403, as
	// the API server answers its own requests.
	reason := review.Status.Reason
	if review.Status.EvaluationError != "" {
		reason = strings.TrimSpace(reason + " (" + review.Status.EvaluationError + ")")
	}
	return review.Status.Allowed, reason, nil
}
