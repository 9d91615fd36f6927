package diagnose

import (
	"strings"
	"testing"
)

// EI0011 names the size of the failed allocation: an exact size of at least
// 2 × HCCL_BUFFSIZE is the cclBuffer, whose remedy is HCCL_BUFFSIZE (with
// the MoE/MC2 exception), while the range form is a QP.
func TestEI0011AllocationSize(t *testing.T) {
	tests := []struct {
		name     string
		report   string
		bufSized bool
	}{
		{"exact cclBuffer size", "[PID: 9] 2026-03-01-10:00:00.000.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate 420478976 bytes of NPU memory.", true},
		{"QP range", "[PID: 9] 2026-03-01-10:00:00.000.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.", false},
		{"exact QP size", "[PID: 9] 2026-03-01-10:00:00.000.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate 1048576 bytes of NPU memory.", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{
				"run/plog/plog-9_20260301095900000.log": envPlog("9", "200", ""),
				"train.log":                             tc.report + "\n",
			})
			r := run(t, dir)
			if r.EI0011 == nil || len(r.EI0011.Remedies) != 4 {
				t.Fatalf("EI0011 section %+v", r.EI0011)
			}
			buff := r.EI0011.Remedies[3]
			text := buff.Title + "\n" + strings.Join(buff.Findings, "\n")
			for _, w := range []string{"failed to allocate 420478976 bytes (401 MiB)", "not a QP", "MoE / MC2", "HCCL_BUFFSIZE too small"} {
				if strings.Contains(text, w) != tc.bufSized {
					t.Errorf("HCCL_BUFFSIZE remedy contains %q = %v, want %v:\n%s", w, !tc.bufSized, tc.bufSized, text)
				}
			}
			if strings.Contains(text, "HCCL_BUFFSIZE is not the cause of this EI0011") == tc.bufSized {
				t.Errorf("HCCL_BUFFSIZE remedy contradicts the allocation size:\n%s", text)
			}
			if r.BufferOOM != nil {
				t.Errorf("an EI0011 report became EL0004 evidence: %+v", r.BufferOOM)
			}
		})
	}
}
