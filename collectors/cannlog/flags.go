package cannlog

import (
	"fmt"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/follow"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

// AddFlags registers the --cannlog.* flags: how the log follower
// (internal/cann/follow) reads, which main builds from them. The default root is computed from
// the environment when the flags are defined, so --help shows it.
func AddFlags(app *kingpin.Application) *follow.Config {
	cfg := &follow.Config{}
	d := logstate.DefaultOptions()
	app.Flag("cannlog.root", "CANN log root holding run/, debug/ and security/ (repeatable). "+
		"Default: $ASCEND_PROCESS_LOG_PATH, else $ASCEND_WORK_PATH/log, else $HOME/ascend/log.").
		Default(follow.DefaultRoot(os.Getenv)).StringsVar(&cfg.Roots)
	app.Flag("cannlog.screen-log-path", "Glob of training screen logs: plain text, Kubernetes CRI (/var/log/pods/*/*/*.log) "+
		"or Docker json-file (repeatable).").StringsVar(&cfg.ScreenGlobs)
	app.Flag("cannlog.state-file", "File keeping read offsets and counters across restarts, so that a restart "+
		"neither recounts nor skips lines; it also keeps the QP sizes the headroom model learned and the workload memory "+
		"(docs/headroom.md). Empty: start from the beginning of every file, and learn and remember anew.").StringVar(&cfg.StateFile)
	app.Flag("cannlog.process-ttl", "How long a process that no longer shows as alive (npu-smi, /proc) keeps its "+
		"series after its last log write.").Default("1h").DurationVar(&cfg.ProcessTTL)
	app.Flag("cannlog.fault-ttl", "How long the fault series of a pod or a job (hccl_job) stay after their latest event; "+
		"then they are dropped (hccl_exporter_fault_series_expired_total). Longer than the longest HCCL timer + 10 minutes.").Default("6h").DurationVar(&cfg.FaultTTL)
	app.Flag("cannlog.poll-interval", "How often the logs are read.").Default("1s").DurationVar(&cfg.PollInterval)
	app.Flag("cannlog.rescan-interval", "How often the log directories are listed again and every followed file "+
		"looked at, as the fallback for events inotify missed (new files are seen at once where inotify works).").
		Default(tail.DefaultRescanInterval.String()).DurationVar(&cfg.RescanInterval)
	app.Flag("cannlog.checkpoint-interval", "How often the state file is written while lines arrive.").
		Default("10s").DurationVar(&cfg.CheckpointInterval)
	app.Flag("cannlog.max-line-bytes", "Longest line read; longer lines are cut and counted.").
		Default(fmt.Sprint(tail.DefaultMaxLineBytes)).IntVar(&cfg.MaxLineBytes)
	app.Flag("cannlog.max-open-files", fmt.Sprintf("Most log files held open at once. Past it, fully read files are closed "+
		"least recently written first and opened again (same path, device and inode) when they are written; files with "+
		"unread bytes, and deleted ones still being read, keep theirs. 0: RLIMIT_NOFILE minus %d reserved for the HTTP "+
		"listener and connections, npu-smi/hccn_tool pipes and the kubelet socket (at least half the limit); now %d.",
		tail.OpenFilesReserve, tail.DefaultMaxOpenFiles())).
		Default("0").IntVar(&cfg.MaxOpenFiles)
	app.Flag("cannlog.max-pids", "Cap on distinct processes (pid label) with settings or communicators.").
		Default(fmt.Sprint(d.MaxPIDs)).IntVar(&cfg.MaxPIDs)
	app.Flag("cannlog.max-communicators", "Cap on communicators over all processes.").
		Default(fmt.Sprint(d.MaxCommunicators)).IntVar(&cfg.MaxCommunicators)
	app.Flag("cannlog.max-codes", "Cap on distinct fault codes outside the fault catalog.").
		Default(fmt.Sprint(d.MaxCodes)).IntVar(&cfg.MaxCodes)
	app.Flag("cannlog.max-fault-pods", "Cap on distinct namespace/pod/container label sets of fault series.").
		Default(fmt.Sprint(d.MaxPods)).IntVar(&cfg.MaxPods)
	app.Flag("cannlog.max-modules", "Cap on distinct plog modules.").
		Default(fmt.Sprint(d.MaxModules)).IntVar(&cfg.MaxModules)
	app.Flag("cannlog.cross-filesystems", "Follow CANN log directories below a root that are mount points of other "+
		"file systems, and discovered roots (--path.procfs) on FUSE or network file systems. Off, a job's tree cannot "+
		"lead the exporter into another file system or one whose reads can hang (counted in hccl_exporter_log_paths_refused_total).").
		BoolVar(&cfg.CrossFilesystems)
	app.Flag("cannlog.timezone", "Zone the log writers print their times in (CANN prints local time without a zone): "+
		"auto infers it per log root from file modification times versus the time printed in the files' last lines "+
		"(and, for screen logs, from the CRI or Docker time stamps), so a UTC container on a UTC+8 node is read right; "+
		"Local is the exporter's zone; or an IANA name such as Asia/Shanghai, or a UTC offset such as +08:00.").
		Default(follow.TimezoneAuto).StringVar(&cfg.Timezone)
	return cfg
}
