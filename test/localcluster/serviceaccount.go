package localcluster

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// ServiceAccountConfig returns a rest.Config that authenticates as the
// ServiceAccount namespace/name, with a bound token issued by the TokenRequest
// API (what the kubelet mounts into a pod). A process using it has exactly the
// permissions RBAC grants that ServiceAccount, which is how a test proves an
// operator runs with the RBAC it ships. Write it to a file for another process
// with WriteKubeconfig.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string, expiration time.Duration) (*rest.Config, error) {
	cs, err := c.adminClientset()
	if err != nil {
		return nil, err
	}
	seconds := int64(expiration / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for service account %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(c.RESTConfig())
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}
