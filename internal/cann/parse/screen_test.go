package parse

import "testing"

// TestFindFaultCode: a code counts in the shapes CANN prints a report in,
// after launcher and framework prefixes, and never from a mention inside
// other text (captures: HCCL docs, vllm-ascend #486, #2754, #3162, #5947,
// #8818, Ascend/pytorch #7, lmdeploy #2855; docs/cannlog.md).
func TestFindFaultCode(t *testing.T) {
	tests := []struct{ line, code string }{
		// Reports.
		{"[PID: 2103452] 2025-11-03-20:18:46.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): Failed", "EI0011"},
		{"EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out.", "EI0006"},
		{"EI0005: 2024-04-24-06:32:27.781.599 The arguments for collective communication are inconsistent", "EI0005"},
		{"RuntimeError: EI0007: [PID: 1] 2025-04-08-18:07:20.444.436 Failed to allocate resource", "EI0007"},
		{"[rank1]: EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error.", "EI0009"},
		{"  EL0004: [PID: 3132] 2025-10-15-16:32:16.417.528 Failed to allocate memory.", "EL0004"},
		{"Resource Error Insufficient Device Memory(EI0011):x", "EI0011"},
		{"[PID:2103452]2025-11-03-20:18:46.447.213 Title(EI0019):Failed", "EI0019"},
		{"[PID: 591] 2026-04-30-03:58:27.508.178 Invalid_Argument(EL0003): The argument is invalid.", "EL0003"},
		{"EL0004: [PID: 316198] 2025-09-28-07:22:29.827.496 Failed to allocate memory.", "EL0004"},
		{"EZ9999: Inner Error!", "EZ9999"},
		{"E10001: GE error", "E10001"},
		{"(Worker_TP8_EP8 pid=753) ERROR 04-30 03:58:27 [multiproc_executor.py:949] EI0011: [PID: 753] 2026-04-30-03:58:27.508.178 Failed", "EI0011"},
		{"(EngineCore_DP0 pid=96) [PID: 96] 2026-01-16-04:52:41.266.655 Allocation_Failure(EI0007): Failed to allocate resource[qp]", "EI0007"},
		{"torch.distributed.DistBackendError: EI0006: [PID: 1] 2025-04-08-18:07:20.444.436 Getting socket times out.", "EI0006"},
		// torch_npu's watchdog carries the only report of an EI0013
		// (vllm-ascend #7384), and libstdc++ repeats it after what():.
		{"[rank11]:[E313 06:55:06.502248200 compiler_depend.ts:1693] [Rank 1] HCCL watchdog thread terminated with exception: [PID: 335] 2026-03-13-06:55:06.896.485 Execution_Error_ROCE_CQE(EI0013): An error CQE occurred during operator execution.", "EI0013"},
		{"  what():  [Rank 1] HCCL watchdog thread terminated with exception: [PID: 335] 2026-03-13-06:55:06.896.485 Execution_Error_ROCE_CQE(EI0013): An error CQE occurred", "EI0013"},
		// The untitled report since Dec 2025 (vllm-ascend #5493).
		{"EH9999[PID: 366] 2025-12-29-13:22:34.092.455 (EH9999):  [Query][Status]query event recorded status failed, runtime result = 507014", "EH9999"},
		{"EZ9999[PID: 359] 2025-12-29-13:22:34.252.439 (EZ9999):  [AIC_INFO] after execute:args print end", "EZ9999"},
		// aclGetRecentErrMsg() as tools print it (PTOAS ACL_CHECK), with
		// the message CANN's documentation shows it returning.
		{"[ERROR] RecentErrMsg: [PID:646612] 2026-01-24-11:53:44.671.727 AclNN_Parameter_Error(EZ1001): Expected a proper Tensor but got null for argument addmmTennsor.self.", "EZ1001"},
		{"[ERROR] RecentErrMsg: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out.", "EI0006"},
		// vLLM's logger before its file name had brackets (vllm-ascend #516).
		{"(NPURayWorkerWrapper pid=13319, ip=10.240.34.141) ERROR 04-14 19:53:35 worker_base.py:581] EK9999: [PID: 13319] 2025-04-14-19:47:39.308.705 Failed to drvGetPlatformInfo, ret=4", "EK9999"},
		{"(NPURayWorkerWrapper pid=13319, ip=10.240.34.141) ERROR 04-14 19:53:35 worker_base.py:581] EK9999: Inner Error! [repeated 3x across cluster]", "EK9999"},
		// Mentions, not reports.
		{"[rank7]:[E1229 13:22:34.138773119 compiler_depend.ts:1675] [Rank 7] HCCL watchdog thread terminated with exception:", ""},
		{"[rank1]:[E324 13:00:25.429344265 compiler_depend.ts:1020] [Rank 1] HCCL watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkHCCL(SeqNum=196, OpType=ALLREDUCE, Timeout(ms)=3600000) ran for 3600185 milliseconds before timing out.", ""},
		{"[ERROR] 2025-12-29-13:22:34 (PID:366, Device:7, RankID:-1) ERR02005 DIST internal error", ""},
		{"EH9999[PID: 366] 2025-12-29-13:22:34.092.455 (EZ9999): mismatched codes", ""},
		{"EH9999[PID: 366] (EH9999): no time", ""},
		{"[E313 no digits after] EI0011: x", ""},
		{"[ERROR] EI0011: not the RecentErrMsg prefix", ""},
		{`+ echo "check the screen log for EI0011: out of memory"`, ""},
		{"grep -r 'EI0011:' /var/log/train", ""},
		{"INFO: retrying after EI0006: socket timeout on rank 3", ""},
		{"[E OpParamMaker.cpp:273] call failed, detail:EZ9999: Inner Error!", ""},
		{"2025-11-03 20:18:46 | step 10 | saw EI0011: earlier", ""},
		{"[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed", ""},
		{"[PID: 12] not-a-time Title(EI0011): x", ""},
		{"[PID: x] 2025-11-03 Title(EI0011): x", ""},
		{"Some text, then Title(EI0011): x", ""},
		{"(no pid here) EI0011: x", ""},
		{"W11001: a warning", ""},
		{"0xEI0011: hex", ""},
		{"XEI0011) no paren", ""},
		{"EI0011 without colon", ""},
		{"EH9999  [Init][Env]init env failed!", ""},
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

func TestIsHCCLCode(t *testing.T) {
	for code, want := range map[string]bool{"EI0011": true, "EJ0003": true, "EL0004": false, "EZ9999": false, "EE1001": false, "E89999": false, "EI001": false} {
		if got := IsHCCLCode([]byte(code)); got != want {
			t.Errorf("IsHCCLCode(%s) = %v", code, got)
		}
	}
}

func TestMentions(t *testing.T) {
	for _, tc := range []struct {
		line       string
		hccl, comm bool
	}{
		{"[PID: 4906] 2026-06-06-12:17:01.267.772 Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by HCCL module.", true, false},
		{"        Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl module. ret = 2,", true, false},
		{"EL0004: [PID: 3132] 2025-10-15-16:32:16.417.528 Failed to allocate memory.", false, false},
		{"RuntimeError: aclnnMoeDistributeDispatchV2 failed, error code is 507014", false, true},
		{"[Error]: vector core timeout. error code is 507034", false, true},
		{"error code is 507014 in MatMul", false, false},
	} {
		if got := MentionsHCCLAllocation([]byte(tc.line)); got != tc.hccl {
			t.Errorf("MentionsHCCLAllocation(%q) = %v", tc.line, got)
		}
		if got := MentionsCommKernelTimeout([]byte(tc.line)); got != tc.comm {
			t.Errorf("MentionsCommKernelTimeout(%q) = %v", tc.line, got)
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
		// Since HCOMM f52cf295b0 (2026-03-03, error_code.cc): no brackets; the
		// arguments of adapter_hccp.cc, transport_ibverbs.cc and adapter_rts.cc.
		{"EI0007: [PID: 7301] 2026-08-15-10:00:00.000.000 Failed to allocate resource qp with info CreateOneQp. Reason: Resources are exhausted.", ResourceQP},
		{"[PID: 7301] 2026-08-15-10:00:00.000.000 Resource_Error(EI0007): Failed to allocate resource qp with info CreateQp. Reason: Resources are exhausted.", ResourceQP},
		{"EI0007: [PID: 7301] x Failed to allocate resource DeviceMemory with info Malloc, size:2147483648 bytes. Reason: Resources are exhausted.", ResourceDeviceMemory},
		{"EI0007: [PID: 7301] x Failed to allocate resource HostMemory with info MallocHost, size:64 bytes. Reason: Resources are exhausted.", ResourceHostMemory},
		{"EI0007: [PID: 7301] x Failed to allocate resource stream with info StreamCreateWithFlags, streamType:0. Reason: Resources are exhausted.", ResourceOther},
		{"EI0007: [PID: 7301] x Failed to allocate resource  with info . Reason: Resources are exhausted.", ""},
		{"EI0007: [PID: 7301] x Failed to allocate resource qp", ""},
		// hrtRaTypicalQpModify (adapter_hccp.cc:224-227): RPT_ENV_ERR("EI0007",
		// {"qp", "ModifyQp"}), a QP state change that failed, in both wordings.
		{"EI0007: [PID: 7301] 2025-09-28-10:00:00.000.000 Failed to allocate resource[qp] with info [ModifyQp]. Reason: Memory resources are exhausted.", ResourceQPState},
		{"EI0007: [PID: 7301] 2026-08-15-10:00:00.000.000 Failed to allocate resource qp with info ModifyQp. Reason: Resources are exhausted.", ResourceQPState},
	}
	for _, tc := range tests {
		if got := ScreenResource([]byte(tc.line)); got != tc.want {
			t.Errorf("ScreenResource(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}
