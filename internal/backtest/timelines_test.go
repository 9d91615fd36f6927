package backtest

import "time"

// Timeline is one scripted job on one node, in simulated time.
//
// To add one: append a row to timelines below. Events run in order at
// their simulated time (At); a failure event calls node.EI0011 or
// node.EI0007QP, which records the failure time (a job may fail more than
// once: the first failure is the one the lead is measured against, or the
// one FailureIndex names).
// node.Screen writes any other screen-log line, node.PlogModule any plog
// line. Silent timelines must
// raise no alert at all; the others must raise Preventive before their
// first failure, at least MinLead (simulated) before it, with no other
// alert before it.
type Timeline struct {
	Name string
	// Duration is the simulated length; the exporter keeps running until
	// then.
	Duration time.Duration
	// Silent: no alert may fire on this timeline.
	Silent bool
	// Preventive is the alert that must fire before the first failure;
	// MinLead the least simulated lead it must have.
	Preventive string
	MinLead    time.Duration
	// Allowed are alerts the script provokes on purpose besides (advice
	// on a setting it uses); they may fire at any time.
	Allowed []string
	// FailureIndex is the failure the lead is measured against (0: the
	// first); alerts before the failure preceding it are not read, so a
	// restarted process is judged on its own run.
	FailureIndex int
	// Pod, "namespace/pod", makes a fake kubelet assign the node's chip to
	// that pod (alerts then carry namespace and pod); "" runs without one.
	Pod    string
	Events []Event
}

// Event is one scripted step.
type Event struct {
	At time.Duration // simulated time since the timeline started
	Do func(n *node)
}

// Operator tags as HCOMM builds them (newTag: <Op>_<identifier> + level-1
// name + algName + "_host", all_reduce_operator.cc:141-169,
// alltoall_operator.cc:353-363): the AllReduce executors 910B's op-base
// selector picks on a multi-server mesh, and the default 910B AlltoAll.
func mesh(id string) string { return "AllReduce_" + id + "NHRAllReduceMeshExecutor_host" }
func pipeline(id string) string {
	return "AllReduce_" + id + "pipelineAllReduceMeshOpbasePipelineExecutor_host"
}
func smallCount(id string) string {
	return "AllReduce_" + id + "H-DAllReduceMeshOpbaseSmallCountDeterministicExecutor_host"
}
func alltoall(id string) string { return "ALLTOALL_" + id + "RunAlltoAllVStagedBCopy_host" }

// minute is one simulated minute.
const minute = time.Minute

// at is shorthand for an event at m simulated minutes.
func at(m float64, do func(n *node)) Event {
	return Event{At: time.Duration(m * float64(minute)), Do: do}
}

// The scripted jobs: one rank (rank 0) of each job runs on the node's chip,
// a 910B3 with 65536 MiB of HBM. Lead requirements: the held-out
// pending-then-OOM timeline must warn at least (time from the chip filling
// to the failing link setup) − one scrape − one rule evaluation before the
// failure (the backtest's scrape 1 min and evaluation 6 s, simulated); the
// check also allows the exporter's longest scrape of the run, since a
// sample shows the node as it was at some point of its scrape (on a busy
// 2-core test machine up to half a real second, 30 s simulated; against a
// 1 min scrape in production it is negligible).
var timelines = []Timeline{
	{
		Name: "healthy", Duration: 10 * minute, Silent: true,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(20000); n.Start(1001, 1, 200) }),
			at(0.5, func(n *node) { n.Comm(1001, "w", 64, 8) }),
			at(2, func(n *node) {
				n.CCLBuffer(1001, 200)
				n.Links(1001, mesh("w"), 7, peers(8, 56, 8), 1) // one plane: the rank of device 0 of each other server
				n.SetHBM(20500)
			}),
		},
	},
	{
		// QPS 8: every plane link and every AllReduce executor's set up
		// (mesh, small count, pipeline), then the chip fills to 99.9 %:
		// nothing is ahead, however full.
		Name: "set up then full", Duration: 12 * minute, Silent: true,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(30000); n.Start(1002, 8, 200) }),
			at(0.5, func(n *node) { n.Comm(1002, "w", 64, 8) }),
			at(2, func(n *node) {
				n.CCLBuffer(1002, 200)
				n.Links(1002, mesh("w"), 7, peers(8, 56, 8), 9)
				// Its scalar reductions' small-count set (H-D over 8
				// servers) and the large ones' pipeline set.
				n.Links(1002, smallCount("w"), 0, []int{8, 16, 32}, 9)
				n.Links(1002, pipeline("w"), 0, []int{8, 56}, 9)
				n.SetHBM(31000)
			}),
			at(4, func(n *node) { n.SetHBM(65500) }),
		},
	},
	{
		// 128 ranks on 16 servers, QPS 8 (9 QPs of 1.5 MiB per link), the
		// AllReduce mesh executor's NHR set (7 peers over 16 servers)
		// linked 2 peers so far; the chip is 97 % full (1966 MiB free).
		// Expected ahead: the 5 other NHR peers and the small-count set's
		// 4 H-D peers, 9 × 9 × 1.5 MiB = 121.5 MiB, fits. The worst case
		// (118 peers × 9 QPs × 3 MiB = 3186 MiB) did not: the first model's
		// rule warned here for the whole hour.
		Name: "AllReduce-only, 128 ranks, 97% chip, 1 h", Duration: 60 * minute, Silent: true,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(63570); n.Start(1003, 8, 200) }),
			at(0.5, func(n *node) { n.Comm(1003, "w128", 128, 16) }),
			at(1, func(n *node) {
				n.CCLBuffer(1003, 200)
				n.Links(1003, mesh("w128"), 7, []int{8, 120}, 9)
			}),
		},
	},
	{
		// Held out: a communicator is created (its first link set, NHR's 5
		// peers over 8 servers × 9 QPs of unknown mode — multi-QP QPs,
		// 1.5 MiB: 67.5 MiB — + its 401 MiB cclBuffer ahead), the chip
		// fills at 3 min to 436 MiB free, its first collective fails at 6
		// min.
		Name: "pending then OOM", Duration: 8 * minute, Preventive: "NPULinkSetupHeadroomLow", Pod: "train/llm-0",
		MinLead: 3*minute - minute - 6*time.Second,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(30000); n.Start(1004, 8, 200) }),
			at(1, func(n *node) { n.Comm(1004, "w", 64, 8) }),
			at(3, func(n *node) { n.SetHBM(65100) }),
			at(6, func(n *node) { n.EI0011(1004) }),
			at(6.5, func(n *node) { n.Stop(1004); n.SetHBM(3000) }),
		},
	},
	{
		// vLLM: an expert-parallel AlltoAll warm-up (120 remote ranks, 1 QP
		// each), the KV cache fills the chip (56 MiB free), then the first
		// ACL graph capture re-creates the 120 links as offload QPs (QPMode::
		// OFFLOAD, 264 KiB each: 31 MiB): 25 MiB are left, less than the
		// next capture needs, which fails 1.3 minutes later, 1.5 after the
		// KV cache filled the chip. Before the first
		// capture nothing says the process will capture; after it, the
		// warning can lead by the time to the next capture less one scrape
		// (a failure within a scrape of the first capture cannot be warned
		// about: here the "within a minute" is stretched by 18 s).
		Name: "vLLM: KV cache, capture, OOM", Duration: 6 * minute, Preventive: "NPULinkSetupHeadroomLow",
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(10000); n.Start(1005, 1, 200) }),
			at(0.5, func(n *node) { n.Comm(1005, "ep", 128, 16) }),
			at(1, func(n *node) {
				n.CCLBuffer(1005, 200)
				n.Links(1005, alltoall("ep"), 7, peers(8, 127, 1)[:120], 1)
				n.SetHBM(12000)
			}),
			at(3, func(n *node) { n.SetHBM(65480) }),
			at(3.2, func(n *node) { n.Links(1005, alltoall("ep")+"_Capture", 0, peers(8, 127, 1)[:120], 1); n.SetHBM(65511) }),
			at(4.5, func(n *node) { n.EI0011(1005) }),
			at(4.8, func(n *node) { n.Stop(1005); n.SetHBM(3000) }),
		},
	},
	{
		// A process holds 8085 QPs (245 peers × 33, QPS 32, after an
		// AlltoAll); a second communicator's first link set needs NHR's 5
		// peers × 33 = 165 more: past
		// HCCP's 8192, with 45 GiB of HBM free. It fails with EI0007
		// resource[qp].
		Name: "QP slots exhausted, HBM free", Duration: 6 * minute, Preventive: "NPUQueuePairSlotsExhausted",
		MinLead: 2*minute - minute - 6*time.Second,
		// QPS 32 is above the recommended 8: that advice is right here.
		Allowed: []string{"HCCLQPsPerConnectionAboveRecommended"},
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(20000); n.Start(1006, 32, 200) }),
			at(0.5, func(n *node) { n.Comm(1006, "big", 256, 32) }),
			at(1, func(n *node) {
				n.CCLBuffer(1006, 200)
				n.Links(1006, alltoall("big"), 7, peers(8, 252, 1), 33)
			}),
			at(2, func(n *node) { n.Comm(1006, "moe", 64, 8) }),
			at(4, func(n *node) { n.EI0007QP(1006) }),
			at(4.5, func(n *node) { n.Stop(1006); n.SetHBM(3000) }),
		},
	},
	{
		// The first link set on a 99 % chip (issue 36): QPS 8, a 64-rank
		// communicator over 8 servers, nothing linked yet, 578 MiB free.
		// Its first link set is the default level-1 algorithm's — NHR over
		// 8 servers, 5 peers × 9 QPs of unknown mode (multi-QP: 1.5 MiB) =
		// 67.5 MiB — plus the 401 MiB cclBuffer: 109.5 MiB to spare, silent.
		// Then the set is made (HBM +536 MiB, 42 MiB free): the small-count
		// set its scalar reductions will create (3 H-D peers × 9 × 1.5 MiB
		// = 40.5 MiB, op-base now known) fits.
		Name: "first link set on a 99% chip fits", Duration: 8 * minute, Silent: true,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(60000); n.Start(1010, 8, 200) }),
			at(0.5, func(n *node) { n.Comm(1010, "w", 64, 8) }),
			at(1, func(n *node) { n.SetHBM(64958) }),
			at(4, func(n *node) {
				n.CCLBuffer(1010, 200)
				n.Links(1010, mesh("w"), 7, peers(8, 56, 8)[:5], 9)
				n.SetHBM(65494)
			}),
		},
	},
	{
		// A later executor's link set (issue 36): the job's AllReduce
		// linked its mesh executor's NHR set; the chip then fills to 16 MiB
		// free, less than the small-count executor's set its first scalar
		// reduction creates (a new tag, new QPs to 3 H-D peers: 3 × 9 ×
		// 1.5 MiB = 40.5 MiB), which fails 3 minutes later.
		Name: "a later algorithm's link set does not fit", Duration: 8 * minute, Preventive: "NPULinkSetupHeadroomLow",
		MinLead: 3*minute - minute - 6*time.Second,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(30000); n.Start(1011, 8, 200) }),
			at(0.5, func(n *node) { n.Comm(1011, "w", 64, 8) }),
			at(1, func(n *node) {
				n.CCLBuffer(1011, 200)
				n.Links(1011, mesh("w"), 7, peers(8, 56, 8)[:5], 9)
				n.SetHBM(31000)
			}),
			at(3, func(n *node) { n.SetHBM(65520) }),
			at(6, func(n *node) { n.EI0011(1011) }),
			at(6.5, func(n *node) { n.Stop(1011); n.SetHBM(3000) }),
		},
	},
	{
		// MC2 (MoE dispatch/combine, issue 36): its first link set (tag
		// "<identifier><opType>_mc2", op_base_mc2.cc) links 8 of the 56
		// remote ranks so far; every remote rank is expected, 48 × 3 MiB =
		// 144 MiB more. The chip fills to 100 MiB free at 3 min; the MC2
		// link setup fails at 6.
		Name: "MC2 links every remote rank", Duration: 8 * minute, Preventive: "NPULinkSetupHeadroomLow",
		MinLead: 3*minute - minute - 6*time.Second,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(30000); n.Start(1012, 1, 200) }),
			at(0.5, func(n *node) { n.Comm(1012, "ep", 64, 8) }),
			at(1, func(n *node) {
				n.CCLBuffer(1012, 200)
				n.Links(1012, "ep8_mc2", 7, peers(8, 56, 1)[:8], 1)
				n.SetHBM(31000)
			}),
			at(3, func(n *node) { n.SetHBM(65436) }),
			at(6, func(n *node) { n.EI0011(1012) }),
			at(6.5, func(n *node) { n.Stop(1012); n.SetHBM(3000) }),
		},
	},
	{
		// MC2 set up: every remote rank linked, then the chip fills to 99.9 %:
		// nothing is ahead, silent.
		Name: "MC2 set up then full", Duration: 8 * minute, Silent: true,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(30000); n.Start(1013, 1, 200) }),
			at(0.5, func(n *node) { n.Comm(1013, "ep", 64, 8) }),
			at(1, func(n *node) {
				n.CCLBuffer(1013, 200)
				n.Links(1013, "ep8_mc2", 7, peers(8, 56, 1), 1)
				n.SetHBM(31000)
			}),
			at(3, func(n *node) { n.SetHBM(65500) }),
		},
	},
	{
		// An ACL graph capture of an AllReduce (issue 36): HCOMM tags it
		// "…_Capture" (hccl_communicator_host.cc:4657) and creates its links
		// as offload QPs, one per link at 264 KiB (128 / 8192 depths), not
		// N + 1 at 3 MiB. A 128-rank job over 16 servers (mesh NHR 7 peers,
		// pipeline and small-count sets linked too) captures at 2 min; the
		// next capture needs 7 × 264 KiB = 1.8 MiB.
		// The chip fills to 1 MiB free at 3 min; the next capture fails at
		// 5.5.
		Name: "capture: offload QPs of the next capture", Duration: 8 * minute, Preventive: "NPULinkSetupHeadroomLow",
		MinLead: 150*time.Second - minute - 6*time.Second,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(30000); n.Start(1014, 1, 200) }),
			at(0.5, func(n *node) { n.Comm(1014, "tp", 128, 16) }),
			at(1, func(n *node) {
				n.CCLBuffer(1014, 200)
				n.Links(1014, mesh("tp"), 7, peers(8, 120, 8)[:7], 1)
				n.Links(1014, pipeline("tp"), 0, peers(8, 120, 8)[:2], 1)
				n.Links(1014, smallCount("tp"), 0, []int{8, 16, 32, 64}, 1)
				n.SetHBM(31000)
			}),
			at(2, func(n *node) { n.Links(1014, mesh("tp")+"_Capture", 0, peers(8, 120, 8)[:7], 1) }),
			at(3, func(n *node) { n.SetHBM(65535) }),
			at(5.5, func(n *node) { n.EI0011(1014) }),
			at(6, func(n *node) { n.Stop(1014); n.SetHBM(3000) }),
		},
	},
	{
		// The same capture on a chip with 6 MiB free: the next capture's
		// 1.8 MiB of offload QPs fit (at the op-base size, 7 × 3 MiB, they
		// would not): silent.
		Name: "capture fits at the offload size", Duration: 8 * minute, Silent: true,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(30000); n.Start(1015, 1, 200) }),
			at(0.5, func(n *node) { n.Comm(1015, "tp", 128, 16) }),
			at(1, func(n *node) {
				n.CCLBuffer(1015, 200)
				n.Links(1015, mesh("tp"), 7, peers(8, 120, 8)[:7], 1)
				n.Links(1015, pipeline("tp"), 0, peers(8, 120, 8)[:2], 1)
				n.Links(1015, smallCount("tp"), 0, []int{8, 16, 32, 64}, 1)
				n.SetHBM(31000)
			}),
			at(2, func(n *node) { n.Links(1015, mesh("tp")+"_Capture", 0, peers(8, 120, 8)[:7], 1) }),
			at(3, func(n *node) { n.SetHBM(65530) }),
		},
	},
	{
		// Other components' errors and a text mention of a code (issue
		// 30): an operator's EZ9999, the runtime's EE1001 and a vector
		// operator's E89999 in CANN's report shapes, a CI step that echoes
		// "EI0011:", and an EL0004 the traceback does not tie to HCCL.
		// None is an HCCL fault: no alert, no page.
		Name: "other components' codes, a mention of EI0011", Duration: 6 * minute, Silent: true,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(30000); n.Start(1009, 1, 200) }),
			at(1, func(n *node) {
				n.Screen("EZ9999: [PID: 1009] " + cannTime(time.Now()) + " Op MatmulAllReduce has 1 uncontiguous input")
				n.Screen("[PID: 1009] " + cannTime(time.Now()) + " Runtime_Error(EE1001): The argument is invalid.")
			}),
			at(2, func(n *node) {
				n.Screen("E89999: [PID: 1009] " + cannTime(time.Now()) + " op AddCustom failed")
				n.Screen(`+ echo "grep the screen log for EI0011: out-of-memory QPs"`)
				n.Screen("INFO: see EI0011: in the runbook")
			}),
			at(3, func(n *node) {
				n.Screen("EL0004: [PID: 1009] " + cannTime(time.Now()) + " Failed to allocate memory.")
				n.Screen("        TraceBack (most recent call last):")
				n.Screen("        alloc device memory failed, runtime result = 207001")
			}),
			at(4, func(n *node) { n.Stop(1009); n.SetHBM(3000) }),
		},
	},
	{
		// A job restarts: its first process exits, a new one starts on the
		// 90 % chip and sets up again; what is ahead fits throughout.
		// QPS 8.
		Name: "restart", Duration: 10 * minute, Silent: true,
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(59000); n.Start(1007, 8, 200) }),
			at(0.5, func(n *node) { n.Comm(1007, "w", 64, 8) }),
			at(1, func(n *node) {
				n.CCLBuffer(1007, 200)
				n.Links(1007, mesh("w"), 7, peers(8, 56, 8), 9)
				n.SetHBM(60000)
			}),
			at(4, func(n *node) { n.Stop(1007); n.SetHBM(3000) }),
			at(4.5, func(n *node) { n.Start(1008, 8, 200); n.Comm(1008, "w2", 64, 8) }),
			at(5, func(n *node) { n.SetHBM(59000) }),
			at(6, func(n *node) {
				n.CCLBuffer(1008, 200)
				n.Links(1008, mesh("w2"), 7, peers(8, 56, 8), 9)
				n.SetHBM(60000)
			}),
		},
	},
	{
		// Workload memory (docs/headroom.md): a vLLM expert-parallel
		// server's profile run links every remote rank (AlltoAll, 120 QPs),
		// its KV cache leaves 20 MiB free, and its first ACL graph capture
		// re-creates the AlltoAll's link set as offload QPs (264 KiB each,
		// 31 MiB for 120): 75 QPs in, it fails with EI0011. Nothing before
		// the capture said it would capture: no warning is possible on this
		// first run. The server restarts in the same pod, with the same
		// model and settings: the workload memory expects the capture's 120
		// QPs from the new process's start, so when the KV cache fills the
		// chip again (8 min) the headroom is −11 MiB and the alert warns 2
		// minutes before the second capture fails (10 min), less the scrape
		// that sees the KV cache.
		Name: "vLLM restart after EI0011 at capture (workload memory)", Duration: 11 * minute, Preventive: "NPULinkSetupHeadroomLow",
		Pod: "serve/vllm-ep-7d9f8b6c5-x2k4q", FailureIndex: 1, MinLead: 2*minute - minute - 6*time.Second,
		// The first run's EI0011 is reported while the second runs.
		Allowed: []string{"HCCLQPMemoryAllocationFailed"},
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(10000); n.Start(1011, 1, 200) }),
			at(0.5, func(n *node) { n.Comm(1011, "ep", 128, 16) }),
			at(1, func(n *node) {
				n.CCLBuffer(1011, 200)
				n.Links(1011, alltoall("ep"), 7, peers(8, 127, 1)[:120], 1)
				n.SetHBM(12000)
			}),
			at(3, func(n *node) { n.SetHBM(65516) }),
			at(4, func(n *node) {
				n.Links(1011, alltoall("ep")+"_Capture", 0, peers(8, 127, 1)[:75], 1)
				n.SetHBM(65536)
				n.EI0011(1011)
				n.Stop(1011)
				n.SetHBM(3000)
			}),
			at(5, func(n *node) { n.SetHBM(10000); n.Start(1012, 1, 200); n.Comm(1012, "ep", 128, 16) }),
			at(6, func(n *node) {
				n.CCLBuffer(1012, 200)
				n.Links(1012, alltoall("ep"), 7, peers(8, 127, 1)[:120], 1)
				n.SetHBM(12000)
			}),
			at(8, func(n *node) { n.SetHBM(65516) }),
			at(10, func(n *node) {
				n.Links(1012, alltoall("ep")+"_Capture", 0, peers(8, 127, 1)[:75], 1)
				n.SetHBM(65536)
				n.EI0011(1012)
				n.Stop(1012)
				n.SetHBM(3000)
			}),
		},
	},
	{
		// The same memory on a dense job in a pod: it ran AllReduce only,
		// so its restart expects nothing more than its plane, and the
		// 90 % chip stays silent.
		Name: "dense restart in a pod (workload memory)", Duration: 10 * minute, Silent: true, Pod: "train/llm-dense-worker-0",
		Events: []Event{
			at(0, func(n *node) { n.SetHBM(59000); n.Start(1013, 8, 200) }),
			at(0.5, func(n *node) { n.Comm(1013, "w", 64, 8) }),
			at(1, func(n *node) {
				n.CCLBuffer(1013, 200)
				n.Links(1013, mesh("w"), 7, peers(8, 56, 8), 9)
				n.SetHBM(60000)
			}),
			at(4, func(n *node) { n.Stop(1013); n.SetHBM(3000) }),
			at(4.5, func(n *node) { n.Start(1014, 8, 200); n.Comm(1014, "w", 64, 8) }),
			at(5, func(n *node) { n.SetHBM(59000) }),
			at(6, func(n *node) {
				n.CCLBuffer(1014, 200)
				n.Links(1014, mesh("w"), 7, peers(8, 56, 8), 9)
				n.SetHBM(60000)
			}),
		},
	},
}
