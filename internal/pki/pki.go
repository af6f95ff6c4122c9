// Package pki writes a throwaway PKI for an etcd on loopback, for the tests and make demo: a CA,
// a server certificate for localhost, 127.0.0.1 and ::1, and a client certificate per common
// name (with etcd auth on, a client certificate's CN is the etcd user it logs in as).
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
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

// Files are the paths of a PKI that Write made.
type Files struct {
	Dir            string
	CAFile         string // the CA certificate: trusted by the server and the clients
	CAKeyFile      string // the CA's key, to sign more certificates
	ServerCertFile string
	ServerKeyFile  string
}

// CertFile is the client certificate of cn.
func (f *Files) CertFile(cn string) string { return filepath.Join(f.Dir, cn+".crt") }

// KeyFile is the key of cn's client certificate.
func (f *Files) KeyFile(cn string) string { return filepath.Join(f.Dir, cn+".key") }

// ClientConfig trusts the CA and presents cn's client certificate.
func (f *Files) ClientConfig(cn string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.CertFile(cn), f.KeyFile(cn))
	if err != nil {
		return nil, fmt.Errorf("client certificate of %s: %w", cn, err)
	}
	caPEM, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate in %s", f.CAFile)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// Write makes a CA, the server certificate and a client certificate for each of clients in dir,
// valid for validFor from an hour ago (clocks of processes on one machine agree, but a
// certificate made this very second must already be valid).
func Write(dir string, validFor time.Duration, clients ...string) (*Files, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f := &Files{
		Dir:            dir,
		CAFile:         filepath.Join(dir, "ca.crt"),
		CAKeyFile:      filepath.Join(dir, "ca.key"),
		ServerCertFile: filepath.Join(dir, "server.crt"),
		ServerKeyFile:  filepath.Join(dir, "server.key"),
	}
	notBefore := time.Now().Add(-time.Hour)
	notAfter := notBefore.Add(time.Hour + validFor)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gatewaydns throwaway CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	if err := writeCertKey(f.CAFile, f.CAKeyFile, caDER, caKey); err != nil {
		return nil, err
	}
	serial := int64(1)
	leaf := func(cn string, server bool, certFile, keyFile string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		serial++
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    notBefore,
			NotAfter:     notAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if server {
			// etcd dials itself with its server certificate (its gRPC gateway): client auth too.
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("certificate of %s: %w", cn, err)
		}
		return writeCertKey(certFile, keyFile, der, key)
	}
	if err := leaf("localhost", true, f.ServerCertFile, f.ServerKeyFile); err != nil {
		return nil, err
	}
	for _, cn := range clients {
		if err := leaf(cn, false, f.CertFile(cn), f.KeyFile(cn)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func writeCertKey(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}
