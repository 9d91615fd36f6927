package analyse

import (
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

// TestRolesFollowTheTable: diagnose judges every code as the fault-code
// table does (the alerting policy's inhibitions follow the same table), and
// every role but a rank's own failure has a timer.
func TestRolesFollowTheTable(t *testing.T) {
	if model.RoleLocal != string(logstate.RoleOwn) || model.RoleWaiting != string(logstate.RoleWaiting) || model.RoleEither != string(logstate.RoleEither) {
		t.Fatalf("diagnose's role names differ from the table's")
	}
	for _, c := range logstate.Codes() {
		r := roleOf(c.Code)
		if r.Role != string(c.Role) {
			t.Errorf("%s: diagnose role %s, table %s", c.Code, r.Role, c.Role)
		}
		if c.Role != logstate.RoleOwn && r.Timer.Default <= 0 {
			t.Errorf("%s (%s): no timer", c.Code, c.Role)
		}
		if c.Role == logstate.RoleWaiting && r.Why == "" {
			t.Errorf("%s: a waiting code without why", c.Code)
		}
	}
	// EI0012 was the rank's own fault here and a waiting code in the
	// inhibitions; HCOMM raises it for a peer's exit as well as for the
	// rank's own buffers.
	if r := roleOf("EI0012"); r.Role != model.RoleEither || r.Timer != execTimer {
		t.Errorf("EI0012: %+v", r)
	}
	if r := roleOf(model.CodeHeartbeat); r.Role != model.RoleWaiting || r.Why == "" || r.Timer != execTimer {
		t.Errorf("heartbeat: %+v", r)
	}
	if r := roleOf("EZ9999"); r.Role != model.RoleEither || r.Timer != connectTimer {
		t.Errorf("a code outside the table: %+v", r)
	}
}

// TestEI0012FollowsItsRoot: a peer's SDMA exception 5 s after a rank ran
// out of memory is a consequence of that failure (EI0012 is either), not
// a second rank failing on its own at the same time (it was "concurrent"
// while the role table called it the rank's own fault); alone, it starts
// an incident of its own with a root.
func TestEI0012FollowsItsRoot(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(node, code string, after time.Duration) *ev {
		e := &ev{at: t0.Add(after), role: roleOf(code)}
		e.Node, e.PID, e.Code = node, 100, code
		e.timer = e.role.Timer.Default + e.role.Timer.Plus
		return e
	}
	cm := &clockModel{}
	incs := groupIncidents([]*ev{mk("node-1", "EI0011", 0), mk("node-2", "EI0012", 5*time.Second)}, cm)
	if len(incs) != 1 || incs[0].first.Code != "EI0011" {
		t.Fatalf("incidents %+v, want one rooted at EI0011", incs)
	}
	if got := incs[0].evs[1].Part; got != model.PartConsequence {
		t.Errorf("EI0012 after EI0011 is %q, want %q", got, model.PartConsequence)
	}
	alone := groupIncidents([]*ev{mk("node-2", "EI0012", 0)}, cm)
	if len(alone) != 1 || !alone[0].rooted || alone[0].evs[0].Part != model.PartRoot {
		t.Errorf("EI0012 alone: %+v, want the root of its incident", alone[0])
	}
}
