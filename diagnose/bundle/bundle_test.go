package bundle

import (
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestLayout(t *testing.T) {
	cases := []struct {
		name   string
		keys   []string
		layout Layout
		want   map[string]string // key → node
	}{
		{"node dirs", []string{"n1/log/run/plog/plog-1", "n2/train.log"}, LayoutAuto,
			map[string]string{"n1/log/run/plog/plog-1": "n1", "n2/train.log": "n2"}},
		{"wrapper then node dirs", []string{"job/n1/plog-1", "job/n2/plog-2"}, LayoutAuto,
			map[string]string{"job/n1/plog-1": "n1", "job/n2/plog-2": "n2"}},
		{"one CANN root", []string{"run/plog/plog-1", "debug/plog/plog-1"}, LayoutAuto,
			map[string]string{"run/plog/plog-1": "in", "debug/plog/plog-1": "in"}},
		{"wrapper of a CANN root", []string{"ascend/log/run/plog/plog-1", "ascend/log/debug/plog/plog-2"}, LayoutAuto,
			map[string]string{"ascend/log/run/plog/plog-1": "in"}},
		{"one node with a screen dir", []string{"logs/ascend/log/run/plog/plog-1", "logs/screen/train.log"}, LayoutAuto,
			map[string]string{"logs/ascend/log/run/plog/plog-1": "in"}},
		{"plogs beside dirs", []string{"plog-1", "a/train.log", "b/train.log"}, LayoutAuto,
			map[string]string{"a/train.log": "in"}},
		{"files beside node dirs", []string{"README.txt", "a/train.log", "b/train.log"}, LayoutAuto,
			map[string]string{"README.txt": "in", "a/train.log": "a", "b/train.log": "b"}},
		{"forced nodes", []string{"run/plog/plog-1", "x.log"}, LayoutNodes,
			map[string]string{"run/plog/plog-1": "run", "x.log": "in"}},
		{"forced node", []string{"a/x.log", "b/y.log"}, LayoutNode,
			map[string]string{"a/x.log": "in", "b/y.log": "in"}},
		{"device dirs", []string{"device-0/device-1_20250101000000000", "device-1/device-2_20250101000000000"}, LayoutAuto,
			map[string]string{"device-0/device-1_20250101000000000": "in"}},
	}
	for _, c := range cases {
		a := NewNodeAssigner("in", c.keys, c.layout)
		for k, want := range c.want {
			if got := a.Node(k); got != want {
				t.Errorf("%s: node(%q) = %q, want %q", c.name, k, got, want)
			}
		}
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		rel   string
		ok    bool
		kind  string
		group string
	}{
		{"n/run/plog/plog-123_20250101000000000.log", true, "plog", "n/run/plog/plog-123"},
		{"n/run/device-0/device-77_20250101000000000.log", true, "device", "n/run/device-0/device-77"},
		{"n/run/plog/plog-123_2025.log", true, "screen", "n/run/plog/plog-123_2025.log"}, // not CANN's name: a *.log
		{"pods/ns_pod_uid/c/0.log", true, "screen", "pods/ns_pod_uid/c/0.log"},
		{"pods/ns_pod_uid/c/0.log.20250101-120000", true, "screen", "pods/ns_pod_uid/c/0.log.20250101-120000"},
		{"pods/ns_pod_uid/c/0.log.20250101-120000.gz", true, "screen", "pods/ns_pod_uid/c/0.log.20250101-120000.gz"},
		{"stdout.txt", true, "screen", "stdout.txt"},
		{"slogdlog", false, "", ""},
		{"notes.md", false, "", ""},
		{"core.bin", false, "", ""},
	}
	kinds := map[int]string{0: "plog", 1: "device", 2: "screen"}
	for _, c := range cases {
		fc, ok := classify(c.rel)
		if ok != c.ok {
			t.Errorf("classify(%q) ok=%v", c.rel, ok)
			continue
		}
		if ok && (kinds[int(fc.kind)] != c.kind || fc.group != c.group) {
			t.Errorf("classify(%q) = %s %q, want %s %q", c.rel, kinds[int(fc.kind)], fc.group, c.kind, c.group)
		}
	}
}

func TestScanLines(t *testing.T) {
	long := strings.Repeat("x", 50)
	cases := []struct {
		in   string
		buf  int
		want []string
	}{
		{"a\nb\n", 8, []string{"a", "b"}},
		{"a\nb", 8, []string{"a", "b"}},
		{"a\r\n\nb\n", 8, []string{"a\r", "", "b"}},
		{"", 8, nil},
		{long + "\nok\n", 8, []string{"xxxxxxxx", "ok"}}, // cut to its start
		{"ab\n" + long, 8, []string{"ab", "xxxxxxxx"}},
		{"12345678\n9", 8, []string{"12345678", "9"}},
	}
	for _, c := range cases {
		var got []string
		st, err := scanLines(iotestHalf(c.in), make([]byte, c.buf), func(l []byte) { got = append(got, string(l)) })
		if err != nil || !slices.Equal(got, c.want) || st.bytes != int64(len(c.in)) || st.lines != int64(len(c.want)) {
			t.Errorf("scanLines(%q) = %q %+v %v, want %q", c.in, got, st, err, c.want)
		}
	}
}

// iotestHalf reads s a few bytes at a time, to exercise refills.
func iotestHalf(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) }

// FuzzClassify: a collection tool's file is never read, whatever its name.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		"process_log/run/plog/plog-1_00000000000000000.log",
		"x/device_log/slog/a.log",
		"npu_log_collect/ascend_log_1/x.txt",
		"pods/ns_pod_uid/c/0.log.20250101-120000.gz",
		"\xff\xfe/plog-",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, skip := knownSkip(s); skip {
			if _, ok := classify(s); ok {
				t.Fatalf("classify(%q) reads a file knownSkip skips", s)
			}
		}
	})
}
