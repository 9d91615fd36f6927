package parse

import "testing"

var infoLine = []byte("[INFO] HCCL(3015875,python):2025-03-07-11:43:32.305.623 [hccl_opbase_atrace_info.cc:56][3017221]Entry-HcclAllReduce: tag[AllReduce_127.10.0.1%eth_60000_0_1741318944927847], sendBuf[0x1241d3dcdc00], recvBuf[0x124702f40200], count[10746295], dataType[float32], op[sum], localRank[0], streamId[7],comm[0xfffe380078d0], deviceLogicId[0]")

func BenchmarkParsePlogInfo(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(infoLine)))
	var p PlogLine
	for b.Loop() {
		if !ParsePlog(infoLine, &p) {
			b.Fatal("not parsed")
		}
	}
}

func BenchmarkFindFaultCodeMiss(b *testing.B) {
	line := []byte("2025-11-03 20:18:46 | INFO | step 1200/50000 | loss: 2.3456 | lr: 0.0001 | grad_norm: 1.234 | tokens/s: 12345")
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if c, _ := FindFaultCode(line); c != nil {
			b.Fatal("false code")
		}
	}
}

func TestParsePlogNoAlloc(t *testing.T) {
	var p PlogLine
	if n := testing.AllocsPerRun(100, func() { ParsePlog(infoLine, &p); ParsePlogTime(p.Time, nil); FindFaultCode(infoLine) }); n != 0 {
		t.Errorf("hot-path parsing allocates %v times per line", n)
	}
}
