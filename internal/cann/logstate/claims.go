package logstate

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Claims: which job identity a communicator gives the faults of the
// processes that name it (jobOf), and whose it is when the processes of
// several owners name it.
//
// A job's processes on one node share their world communicator's
// identifier (the same on every node of the job); its faults carry it as
// hccl_job, which pages the job's owner and inhibits the job's waiting
// codes. Identifiers are printed text: anyone who scrapes
// hccl_communicator_info can print another job's. So a communicator is
// the job identity of the first claimant that named it (the kernel says
// who: claimantOf), for as long as that claimant names it; a later
// claimant's processes are a second row of their own (their faults carry
// their own pod, or no hccl_job) and never take the identity away.

// claimantOf is who claims the communicators of pr: the workload of its
// pod ("k8s/<namespace>/<owner>", WorkloadOfPod) where its cgroup and the
// kubelet's log layout name the pod, so that the pods of one job on a node
// are one claimant; else its owner (a pod's UID, a uid and its container's
// cgroup, a log directory).
func claimantOf(pr *process) string {
	if kernelOwner(pr.owner) && pr.ownerPod[1] != "" {
		return WorkloadOfPod(pr.ownerPod[0], pr.ownerPod[1])
	}
	return pr.owner
}

// jobName is the job identity communicator c of pr stands for: its
// identifier, except for a graph-mode world group, which HCCL names
// hccl_world_group in every job (worldGroupJob).
func jobName(pr *process, c *comm.Communicator) string {
	if c.Name != parse.WorldGroup {
		return c.Name
	}
	return worldGroupJob(pr, c)
}

// worldGroupJob is the identity of a graph-mode job's world group, the
// same on every node of the job and different between jobs, from what the
// kernel says of its processes where it can:
//
//   - on Kubernetes, the workload of the process's own pod (its cgroup,
//     the kubelet's log layout): "hccl_world_group@k8s/<ns>/<owner>". The
//     pods of one job share their controller's name on every node; two
//     jobs do not (or are in two namespaces).
//   - elsewhere, the process's uid, the rank table file it was created
//     from and the rank count, hashed: "hccl_world_group@<12 hex>". A
//     job's processes on every node run as one user from one rank table
//     (MindSpore and TensorFlow jobs pass the same RANK_TABLE_FILE to every
//     server; HCCL checks that every rank read the same table), two jobs
//     of two users never collide, and two jobs of one user collide only
//     when they were started from one path with one rank count.
//
// The rank table path and the rank count are printed by the job
// (`hcom init by file … rankTablePath[…], rankNum[…]`, hcom_common.cc:1611):
// a tenant can print another job's, but the uid is the kernel's, and on
// one node the first claimant keeps the identity (trusted).
func worldGroupJob(pr *process, c *comm.Communicator) string {
	if kernelOwner(pr.owner) && pr.ownerPod[1] != "" {
		return parse.WorldGroup + "@" + WorkloadOfPod(pr.ownerPod[0], pr.ownerPod[1])
	}
	uid := ""
	if rest, ok := strings.CutPrefix(pr.owner, "uid:"); ok {
		uid, _, _ = strings.Cut(rest, "/")
	}
	h := sha256.Sum256([]byte(uid + "\x00" + pr.rankTable + "\x00" + strconv.Itoa(c.RankSize)))
	return parse.WorldGroup + "@" + hex.EncodeToString(h[:6])
}

// claimed is the hook of applyCommunicator: pr now names a new
// communicator (ci as printed). The first claimant of its job identity is
// recorded, so that a later one never takes it. The caller holds the lock.
func (s *State) claimed(key ProcessKey, pr *process, c *comm.Communicator, ci parse.Communicator) {
	if ci.Identifier == parse.WorldGroup && ci.RankTable != "" {
		pr.rankTable = labelValue(ci.RankTable, 2*maxValueLen)
	}
	name, who := jobName(pr, c), claimantOf(pr)
	if s.firstClaims == nil {
		s.firstClaims = map[string]claim{}
	}
	fc := s.firstClaims[name]
	side := &fc.dir
	if kernelOwner(pr.owner) {
		side = &fc.kernel
	}
	if *side == "" {
		*side = who
		s.firstClaims[name] = fc
	}
	s.releaseHeld(key, pr)
}
