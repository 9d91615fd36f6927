package exporter

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gunzip decodes b with compress/gzip and, where installed, with the
// system's gzip (zlib's decoder): both must accept what is spliced.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false) // one member, as written
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("compress/gzip: %v", err)
	}
	if rest, _ := io.ReadAll(zr); len(rest) != 0 {
		t.Fatalf("%d bytes after the member", len(rest))
	}
	if path, err := exec.LookPath("gzip"); err == nil {
		cmd := exec.Command(path, "-dc")
		cmd.Stdin = bytes.NewReader(b)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gzip -dc: %v", err)
		}
		if !bytes.Equal(out, plain) {
			t.Fatalf("gzip -dc and compress/gzip decode differently (%d and %d bytes)", len(out), len(plain))
		}
	}
	return plain
}

func TestGzipSplicesKeptBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	text := func(n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			b.WriteString("hccl_env_info{pid=\"" + strconv.Itoa(300000+rng.IntN(64)) + "\",variable=\"HCCL_BUFFSIZE\"} 1\n")
		}
		return b.Bytes()[:n]
	}
	kept := func(n int) *keptEncoding { return &keptEncoding{plain: text(n)} }
	shared := kept(70 << 10) // kept, used twice: its deflated form once
	tests := []struct {
		name  string
		parts []any // []byte written plainly, *keptEncoding written kept
	}{
		{"nothing", nil},
		{"plain only", []any{text(100 << 10)}},
		{"kept only", []any{kept(1000)}},
		{"empty kept", []any{&keptEncoding{}}},
		{"kept first and last", []any{kept(5000), text(300), shared, text(40 << 10), kept(3)}},
		{"kept twice in a row", []any{text(10), shared, shared, text(1)}},
		{"segments around kept", []any{text(33 << 10), kept(10), text(65 << 10), text(1), kept(200 << 10)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &response{header: http.Header{}, body: &bytes.Buffer{}, wantGzip: true}
			var want bytes.Buffer
			for _, p := range tc.parts {
				switch p := p.(type) {
				case []byte:
					_, _ = r.Write(p)
					want.Write(p)
				case *keptEncoding:
					r.WriteKept(p)
					want.Write(p.plain)
				}
			}
			if r.zip == nil {
				r.zip = startGzip(0)
			}
			out, err := r.zip.finish(r.body.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got := gunzip(t, out.Bytes()); !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("decoded %d bytes, want %d", len(got), want.Len())
			}
			if !bytes.Equal(r.body.Bytes(), want.Bytes()) {
				t.Fatal("the recorded plain answer differs from what was written")
			}
		})
	}
}

// Scrape after scrape, the gzipped answer of a node whose stable families
// are kept (deflated once) decodes to the same as the plain answer.
func TestGzippedAnswersWithKeptFamilies(t *testing.T) {
	c := &stableCollector{n: 3000}
	c.set(1, "a")
	reg := NewRegistry(discard(), map[string]Collector{"c": c})
	h, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: 0})
	if err != nil {
		t.Fatal(err)
	}
	for i, version := range []uint64{1, 1, 2, 2} {
		c.set(version, "v"+strconv.FormatUint(version, 10))
		for _, accept := range acceptHeaders[:3] {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept", accept)
			req.Header.Set("Accept-Encoding", "gzip")
			zipped := httptest.NewRecorder()
			h.ServeHTTP(zipped, req)
			if zipped.Header().Get("Content-Encoding") != "gzip" {
				t.Fatalf("scrape %d: not gzipped: %v", i, zipped.Header())
			}
			got := string(gunzip(t, zipped.Body.Bytes()))
			req.Header.Del("Accept-Encoding")
			plain := httptest.NewRecorder()
			h.ServeHTTP(plain, req)
			// The counter and the durations change between the two.
			if stableOnly(got) != stableOnly(plain.Body.String()) {
				t.Fatalf("scrape %d, Accept %q: gzipped and plain answers differ", i, accept)
			}
			if n := strings.Count(stableOnly(got), "\n"); n < 3000 && !strings.Contains(accept, "protobuf") {
				t.Fatalf("scrape %d, Accept %q: %d stable series", i, accept, n)
			}
			if !strings.Contains(accept, "protobuf") && !strings.Contains(got, `value="v`+strconv.FormatUint(version, 10)+`"`) {
				t.Fatalf("scrape %d: values of version %d not served", i, version)
			}
		}
		time.Sleep(time.Millisecond)
	}
}
