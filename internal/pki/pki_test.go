package pki

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"
)

// The server certificate and a client certificate complete a mutual TLS handshake on loopback,
// each side trusting only the CA that Write made.
func TestWrittenCertificatesCompleteAMutualTLSHandshake(t *testing.T) {
	f, err := Write(t.TempDir(), time.Hour, "eu1")
	if err != nil {
		t.Fatal(err)
	}
	serverCert, err := tls.LoadX509KeyPair(f.ServerCertFile, f.ServerKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(f.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			peer <- err.Error()
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			peer <- err.Error()
			return
		}
		peer <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
	}()
	cfg, err := f.ClientConfig("eu1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if cn := <-peer; cn != "eu1" {
		t.Fatalf("server saw %q, want the client certificate of eu1", cn)
	}
	if _, err := f.ClientConfig("us1"); err == nil {
		t.Error("a client certificate that was never written was loaded")
	}
}
