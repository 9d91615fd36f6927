// Package e2e holds end-to-end tests that build and run the real
// hccl_exporter binary.
package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestMain removes the binary shared by the tests of this package.
func TestMain(m *testing.M) { testtools.Main(m) }

// buildExporter compiles ./cmd/hccl_exporter once for all tests here.
func buildExporter(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds and runs the exporter binary; skipped under -short")
	}
	return testtools.BuildExporter(t, filepath.Join("..", ".."))
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key, and returns
// a pool that trusts it.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "hccl_exporter e2e"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}

func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lockedBuffer collects the exporter's log output for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTLSAndBasicAuth runs the exporter with a web config (TLS + basic auth,
// exporter-toolkit) and checks what an operator relies on: no metrics
// without credentials, none over plain HTTP, metrics with them.
func TestTLSAndBasicAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the exporter binary")
	}
	bin := buildExporter(t)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, dir)

	const user, password = "prometheus", "s3cret-scrape-password"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web-config.yml")
	cfg := fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  %s: %s\n",
		certFile, keyFile, user, hash)
	if err := os.WriteFile(webConfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	addr := freeLoopbackPort(t)
	logs := &lockedBuffer{}
	cmd := exec.Command(bin,
		"--web.listen-address="+addr,
		"--web.config.file="+webConfig,
		"--no-collector.npusmi", "--no-collector.cannlog", "--no-collector.headroom",
	)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("exporter output:\n%s", logs.String())
		}
	})

	tlsClient := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	url := "https://" + addr + "/metrics"
	get := func(client *http.Client, url string, auth bool, pw string) (*http.Response, string, error) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.SetBasicAuth(user, pw)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, string(body), err
	}

	// Wait until the server answers over TLS.
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("exporter exited early: %v", err)
		default:
		}
		if _, _, err := get(tlsClient, url, false, ""); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("exporter not answering over TLS on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("no credentials", func(t *testing.T) {
		resp, body, err := get(tlsClient, url, false, "")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", resp.StatusCode)
		}
		if strings.Contains(body, "hccl_exporter_build_info") {
			t.Error("metrics served without credentials")
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		resp, _, err := get(tlsClient, url, true, "wrong")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", resp.StatusCode)
		}
	})
	t.Run("credentials", func(t *testing.T) {
		resp, body, err := get(tlsClient, url, true, password)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		if !strings.Contains(body, "hccl_exporter_build_info{") {
			t.Errorf("no hccl_exporter_build_info in the scrape:\n%.2000s", body)
		}
		if resp.TLS == nil {
			t.Error("response did not come over TLS")
		}
	})
	t.Run("plain HTTP", func(t *testing.T) {
		plain := &http.Client{Timeout: 5 * time.Second}
		resp, body, err := get(plain, "http://"+addr+"/metrics", true, password)
		if err == nil && (resp.StatusCode == http.StatusOK || strings.Contains(body, "hccl_exporter_build_info")) {
			t.Errorf("plain HTTP got status %d with metrics; the TLS port must not serve them", resp.StatusCode)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		strict := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
		if _, _, err := get(strict, url, true, password); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("a client that does not trust the certificate got %v, want a certificate error", err)
		}
	})
}
