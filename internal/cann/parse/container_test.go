package parse

import "testing"

func TestParseCRI(t *testing.T) {
	tests := []struct {
		line          string
		ok, partial   bool
		ts, stream, m string
	}{
		{"2025-11-03T12:18:46.447213000Z stderr F [PID: 1] x(EI0011): y", true, false, "2025-11-03T12:18:46.447213000Z", "stderr", "[PID: 1] x(EI0011): y"},
		{"2025-11-03T12:18:46.447213000+08:00 stdout P part", true, true, "2025-11-03T12:18:46.447213000+08:00", "stdout", "part"},
		{"2025-11-03T12:18:46Z stdout F", true, false, "2025-11-03T12:18:46Z", "stdout", ""},
		{"2025-11-03T12:18:46Z stdout F ", true, false, "2025-11-03T12:18:46Z", "stdout", ""},
		{"2025-11-03T12:18:46Z stdin F x", false, false, "", "", ""},
		{"2025-11-03T12:18:46Z stdout X x", false, false, "", "", ""},
		{"2025-11-03T12:18:46Z stdout Fx", false, false, "", "", ""},
		{"EI0011: plain", false, false, "", "", ""},
		{"", false, false, "", "", ""},
	}
	for _, tc := range tests {
		var c CRILine
		ok := ParseCRI([]byte(tc.line), &c)
		if ok != tc.ok {
			t.Errorf("ParseCRI(%q) ok = %v", tc.line, ok)
			continue
		}
		if ok && (c.Partial != tc.partial || string(c.Time) != tc.ts || string(c.Stream) != tc.stream || string(c.Msg) != tc.m) {
			t.Errorf("ParseCRI(%q) = %+v", tc.line, c)
		}
	}
	if _, ok := ParseRFC3339([]byte("2025-11-03T12:18:46.447213000Z")); !ok {
		t.Error("RFC 3339 time not parsed")
	}
}

func TestParseDocker(t *testing.T) {
	line := []byte(`{"log":"[PID: 1] 2025-11-03-20:18:46.447.213 T(EI0011): x\n","stream":"stderr","time":"2025-11-03T12:18:46.447213Z"}`)
	if !IsDocker(line) || !DockerComplete(line) {
		t.Fatal("docker line not recognised")
	}
	d, err := ParseDocker(line)
	if err != nil || d.Stream != "stderr" || d.Log != "[PID: 1] 2025-11-03-20:18:46.447.213 T(EI0011): x\n" {
		t.Fatalf("got %+v %v", d, err)
	}
	if DockerComplete([]byte(`{"log":"partial","stream":"stderr","time":"2025-11-03T12:18:46Z"}`)) {
		t.Error("partial entry taken as complete")
	}
	if _, err := ParseDocker([]byte(`{"log":`)); err == nil {
		t.Error("truncated JSON accepted")
	}
}
