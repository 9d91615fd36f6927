package diagnose

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestTextReportBoundedLists: a bundle of 10,000 processes that all print
// the same settings and report EI0011 gives a text report of a few tens of
// KiB (it was 2.2 MB: every pid in every sentence), with the counts, while
// the JSON report still lists every pid.
func TestTextReportBoundedLists(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10,000 plogs")
	}
	const n = 10000
	files := map[string]string{}
	var screen strings.Builder
	for i := range n {
		pid := fmt.Sprint(100000 + i)
		files[fmt.Sprintf("node-a/log/run/plog/plog-%s_20251103201702882.log", pid)] = envPlog(pid, "200", "8")
		fmt.Fprintf(&screen, "[PID: %s] 2025-11-03-20:30:00.000.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate\n", pid)
	}
	files["node-a/screen/train.log"] = screen.String()
	dir := t.TempDir()
	writeTree(t, dir, files)
	r := run(t, dir)

	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if text.Len() > 64<<10 {
		for i, l := range strings.Split(text.String(), "\n") {
			if len(l) > 2000 {
				t.Logf("line %d has %d bytes: %.300s", i, len(l), l)
			}
		}
		t.Fatalf("text report of %d processes is %d bytes, want at most 64 KiB", n, text.Len())
	}
	for _, want := range []string{"10000 pids: 100000, 100001", "and 9996 more", "10000 process(es) in 1 group(s) by settings set and communicators",
		"settings set " + r.Nodes[0].Processes[0].SettingsSet + ": 10000 process(es) on " + r.Nodes[0].Name} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	// --detail lists processes, a bounded number per node.
	var detail bytes.Buffer
	if err := WriteTextWith(&detail, r, TextOptions{Detail: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail.String(), r.Nodes[0].Name+": 9968 more process(es) (all in --format=json)") || detail.Len() > 64<<10 {
		t.Errorf("--detail: %d bytes, bounded: %v", detail.Len(), strings.Contains(detail.String(), "more process(es) (all in --format=json)"))
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []string{"100000", "104999", "109999"} {
		if !strings.Contains(js.String(), pid) {
			t.Errorf("JSON report lacks pid %s", pid)
		}
	}
	t.Logf("text %d bytes, JSON %d bytes", text.Len(), js.Len())
}
