package join

import (
	"reflect"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// fillNonZero sets v to a non-zero value of its kind.
func fillNonZero(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint64, reflect.Uint32:
		v.SetUint(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(7)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(7, 0)))
			return
		}
		for i := range v.NumField() {
			fillNonZero(t, name+"."+v.Type().Field(i).Name, v.Field(i))
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillNonZero(t, name+"[0]", s.Index(0))
		v.Set(s)
	default:
		t.Fatalf("%s: no test value for kind %s", name, v.Kind())
	}
}

// TestMatchRules runs the matching rules over plain rows: the host pid
// found through /proc wins, then the pid, then the container pid, then the
// device (the most recently written process of the chip's physical id).
func TestMatchRules(t *testing.T) {
	chips := []ascend.Chip{
		{ChipID: ascend.ChipID{NPU: "4", Chip: "0"}, PhyID: "8"},
		{ChipID: ascend.ChipID{NPU: "4", Chip: "1"}, PhyID: "9"},
		{ChipID: ascend.ChipID{NPU: "5", Chip: "0"}, PhyID: "10"},
		{ChipID: ascend.ChipID{NPU: "5", Chip: "1"}, PhyID: "11"},
	}
	rows := []ascend.Process{
		{ChipID: ascend.ChipID{NPU: "4", Chip: "0"}, PID: 1000},                      // /proc placed it
		{ChipID: ascend.ChipID{NPU: "4", Chip: "1"}, PID: 2000},                      // logs know the host pid
		{ChipID: ascend.ChipID{NPU: "5", Chip: "0"}, PID: 3000, ContainerPID: "156"}, // logs know the container pid
		{ChipID: ascend.ChipID{NPU: "5", Chip: "1"}, PID: 4000},                      // only the device says
	}
	t0 := time.Date(2026, 1, 7, 10, 0, 0, 0, time.UTC)
	devs := []logstate.ProcessDevice{
		{Key: logstate.ProcessKey{Dir: "/p", PID: 7}, HostPID: 1000, DevicePhyID: 8},
		{Key: logstate.ProcessKey{Dir: "/h", PID: 2000}, DevicePhyID: -1},
		{Key: logstate.ProcessKey{Dir: "/c", PID: 156}, DevicePhyID: 10},
		{Key: logstate.ProcessKey{Dir: "/old", PID: 44}, DevicePhyID: 11, LastWrite: t0},
		{Key: logstate.ProcessKey{Dir: "/new", PID: 45}, DevicePhyID: 11, LastWrite: t0.Add(time.Hour)},
	}
	want := []struct {
		key logstate.ProcessKey
		by  string
	}{
		{logstate.ProcessKey{Dir: "/p", PID: 7}, ByProcfs},
		{logstate.ProcessKey{Dir: "/h", PID: 2000}, ByPID},
		{logstate.ProcessKey{Dir: "/c", PID: 156}, ByContainerPID},
		{logstate.ProcessKey{Dir: "/new", PID: 45}, ByDevice},
	}
	got := Match(chips, rows, devs)
	if len(got) != len(rows) {
		t.Fatalf("Match returned %d rows, want %d", len(got), len(rows))
	}
	for i, w := range want {
		if got[i].Row != rows[i] || got[i].Log.Key != w.key || got[i].By != w.by {
			t.Errorf("row %d: matched %+v by %q, want %+v by %q", i, got[i].Log.Key, got[i].By, w.key, w.by)
		}
	}
	// Without logs every row keeps its host pid and is unmatched.
	for i, m := range Match(chips, rows, nil) {
		if m.By != "" || m.Log.Key.PID != rows[i].PID || m.Log.DevicePhyID != -1 {
			t.Errorf("row %d without logs: %+v", i, m)
		}
	}
}

// TestSettingsNumbers: printed numbers become known settings, a refused
// value (no number) counts as not printed.
func TestSettingsNumbers(t *testing.T) {
	p := logstate.ProcessView{PID: 9, Env: map[string]logstate.EnvSetting{
		"HCCL_RDMA_QPS_PER_CONNECTION": {Value: "4", Number: 4, HasNumber: true},
		"HCCL_BUFFSIZE":                {Value: "-1"},
		"HCCL_INTRA_ROCE_ENABLE":       {Value: "1", Number: 1, HasNumber: true},
	}, QPMode: logstate.QPModeView{Offline: true}}
	s := Settings(p)
	want := headroom.ProcessSettings{PID: 9, QPsPerConnection: 4, QPsKnown: true, IntraRoCE: true, GraphMode: true, SingleQP: true}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Settings = %+v, want %+v", s, want)
	}
}

// TestWorkloadCopiesEveryField: every field of the workload memory's link
// sets and failures reaches the model's, by name, non-zero.
func TestWorkloadCopiesEveryField(t *testing.T) {
	var l logstate.RememberedLinks
	var f logstate.RememberedFailure
	for _, v := range []reflect.Value{reflect.ValueOf(&l).Elem(), reflect.ValueOf(&f).Elem()} {
		for i := range v.NumField() {
			fillNonZero(t, v.Type().Field(i).Name, v.Field(i))
		}
	}
	links, failures := Workload(logstate.WorkloadView{Links: []logstate.RememberedLinks{l}, Failures: []logstate.RememberedFailure{f}})
	if len(links) != 1 || len(failures) != 1 {
		t.Fatalf("Workload returned %d link sets and %d failures, want 1 and 1", len(links), len(failures))
	}
	for _, c := range []struct {
		from reflect.Type
		got  reflect.Value
	}{{reflect.TypeOf(l), reflect.ValueOf(links[0])}, {reflect.TypeOf(f), reflect.ValueOf(failures[0])}} {
		if c.got.NumField() != c.from.NumField() {
			t.Errorf("%s has %d fields, the log state's %s %d", c.got.Type(), c.got.NumField(), c.from, c.from.NumField())
		}
		for i := range c.got.NumField() {
			name := c.got.Type().Field(i).Name
			if _, ok := c.from.FieldByName(name); !ok {
				t.Errorf("%s.%s has no field of that name in %s", c.got.Type(), name, c.from)
			}
			if c.got.Field(i).IsZero() {
				t.Errorf("%s.%s is not copied", c.got.Type(), name)
			}
		}
	}
	if l, f := Workload(logstate.WorkloadView{}); l != nil || f != nil {
		t.Errorf("an empty memory gives %v, %v", l, f)
	}
}
