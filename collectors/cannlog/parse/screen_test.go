package parse

import "testing"

func TestFindFaultCode(t *testing.T) {
	tests := []struct{ line, code string }{
		{"[PID: 2103452] 2025-11-03-20:18:46.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): Failed", "EI0011"},
		{"EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out.", "EI0006"},
		{"RuntimeError: EI0007: [PID: 1] 2025-04-08-18:07:20.444.436 Failed to allocate resource", "EI0007"},
		{"[rank1]: EI0009: Device 1 transport init error.", "EI0009"},
		{"Resource Error Insufficient Device Memory(EI0011):x", "EI0011"},
		{"[PID:2103452]2025-11-03-20:18:46.447.213 Title(EI0019):Failed", "EI0019"},
		{"EL0004: [PID: 316198] 2025-09-28-07:22:29.827.496 Failed to allocate memory.", "EL0004"},
		{"EZ9999: Inner Error!", "EZ9999"},
		{"E10001: GE error", "E10001"},
		{"[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed", ""},
		{"W11001: a warning", ""},
		{"0xEI0011: hex", ""},
		{"XEI0011) no paren", ""},
		{"EI0011 without colon", ""},
		{"EI001:", ""},
		{"step 10 loss 0.5", ""},
		{"", ""},
	}
	for _, tc := range tests {
		code, at := FindFaultCode([]byte(tc.line))
		if string(code) != tc.code {
			t.Errorf("FindFaultCode(%q) = %q, want %q", tc.line, code, tc.code)
		}
		if code != nil && tc.line[at:at+6] != tc.code {
			t.Errorf("offset %d wrong for %q", at, tc.line)
		}
	}
}

func TestScreenPID(t *testing.T) {
	for line, want := range map[string]int{
		"[PID: 2103452] 2025-11-03": 2103452,
		"(PID:1292363, Device:1)":   1292363,
		"[PID:7]x":                  7,
		"PID: 12345678901":          0,
		"no pid":                    0,
		"PID: x":                    0,
	} {
		if got := ScreenPID([]byte(line)); got != want {
			t.Errorf("ScreenPID(%q) = %d, want %d", line, got, want)
		}
	}
}

// TestScreenResource reads EI0007's resource_type from real reports
// (vllm-ascend #2754, #5947, #3141) and built ones; the label set is fixed.
func TestScreenResource(t *testing.T) {
	tests := []struct{ line, want string }{
		{"RuntimeError: EI0007: [PID: 2322] 2025-09-04-09:44:05.909.517 Failed to allocate resource[qp] with info [aicpu rank:7,localUserrank:7,localIpAddr: 100.97.0.8,deviceLogicId:3,send_cq_depth:32768]. Reason: Memory resources are exhausted.", ResourceQP},
		{"[PID: 542] 2026-01-16-04:52:41.266.655 Allocation_Failure(EI0007): Failed to allocate resource[qp] with info [aicpu rank:7,localUserrank:7,localIpAddr: 100.97.2.72,deviceLogicId:3,send_cq_depth:32768]. Reason: Memory resources are exhausted.", ResourceQP},
		{"EI0007: [PID: 1] 2025-09-28-10:00:00.000.000 Failed to allocate resource[DeviceMemory] with info [size:2147483648]. Reason: Memory resources are exhausted.", ResourceDeviceMemory},
		{"EI0007: [PID: 1] x Failed to allocate resource[HostMemory] with info [MallocHost, size:64 bytes].", ResourceHostMemory},
		{"EI0007: [PID: 1] x Failed to allocate resource[event] with info [null].", ResourceOther},
		{"EI0007: [PID: 1] x Failed to allocate resource[] with info [].", ""},
		{"EI0007: [PID: 1] x Failed to allocate resource[qp", ""},
		{"EI0011: [PID: 1] x Failed to allocate 262144~3145728 bytes of NPU memory.", ""},
	}
	for _, tc := range tests {
		if got := ScreenResource([]byte(tc.line)); got != tc.want {
			t.Errorf("ScreenResource(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}
