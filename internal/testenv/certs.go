package testenv

import (
	"crypto/tls"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/pki"
)

// TLSFiles holds the paths of a throwaway PKI written by StartEtcd with
// WithEtcdTLS: a CA, a server certificate for 127.0.0.1/localhost (signed by
// the CA) and a client certificate (signed by the same CA, CN
// ClientCommonName).
type TLSFiles struct {
	CAFile         string // CA certificate (PEM); trusted by server and clients
	CAKeyFile      string // CA private key, to sign more certificates if needed
	ServerCertFile string
	ServerKeyFile  string
	ClientCertFile string
	ClientKeyFile  string

	pki *pki.Files
}

// ClientCommonName is the subject CN of the client certificate in TLSFiles.
// With etcd auth enabled, a client that presents this certificate and no
// password is authenticated as an etcd user of this name.
const ClientCommonName = "testenv-client"

// ClientConfig returns a TLS client configuration that trusts the CA and
// presents the client certificate.
func (f *TLSFiles) ClientConfig() (*tls.Config, error) { return f.pki.ClientConfig(ClientCommonName) }

// writePKI generates a CA, a server and a client certificate into dir.
func writePKI(dir string) (*TLSFiles, error) {
	p, err := pki.Write(dir, 24*time.Hour, ClientCommonName)
	if err != nil {
		return nil, err
	}
	return &TLSFiles{
		CAFile:         p.CAFile,
		CAKeyFile:      p.CAKeyFile,
		ServerCertFile: p.ServerCertFile,
		ServerKeyFile:  p.ServerKeyFile,
		ClientCertFile: p.CertFile(ClientCommonName),
		ClientKeyFile:  p.KeyFile(ClientCommonName),
		pki:            p,
	}, nil
}
