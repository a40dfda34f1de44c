package metricsauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
)

// fakeReviewer knows tokens and which users may get which paths, and counts
// the reviews it is asked for.
type fakeReviewer struct {
	users       map[string]authenticationv1.UserInfo // by token
	allowed     map[string]bool                      // "user verb path"
	err         error
	tokenCalls  int
	accessCalls int
}

func (f *fakeReviewer) ReviewToken(_ context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	f.tokenCalls++
	if f.err != nil {
		return authenticationv1.UserInfo{}, false, f.err
	}
	u, ok := f.users[token]
	return u, ok, nil
}

func (f *fakeReviewer) ReviewAccess(_ context.Context, user authenticationv1.UserInfo, verb, path string) (bool, string, error) {
	f.accessCalls++
	if f.err != nil {
		return false, "", f.err
	}
	return f.allowed[user.Username+" "+verb+" "+path], "no RBAC rule", nil
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newGuarded(g Gomega, r Reviewer, c *clock) http.Handler {
	h, err := NewFilter(r, c.now)(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, "metrics")
	}))
	g.Expect(err).NotTo(HaveOccurred())
	return h
}

func get(h http.Handler, method, path, authorization string) int {
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func reviewer() *fakeReviewer {
	return &fakeReviewer{
		users: map[string]authenticationv1.UserInfo{
			"reader-token":   {Username: "system:serviceaccount:monitoring:prometheus", Groups: []string{"system:serviceaccounts"}},
			"stranger-token": {Username: "system:serviceaccount:default:stranger"},
		},
		allowed: map[string]bool{"system:serviceaccount:monitoring:prometheus get /metrics": true},
	}
}

func TestFilterAnswers(t *testing.T) {
	tests := []struct {
		name          string
		method, path  string
		authorization string
		want          int
		wantReviews   int // token and access reviews
	}{
		{"no token", http.MethodGet, "/metrics", "", http.StatusUnauthorized, 0},
		{"not a bearer token", http.MethodGet, "/metrics", "Basic cmVhZGVyOnB3", http.StatusUnauthorized, 0},
		{"an empty bearer token", http.MethodGet, "/metrics", "Bearer  ", http.StatusUnauthorized, 0},
		{"a token the API server rejects", http.MethodGet, "/metrics", "Bearer forged", http.StatusUnauthorized, 1},
		{"a user without the role", http.MethodGet, "/metrics", "Bearer stranger-token", http.StatusForbidden, 2},
		{"the metrics reader", http.MethodGet, "/metrics", "Bearer reader-token", http.StatusOK, 2},
		{"the scheme in any case", http.MethodGet, "/metrics", "bearer reader-token", http.StatusOK, 2},
		{"the metrics reader, another path", http.MethodGet, "/debug/pprof", "Bearer reader-token", http.StatusForbidden, 2},
		{"the metrics reader, another verb", http.MethodPost, "/metrics", "Bearer reader-token", http.StatusForbidden, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := reviewer()
			h := newGuarded(g, r, &clock{t: time.Unix(1e9, 0)})

			g.Expect(get(h, tt.method, tt.path, tt.authorization)).To(Equal(tt.want))
			g.Expect(r.tokenCalls + r.accessCalls).To(Equal(tt.wantReviews))
		})
	}
}

func TestFilterFailsClosedWhenTheAPIServerCannotReview(t *testing.T) {
	g := NewWithT(t)
	r := reviewer()
	r.err = errors.New("connection refused")
	h := newGuarded(g, r, &clock{t: time.Unix(1e9, 0)})

	g.Expect(get(h, http.MethodGet, "/metrics", "Bearer reader-token")).To(Equal(http.StatusInternalServerError))
	r.err = nil
	g.Expect(get(h, http.MethodGet, "/metrics", "Bearer reader-token")).To(Equal(http.StatusOK), "a failed review is not cached")
}

func TestFilterCachesAnswersForTheirTTL(t *testing.T) {
	tests := []struct {
		name  string
		token string
		want  int
		// reviews asked for by a second request just before and just
		// after ttl
		ttl                     time.Duration
		tokenCalls, accessCalls [2]int
	}{
		{"an allowed request: token for a minute", "reader-token", http.StatusOK, TokenCacheTTL, [2]int{1, 2}, [2]int{1, 1}},
		{"an allowed request: access for five minutes", "reader-token", http.StatusOK, AllowCacheTTL, [2]int{5, 6}, [2]int{1, 2}},
		{"a denied request: thirty seconds", "stranger-token", http.StatusForbidden, DenyCacheTTL, [2]int{1, 1}, [2]int{1, 2}},
		{"a rejected token: a minute", "forged", http.StatusUnauthorized, TokenCacheTTL, [2]int{1, 2}, [2]int{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := reviewer()
			c := &clock{t: time.Unix(1e9, 0)}
			h := newGuarded(g, r, c)
			start := c.t

			g.Expect(get(h, http.MethodGet, "/metrics", "Bearer "+tt.token)).To(Equal(tt.want))
			// Requests every 30 s up to just before ttl, as a scraper
			// would send them; the token's own TTL expires on the way
			// for the longer ones.
			for c.t = start.Add(30 * time.Second); c.t.Before(start.Add(tt.ttl)); c.t = c.t.Add(30 * time.Second) {
				g.Expect(get(h, http.MethodGet, "/metrics", "Bearer "+tt.token)).To(Equal(tt.want))
			}
			c.t = start.Add(tt.ttl - time.Second)
			g.Expect(get(h, http.MethodGet, "/metrics", "Bearer "+tt.token)).To(Equal(tt.want))
			g.Expect([2]int{r.tokenCalls, r.accessCalls}).To(Equal([2]int{tt.tokenCalls[0], tt.accessCalls[0]}), "before the TTL")

			c.t = start.Add(tt.ttl + time.Second)
			g.Expect(get(h, http.MethodGet, "/metrics", "Bearer "+tt.token)).To(Equal(tt.want))
			g.Expect([2]int{r.tokenCalls, r.accessCalls}).To(Equal([2]int{tt.tokenCalls[1], tt.accessCalls[1]}), "after the TTL")
		})
	}
}

func TestFilterCachesStayBounded(t *testing.T) {
	g := NewWithT(t)
	r := reviewer()
	c := &clock{t: time.Unix(1e9, 0)}
	gd := &guard{reviewer: r, now: c.now, tokens: map[[32]byte]tokenAnswer{}, access: map[accessKey]accessAnswer{}}

	for i := range 3 * maxCached {
		_, ok, err := gd.authenticate(context.Background(), fmt.Sprintf("forged-%d", i))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeFalse())
	}
	g.Expect(len(gd.tokens)).To(BeNumerically("<=", maxCached))
}

func TestFilterDoesNotShareAnswersBetweenUsersOfOneName(t *testing.T) {
	// The same name twice, the first time with what the authorizer allows
	// (a group the role is bound to, a scope): the second must be
	// reviewed, not served the first one's cached answer.
	for _, tc := range []struct {
		name            string
		allowed, denied authenticationv1.UserInfo
	}{
		{"other groups",
			authenticationv1.UserInfo{Username: "alice", Groups: []string{"metrics-readers"}},
			authenticationv1.UserInfo{Username: "alice"}},
		{"other extra attributes",
			authenticationv1.UserInfo{Username: "alice", Groups: []string{"g"}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"metrics"}}},
			authenticationv1.UserInfo{Username: "alice", Groups: []string{"g"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := reviewer()
			r.users["allowed-token"] = tc.allowed
			r.users["denied-token"] = tc.denied
			r.allowed = map[string]bool{}
			h := newGuarded(g, &groupReviewer{fakeReviewer: r, group: "metrics-readers", scope: "metrics"}, &clock{t: time.Unix(1e9, 0)})

			g.Expect(get(h, http.MethodGet, "/metrics", "Bearer allowed-token")).To(Equal(http.StatusOK))
			g.Expect(get(h, http.MethodGet, "/metrics", "Bearer denied-token")).To(Equal(http.StatusForbidden))
		})
	}
}

// groupReviewer allows the members of one group, and the holders of one
// scope.
type groupReviewer struct {
	*fakeReviewer
	group, scope string
}

func (g *groupReviewer) ReviewAccess(_ context.Context, user authenticationv1.UserInfo, _, _ string) (bool, string, error) {
	for _, grp := range user.Groups {
		if grp == g.group {
			return true, "", nil
		}
	}
	for _, sc := range user.Extra["scopes"] {
		if sc == g.scope {
			return true, "", nil
		}
	}
	return false, "not in " + g.group, nil
}

func TestAPIServerReviewerSendsWhatTheAuthorizerNeeds(t *testing.T) {
	g := NewWithT(t)
	// A stand-in API server for the two review resources, answering as
	// the real one does: a rejected token with an error, a denial with an
	// evaluation error from elsewhere in RBAC. It decodes what client-go
	// sends (protobuf by default, JSON when asked) and answers in JSON,
	// which the clients accept as well.
	decode := func(req *http.Request, into runtime.Object) error {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return err
		}
		_, _, err = scheme.Codecs.UniversalDeserializer().Decode(body, nil, into)
		return err
	}
	var sar authorizationv1.SubjectAccessReview
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var out any
		switch req.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			g.Expect(decode(req, &tr)).To(Succeed())
			if tr.Spec.Token == "good" {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
					Username: "bob", UID: "u-1", Groups: []string{"g"}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a"}},
				}}
			} else {
				tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
			}
			out = &tr
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			g.Expect(decode(req, &sar)).To(Succeed())
			answer := sar.DeepCopy()
			answer.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "no rule", EvaluationError: `role "gone" not found`}
			out = answer
		default:
			http.NotFound(w, req)
			return
		}
		g.Expect(req.Method).To(Equal(http.MethodPost))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		g.Expect(json.NewEncoder(w).Encode(out)).To(Succeed())
	}))
	defer srv.Close()
	filter, err := FilterProvider(&rest.Config{Host: srv.URL}, srv.Client())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filter).NotTo(BeNil())
	authn, err := authenticationclient.NewForConfigAndClient(&rest.Config{Host: srv.URL}, srv.Client())
	g.Expect(err).NotTo(HaveOccurred())
	authz, err := authorizationclient.NewForConfigAndClient(&rest.Config{Host: srv.URL}, srv.Client())
	g.Expect(err).NotTo(HaveOccurred())
	rev := apiServerReviewer{authn: authn, authz: authz}

	_, ok, err := rev.ReviewToken(context.Background(), "bad")
	g.Expect(err).NotTo(HaveOccurred(), "a rejected token is an answer, not an error")
	g.Expect(ok).To(BeFalse())

	user, ok, err := rev.ReviewToken(context.Background(), "good")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(user.Username).To(Equal("bob"))

	allowed, reason, err := rev.ReviewAccess(context.Background(), user, "get", "/metrics")
	g.Expect(err).NotTo(HaveOccurred(), "an evaluation error elsewhere in RBAC is not a failure")
	g.Expect(allowed).To(BeFalse())
	g.Expect(reason).To(ContainSubstring("no rule"))
	g.Expect(sar.Spec).To(Equal(authorizationv1.SubjectAccessReviewSpec{
		User: "bob", UID: "u-1", Groups: []string{"g"},
		Extra:                 map[string]authorizationv1.ExtraValue{"scopes": {"a"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}))

	// And the whole filter FilterProvider builds, against the same server.
	h, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(get(h, http.MethodGet, "/metrics", "Bearer good")).To(Equal(http.StatusForbidden))
	g.Expect(get(h, http.MethodGet, "/metrics", "Bearer bad")).To(Equal(http.StatusUnauthorized))
}
