package logstate

import "testing"

// TestProcessViewOwner: a process's view names the owner that wrote its
// logs as its reader named it — the kernel's pod or uid, or a configured
// root the kernel does not vouch for — and keeps it across the state file
// (the headroom model learns QP sizes per owner).
func TestProcessViewOwner(t *testing.T) {
	st := NewState(testOptions(identClock()))
	pod := &Source{Path: "/proc/10/root/log/run/plog/plog-100_1.log", Kind: SourcePlog, Dir: "/proc/10/root/log", PID: 100, Owner: "pod:0a2b-victim"}
	root := &Source{Path: "/var/log/npu/run/plog/plog-200_1.log", Kind: SourcePlog, Dir: "/var/log/npu", PID: 200, Owner: "root:/var/log/npu"}
	st.Ingest(pod, []byte(envLine(100, identNow, "HCCL_BUFFSIZE set by environment to [200]M")))
	st.Ingest(root, []byte(envLine(200, identNow, "HCCL_BUFFSIZE set by environment to [200]M")))
	blob, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	restored := NewState(testOptions(identClock()))
	if err := restored.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*State{"live": st, "restored": restored} {
		for _, tc := range []struct {
			src    *Source
			kernel bool
		}{{pod, true}, {root, false}} {
			p, ok := s.ProcessVars(ProcessKey{tc.src.Dir, tc.src.PID}, "HCCL_BUFFSIZE")
			if !ok || p.Owner != tc.src.Owner || p.OwnerKernel != tc.kernel {
				t.Errorf("%s: process %d: owner %q kernel %v (%v); want %q, %v", name, tc.src.PID, p.Owner, p.OwnerKernel, ok, tc.src.Owner, tc.kernel)
			}
		}
	}
}
