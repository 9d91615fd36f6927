package discover

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseEnviron: never panics, and every value it keeps is the value of
// its own variable in the input (an entry "NAME=value" at the start or
// after a NUL): nothing else of the environment comes out.
func FuzzParseEnviron(f *testing.F) {
	f.Add([]byte("HOME=/root\x00PATH=/bin\x00"))
	f.Add([]byte("ASCEND_PROCESS_LOG_PATH=/l\x00ASCEND_WORK_PATH=/w\x00HOME=/h"))
	f.Add([]byte("HOME=\x00HOME=/x\x00=\x00\x00"))
	f.Add([]byte(strings.Repeat("A", 5000) + "=1\x00HOME=/h\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEnviron(bytes.NewReader(data))
		if err != nil {
			return
		}
		for name, v := range map[string]string{VarProcessLogPath: e.ProcessLogPath, VarWorkPath: e.WorkPath, VarHome: e.Home} {
			if v == "" {
				continue
			}
			if strings.IndexByte(v, 0) >= 0 || len(v) > maxValueLen {
				t.Fatalf("%s = %q", name, v)
			}
			entry := []byte(name + "=" + v)
			if !bytes.HasPrefix(data, entry) && !bytes.Contains(data, append([]byte{0}, entry...)) {
				t.Fatalf("%s = %q is not an entry of %q", name, v, data)
			}
		}
	})
}

// FuzzParseStatus: never panics; a pid it returns is positive.
func FuzzParseStatus(f *testing.F) {
	f.Add([]byte(statusNS))
	f.Add([]byte("NSpid:\t1\t2\t3\nUid:\t0\n"))
	f.Add([]byte("NSpid:\nUid:\t-1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStatus(bytes.NewReader(data))
		if err != nil {
			return
		}
		if st.NSpid < 0 || st.UID < -1 {
			t.Fatalf("%+v from %q", st, data)
		}
	})
}
