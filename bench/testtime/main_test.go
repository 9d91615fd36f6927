package main

import (
	"bytes"
	"strings"
	"testing"
)

// run is a go test -json stream: package a with a test whose parallel
// subtests ran after it returned (its own Elapsed is 0), a plain test and a
// failing one; package b skipped; and a stderr line merged in.
const run = `{"Time":"2026-12-06T05:00:00Z","Action":"start","Package":"github.com/hccl-exporter/hccl_exporter/a"}
{"Time":"2026-12-06T05:00:00Z","Action":"run","Package":"github.com/hccl-exporter/hccl_exporter/a","Test":"TestFiles"}
{"Time":"2026-12-06T05:00:00.1Z","Action":"run","Package":"github.com/hccl-exporter/hccl_exporter/a","Test":"TestFiles/x.yml"}
{"Time":"2026-12-06T05:00:00.1Z","Action":"run","Package":"github.com/hccl-exporter/hccl_exporter/a","Test":"TestFiles/y.yml"}
{"Time":"2026-12-06T05:00:04.1Z","Action":"pass","Package":"github.com/hccl-exporter/hccl_exporter/a","Test":"TestFiles/x.yml","Elapsed":4}
{"Time":"2026-12-06T05:00:06.1Z","Action":"pass","Package":"github.com/hccl-exporter/hccl_exporter/a","Test":"TestFiles/y.yml","Elapsed":6}
{"Time":"2026-12-06T05:00:06.1Z","Action":"pass","Package":"github.com/hccl-exporter/hccl_exporter/a","Test":"TestFiles","Elapsed":0}
{"Time":"2026-12-06T05:00:06.1Z","Action":"run","Package":"github.com/hccl-exporter/hccl_exporter/a","Test":"TestPlain"}
{"Time":"2026-12-06T05:00:07.6Z","Action":"pass","Package":"github.com/hccl-exporter/hccl_exporter/a","Test":"TestPlain","Elapsed":1.5}
{"Time":"2026-12-06T05:00:07.6Z","Action":"fail","Package":"github.com/hccl-exporter/hccl_exporter/a","Test":"TestBroken","Elapsed":0.2}
{"Time":"2026-12-06T05:00:08Z","Action":"fail","Package":"github.com/hccl-exporter/hccl_exporter/a","Elapsed":8}
FAIL	github.com/hccl-exporter/hccl_exporter/a
{"Time":"2026-12-06T05:00:10Z","Action":"skip","Package":"github.com/hccl-exporter/hccl_exporter/b","Elapsed":0}
`

func TestRead(t *testing.T) {
	s, err := read(strings.NewReader(run), false)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"a TestFiles": 6, "a TestPlain": 1.5, "a TestBroken": 0.2} {
		if got := s.tests[k]; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s: %v s, want %v", k, got, want)
		}
	}
	if len(s.tests) != 3 {
		t.Errorf("tests %v: subtests listed without -sub", s.tests)
	}
	if s.pkgs["a"] != 8 || len(s.pkgs) != 2 {
		t.Errorf("packages %v, want a 8 s and b", s.pkgs)
	}
	var out bytes.Buffer
	print(&out, s, 2)
	for _, want := range []string{"wall 10.0s", "8.00  a\n", "6.00  a TestFiles\n", "failed: a TestBroken, a\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "TestBroken") && strings.Count(out.String(), "\n   ") > 4 {
		t.Errorf("-top 2 printed more rows:\n%s", out.String())
	}

	s, err = read(strings.NewReader(run), true)
	if err != nil {
		t.Fatal(err)
	}
	if s.tests["a TestFiles/y.yml"] != 6 {
		t.Errorf("with -sub: %v", s.tests)
	}
}

func TestReadRejectsBrokenJSON(t *testing.T) {
	if _, err := read(strings.NewReader("{\"Action\":\n"), false); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("err = %v, want one naming line 1", err)
	}
}
