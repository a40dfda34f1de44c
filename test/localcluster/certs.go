package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the key material of one cluster, generated at start with Go's
// crypto packages so that no openssl/cfssl binary is needed.
type pki struct {
	dir string
	ca  *x509.Certificate
	key crypto.Signer
}

// Paths of the files written by newPKI, relative to its directory.
const (
	caCertFile    = "ca.crt"
	caKeyFile     = "ca.key"
	serverCert    = "apiserver.crt"
	serverKey     = "apiserver.key"
	saPrivateFile = "sa.key"
	saPublicFile  = "sa.pub"
)

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// newPKI writes a CA, the API server's serving certificate and the
// service-account signing key pair into dir.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "localcluster-ca"},
		NotBefore:             now.Add(-time.Hour), // tolerate small clock skew
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, ca: ca, key: key}
	if err := writePEM(p.path(caCertFile), "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if err := writeKey(p.path(caKeyFile), key); err != nil {
		return nil, err
	}

	// The API server is reached as 127.0.0.1 or localhost from this machine,
	// and as the first service IP / kubernetes.default from inside the
	// cluster, whose Service leads to the real node's address.
	if _, _, err := p.issue(serverCert, serverKey, "kube-apiserver", nil, true,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(firstServiceIP), net.ParseIP(nodeIP)}); err != nil {
		return nil, err
	}

	// The service-account token signer. RSA because every consumer of
	// projected tokens (and the OIDC discovery document) supports RS256.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if err := writeKey(p.path(saPrivateFile), saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	if err := writePEM(p.path(saPublicFile), "PUBLIC KEY", pub); err != nil {
		return nil, err
	}
	return p, nil
}

// clientCert issues a client certificate for user in groups and returns the
// PEM-encoded certificate and key (kubeconfigs embed them).
func (p *pki) clientCert(user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	return p.issue("", "", user, groups, false, nil, nil)
}

// issue signs a certificate with the CA. With certFile/keyFile set it also
// writes them to the PKI directory.
func (p *pki) issue(certFile, keyFile, cn string, orgs []string, server bool, dns []string, ips []net.IP) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, key.Public(), p.key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing certificate for %s: %w", cn, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if certFile != "" {
		if err := os.WriteFile(p.path(certFile), certPEM, 0o600); err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(p.path(keyFile), keyPEM, 0o600); err != nil {
			return nil, nil, err
		}
	}
	return certPEM, keyPEM, nil
}

func (p *pki) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.ca.Raw})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
