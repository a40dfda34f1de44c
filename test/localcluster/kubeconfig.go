package localcluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeCertKubeconfig writes a kubeconfig for a client-certificate identity.
func writeCertKubeconfig(path, server string, caPEM, certPEM, keyPEM []byte) error {
	return writeKubeconfig(path, server, caPEM, &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         keyPEM,
	})
}

// WriteKubeconfig writes cfg (a server, its CA, and a bearer token or client
// certificate, as returned by RESTConfig or ServiceAccountConfig) as a
// kubeconfig file, for processes such as the operator or kubectl.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	if len(cfg.CAData) == 0 {
		return fmt.Errorf("rest.Config for %s has no CAData", cfg.Host)
	}
	return writeKubeconfig(path, cfg.Host, cfg.CAData, &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	})
}

func writeKubeconfig(path, server string, caPEM []byte, user *clientcmdapi.AuthInfo) error {
	const name = "localcluster"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos[name] = user
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = name
	return clientcmd.WriteToFile(*kc, path)
}
