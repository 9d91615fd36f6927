// Command gen writes a deterministic hccl_exporter node fixture: the
// `npu-smi info` table of an Atlas A3-style node (with an executable fake
// npu-smi printing it), a CANN log root with one plog per process and,
// optionally, a training screen log with fault reports. The defaults are the
// worst-case node of docs/scale.md: 16 NPUs × 2 dies, 64 processes, 8
// communicators each.
//
//	go run ./bench/gen -out /tmp/node
//	hccl_exporter --npusmi.path=/tmp/node/npu-smi --cannlog.root=/tmp/node/log \
//	    --cannlog.screen-log-path='/tmp/node/screen/*.log'
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hccl-exporter/hccl_exporter/bench/gen/nodegen"
)

func main() {
	d := nodegen.DefaultSpec()
	var s nodegen.Spec
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.IntVar(&s.NPUs, "npus", d.NPUs, "NPUs (N)")
	fs.IntVar(&s.ChipsPerNPU, "chips", d.ChipsPerNPU, "chips (dies) per NPU: 2 on Atlas A3, 1 on A2")
	fs.IntVar(&s.Processes, "procs", d.Processes, "training processes (P), spread round-robin over the chips")
	fs.IntVar(&s.Communicators, "comms", d.Communicators, "communicators per process (C)")
	fs.IntVar(&s.Servers, "servers", 8, "serverNum of the world communicator (nodes in the job)")
	fs.IntVar(&s.FaultCodes, "codes", 0, fmt.Sprintf("distinct fault codes in the screen log (K): the %d catalog codes first, then made-up ones; 0 writes no screen log", nodegen.CatalogCodes()))
	fs.IntVar(&s.EventsPerCode, "events", 1, "reports of each fault code")
	fs.IntVar(&s.NoiseLines, "noise", 20, "INFO lines of other modules per plog")
	fs.IntVar(&s.QPsPerConnection, "qps", 0, "HCCL_RDMA_QPS_PER_CONNECTION (0: HCCL's default, printed as a default)")
	fs.IntVar(&s.BuffsizeMB, "buffsize", 0, "HCCL_BUFFSIZE in MB (0: HCCL's default, printed as a default)")
	fs.IntVar(&s.PIDBase, "pid-base", 300001, "pid of the first process")
	seed := fs.Uint64("seed", d.Seed, "seed of every random choice; same flags and seed, same bytes")
	out := fs.String("out", "", "output directory (required; created)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./bench/gen -out DIR [flags]\n\nWrites DIR/npu-smi-info.txt, DIR/npu-smi, DIR/log/run/plog/*.log and DIR/screen/train.log.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		os.Exit(2)
	}
	s.Seed = *seed
	n, err := nodegen.New(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tr, err := n.WriteTree(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := n.Counts()
	fmt.Printf("wrote %s: %d chips, %d processes, %d communicators, %d fault codes (%d in the catalog); %d files, %d bytes\n",
		tr.Dir, c.Chips, c.Processes, c.Communicators, c.FaultCodes, c.CatalogFaultCodes, tr.Files, tr.Bytes)
	fmt.Printf("run: hccl_exporter --npusmi.path=%s --cannlog.root=%s", tr.NPUSMI, tr.LogRoot)
	if tr.ScreenLog != "" {
		fmt.Printf(" --cannlog.screen-log-path=%s", tr.ScreenLog)
	}
	fmt.Println()
}
