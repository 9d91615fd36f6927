package parse

import (
	"reflect"
	"testing"
)

func TestParseHCCLEnv(t *testing.T) {
	tests := []struct {
		msg  string
		want []EnvSetting
	}{
		{"[1595259][HCCL_ENV] HCCL_CONNECT_TIMEOUT set by default to [120]s",
			[]EnvSetting{{"HCCL_CONNECT_TIMEOUT", "120", "s", SetByDefault}}},
		{"[HCCL_ENV] HCCL_EXEC_TIMEOUT set by environment to [3600.00]s",
			[]EnvSetting{{"HCCL_EXEC_TIMEOUT", "3600.00", "s", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_EXEC_TIMEOUT set by GE option to [1200.50]s",
			[]EnvSetting{{"HCCL_EXEC_TIMEOUT", "1200.50", "s", SetByGEOption}}},
		{"[HCCL_ENV] HCCL_INTRA_PCIE_ENABLE set by default to [1], HCCL_INTRA_ROCE_ENABLE set by default to [0]",
			[]EnvSetting{{"HCCL_INTRA_PCIE_ENABLE", "1", "", SetByDefault}, {"HCCL_INTRA_ROCE_ENABLE", "0", "", SetByDefault}}},
		{"[HCCL_ENV] HCCL_INTRA_PCIE_ENABLE set by environment to [0], HCCL_INTRA_ROCE_ENABLE set by environment to [1]",
			[]EnvSetting{{"HCCL_INTRA_PCIE_ENABLE", "0", "", SetByEnvironment}, {"HCCL_INTRA_ROCE_ENABLE", "1", "", SetByEnvironment}}},
		{"[HCCL_ENV] environmental variable PROFILING_MODE and GE profiling option is not set, default: false",
			[]EnvSetting{{"PROFILING_MODE", "false", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_WHITELIST_DISABLE set by environment to [0]",
			[]EnvSetting{{"HCCL_WHITELIST_DISABLE", "0", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_WHITELIST_FILE set by environment to [/etc/hccl.json], realpath[/etc/hccl.json].",
			[]EnvSetting{{"HCCL_WHITELIST_FILE", "/etc/hccl.json", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_IF_IP is not set", []EnvSetting{{"HCCL_IF_IP", "", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_IF_IP is set to [10.0.0.1], ip[10.0.0.1].", []EnvSetting{{"HCCL_IF_IP", "10.0.0.1", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_SOCKET_IFNAME set by default to [EmptyString]", []EnvSetting{{"HCCL_SOCKET_IFNAME", "EmptyString", "", SetByDefault}}},
		{"[HCCL_ENV] HCCL_SOCKET_FAMILY is not set and is used by default [AF_INET]", []EnvSetting{{"HCCL_SOCKET_FAMILY", "AF_INET", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_BUFFSIZE set by environment to [1]M", []EnvSetting{{"HCCL_BUFFSIZE", "1", "M", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_BUFFSIZE set by default to [200]M", []EnvSetting{{"HCCL_BUFFSIZE", "200", "M", SetByDefault}}},
		{"[HCCL_ENV] HCCL_DETERMINISTIC set by environment to [true], hcclDeterministic[1]",
			[]EnvSetting{{"HCCL_DETERMINISTIC", "true", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_INTER_HCCS_DISABLE is not set, default value is FALSE.",
			[]EnvSetting{{"HCCL_INTER_HCCS_DISABLE", "FALSE", "", SetByUnset}}},
		{"[HCCL_ENV] environmental variable HCCL_INTER_HCCS_DISABLE is set to [TRUE], interHccsDisable[1]",
			[]EnvSetting{{"HCCL_INTER_HCCS_DISABLE", "TRUE", "", SetByEnvironment}}},
		{"[HCCL_ENV] environmental variable HCCL_OP_EXPANSION_MODE is [HOST], aicpuUnfold[0], aivMode[0], enableFfts[1]",
			[]EnvSetting{{"HCCL_OP_EXPANSION_MODE", "HOST", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_OP_EXPANSION_MODE is not set, aicpuUnfold is [0], aivMode is [0]",
			[]EnvSetting{{"HCCL_OP_EXPANSION_MODE", "", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]",
			[]EnvSetting{{"HCCL_RDMA_QPS_PER_CONNECTION", "1", "", SetByDefault}}},
		{"[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [16]",
			[]EnvSetting{{"HCCL_RDMA_QPS_PER_CONNECTION", "16", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_MULTI_QP_THRESHOLD is set to default value [512]KB",
			[]EnvSetting{{"HCCL_MULTI_QP_THRESHOLD", "512", "KB", SetByDefault}}},
		{"[HCCL_ENV] environmental variable HCCL_MULTI_QP_THRESHOLD is set to [1024]KB",
			[]EnvSetting{{"HCCL_MULTI_QP_THRESHOLD", "1024", "KB", SetByEnvironment}}},
		{"[1595259][HCCL_ENV][ParseRetryEnable] HCCL_OP_RETRY_ENABLE set by environment variable to [L0:0,L1:0,L2:0].",
			[]EnvSetting{{"HCCL_OP_RETRY_ENABLE", "L0:0,L1:0,L2:0", "", SetByEnvironment}}},
		{"[HCCL_ENV][ParseRetryEnable] HCCL_OP_RETRY_ENABLE is not set. Default value is used.",
			[]EnvSetting{{"HCCL_OP_RETRY_ENABLE", "", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_OP_RETRY_PARAMS is not set, default value MaxCnt is [1], HoldTime is [5000]ms, IntervalTime is [1000]ms",
			[]EnvSetting{{"HCCL_OP_RETRY_PARAMS", "", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_LOGIC_SUPERPOD_ID set by environment to [0]", []EnvSetting{{"HCCL_LOGIC_SUPERPOD_ID", "0", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_LOGIC_SUPERPOD_ID is not set, default value[]", []EnvSetting{{"HCCL_LOGIC_SUPERPOD_ID", "", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_RDMA_PCIE_DIRECT_POST_NOSTRICT set by default to [EmptyString], rdmaFastPost is [0]",
			[]EnvSetting{{"HCCL_RDMA_PCIE_DIRECT_POST_NOSTRICT", "EmptyString", "", SetByDefault}}},
		{"[1595259][HCCL_ENV][Parse][MultiQpSrcPortConfigPath]environmental variable HCCL_RDMA_QP_PORT_CONFIG_PATH is empty",
			[]EnvSetting{{"HCCL_RDMA_QP_PORT_CONFIG_PATH", "", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_DEBUG_CONFIG is not set, debugConfig set by default to 0x0",
			[]EnvSetting{{"HCCL_DEBUG_CONFIG", "0x0", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_DEBUG_CONFIG[ALG], set debugConfig[0x1]", []EnvSetting{{"HCCL_DEBUG_CONFIG", "ALG", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_ALGO set by environment to [level0:NA;level1:H-D_R]", []EnvSetting{{"HCCL_ALGO", "level0:NA;level1:H-D_R", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_ALGO is not set", []EnvSetting{{"HCCL_ALGO", "", "", SetByUnset}}},
		{"[HCCL_ENV] HCCL_HOST_SOCKET_PORT_RANGE is not set. Multi-process will not be supported!",
			[]EnvSetting{{"HCCL_HOST_SOCKET_PORT_RANGE", "", "", SetByUnset}}},
		{"[HCCL_ENV][Parse] HCCL_DFS_CONFIG cluster_heartbeat set by environment to [1], stuck_detection set by environment to [1]", nil},
		// Older CANN without the tag.
		{"[1234]HCCL_CONNECT_TIMEOUT set by environment to [300]", []EnvSetting{{"HCCL_CONNECT_TIMEOUT", "300", "", SetByEnvironment}}},
		{"HCCL_BUFFSIZE set by default to [200]", []EnvSetting{{"HCCL_BUFFSIZE", "200", "", SetByDefault}}},
		{"[Init] rdmaTimeOut HCCL_RDMA_TIMEOUT set by environment to [18]", []EnvSetting{{"HCCL_RDMA_TIMEOUT", "18", "", SetByEnvironment}}},
		{"HCCL_IF_IP is set to [1.2.3.4], ip[1.2.3.4].", []EnvSetting{{"HCCL_IF_IP", "1.2.3.4", "", SetByEnvironment}}},
		{"environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [4]",
			[]EnvSetting{{"HCCL_RDMA_QPS_PER_CONNECTION", "4", "", SetByEnvironment}}},
		{"HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]",
			[]EnvSetting{{"HCCL_RDMA_QPS_PER_CONNECTION", "1", "", SetByDefault}}},
		{"[Init] rdmaTimeOut HCCL_RDMA_TIMEOUT is set to [18]", nil}, // further in: only "set by"
		// 2023 [EVENT] lines.
		{"environmental variable HCCL_CONNECT_TIMEOUT is set, timeOut[600]",
			[]EnvSetting{{"HCCL_CONNECT_TIMEOUT", "600", "s", SetByEnvironment}}},
		{"ExecTimeOut is set to timeOut[120]", []EnvSetting{{"HCCL_EXEC_TIMEOUT", "120", "s", SetByEnvironment}}},
		{"timeout set by user to [3]", nil},
		// Ascend 950.
		{`[Init][EnvVarParam]Env config "HCCL_BUFFSIZE" is not set. Default value is used.`, []EnvSetting{{"HCCL_BUFFSIZE", "", "", SetByUnset}}},
		{`[Init][EnvVarParam]Env config "HCCL_BUFFSIZE" is parsed.`, []EnvSetting{{"HCCL_BUFFSIZE", "", "", SetByEnvironment}}},
		{"[HCCL_ENV] HCCL_BUFFSIZE set by environment to [1", nil},
		{"[HCCL_ENV]", nil},
		{"", nil},
	}
	for _, tc := range tests {
		got := ParseHCCLEnv([]byte(tc.msg))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseHCCLEnv(%q)\n got %+v\nwant %+v", tc.msg, got, tc.want)
		}
	}
}

func TestIsEnvLine(t *testing.T) {
	for msg, want := range map[string]bool{
		"[1][HCCL_ENV] X set by default to [1]":                            true,
		"X set by environment to [1]":                                      true,
		"HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]":         true,
		"environmental variable HCCL_CONNECT_TIMEOUT is set, timeOut[600]": true,
		"ExecTimeOut is set to timeOut[120]":                               true,
		`[Init][EnvVarParam]Env config "X" is parsed.`:                     true,
		"[1]Entry-HcclAllReduce: tag[AllReduce_1]":                         false,
	} {
		if got := IsEnvLine([]byte(msg)); got != want {
			t.Errorf("IsEnvLine(%q) = %v", msg, got)
		}
	}
}
