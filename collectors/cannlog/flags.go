package cannlog

import (
	"fmt"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/follow"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
)

// AddFlags registers the --cannlog.* flags: how the log follower
// (internal/cann/follow) reads, which main builds from them. The default root is computed from
// the environment when the flags are defined, so --help shows it.
func AddFlags(app *kingpin.Application, rules *flagcheck.Rules) *follow.Config {
	cfg := &follow.Config{}
	d := logstate.DefaultOptions()
	rules.Flag(app, "cannlog.root", "CANN log root holding run/, debug/ and security/ (repeatable). "+
		"Default: $ASCEND_PROCESS_LOG_PATH, else $ASCEND_WORK_PATH/log, else $HOME/ascend/log.", flagcheck.Path).
		Default(follow.DefaultRoot(os.Getenv)).StringsVar(&cfg.Roots)
	rules.Flag(app, "cannlog.screen-log-path", "Glob of training screen logs: plain text, Kubernetes CRI (/var/log/pods/*/*/*.log) "+
		"or Docker json-file (repeatable).", flagcheck.Glob).StringsVar(&cfg.ScreenGlobs)
	rules.Flag(app, "cannlog.state-file", "File keeping read offsets and counters across restarts, so that a restart "+
		"neither recounts nor skips lines; it also keeps the QP sizes the headroom model learned and the workload memory "+
		"(docs/headroom.md). Empty: start from the beginning of every file, and learn and remember anew.", flagcheck.StateFile).StringVar(&cfg.StateFile)
	rules.Flag(app, "cannlog.process-ttl", "How long a process that no longer shows as alive (npu-smi, /proc) keeps its "+
		"series after its last log write.", flagcheck.Positive(30*flagcheck.MaxInterval)).Default("1h").DurationVar(&cfg.ProcessTTL)
	rules.Flag(app, "cannlog.fault-ttl", "How long the fault series of a pod or a job (hccl_job) stay after their latest event; "+
		"then they are dropped (hccl_exporter_fault_series_expired_total). Longer than the longest HCCL timer + 10 minutes.", flagcheck.Positive(30*flagcheck.MaxInterval)).Default("6h").DurationVar(&cfg.FaultTTL)
	rules.Flag(app, "cannlog.poll-interval", "How often the logs are read.", flagcheck.DurationIn(10*time.Millisecond, time.Hour, "a duration from 10ms to 1h, such as 1s")).Default("1s").DurationVar(&cfg.PollInterval)
	rules.Flag(app, "cannlog.rescan-interval", "How often the log directories are listed again and every followed file "+
		"looked at, as the fallback for events inotify missed (new files are seen at once where inotify works).", flagcheck.DurationIn(100*time.Millisecond, flagcheck.MaxInterval, "a duration from 100ms to 24h, not below --cannlog.poll-interval")).
		Default(tail.DefaultRescanInterval.String()).DurationVar(&cfg.RescanInterval)
	rules.Flag(app, "cannlog.checkpoint-interval", "How often the state file is written while lines arrive.", flagcheck.DurationIn(100*time.Millisecond, flagcheck.MaxInterval, "a duration from 100ms to 24h, such as 10s")).
		Default("10s").DurationVar(&cfg.CheckpointInterval)
	rules.Flag(app, "cannlog.max-line-bytes", "Longest line read; longer lines are cut and counted.", flagcheck.IntIn(1<<10, 64<<20, "a number of bytes from 1024 to 67108864 (a line is held whole until its end)")).
		Default(fmt.Sprint(tail.DefaultMaxLineBytes)).IntVar(&cfg.MaxLineBytes)
	rules.Flag(app, "cannlog.max-open-files", fmt.Sprintf("Most log files held open at once. Past it, fully read files are closed "+
		"least recently written first and opened again (same path, device and inode) when they are written; files with "+
		"unread bytes, and deleted ones still being read, keep theirs. 0: RLIMIT_NOFILE minus %d reserved for the HTTP "+
		"listener and connections, npu-smi/hccn_tool pipes and the kubelet socket (at least half the limit); now %d.",
		tail.OpenFilesReserve, tail.DefaultMaxOpenFiles()), flagcheck.IntIn(0, 1<<24, "0 (from RLIMIT_NOFILE) or a number of files up to 16777216")).
		Default("0").IntVar(&cfg.MaxOpenFiles)
	rules.Flag(app, "cannlog.max-pids", "Cap on distinct processes (pid label) with settings or communicators.", flagcheck.Cap).
		Default(fmt.Sprint(d.MaxPIDs)).IntVar(&cfg.MaxPIDs)
	rules.Flag(app, "cannlog.max-communicators", "Cap on communicators over all processes.", flagcheck.Cap).
		Default(fmt.Sprint(d.MaxCommunicators)).IntVar(&cfg.MaxCommunicators)
	rules.Flag(app, "cannlog.max-codes", "Cap on distinct fault codes outside the fault catalog.", flagcheck.Cap).
		Default(fmt.Sprint(d.MaxCodes)).IntVar(&cfg.MaxCodes)
	rules.Flag(app, "cannlog.max-fault-pods", "Cap on distinct namespace/pod/container label sets of fault series.", flagcheck.Cap).
		Default(fmt.Sprint(d.MaxPods)).IntVar(&cfg.MaxPods)
	rules.Flag(app, "cannlog.max-modules", "Cap on distinct plog modules.", flagcheck.Cap).
		Default(fmt.Sprint(d.MaxModules)).IntVar(&cfg.MaxModules)
	rules.Flag(app, "cannlog.cross-filesystems", "Follow CANN log directories below a root that are mount points of other "+
		"file systems, and discovered roots (--path.procfs) on FUSE or network file systems. Off, a job's tree cannot "+
		"lead the exporter into another file system or one whose reads can hang (counted in hccl_exporter_log_paths_refused_total).", flagcheck.Switch).
		BoolVar(&cfg.CrossFilesystems)
	rules.Flag(app, "cannlog.timezone", "Zone the log writers print their times in (CANN prints local time without a zone): "+
		"auto infers it per log root from file modification times versus the time printed in the files' last lines "+
		"(and, for screen logs, from the CRI or Docker time stamps), so a UTC container on a UTC+8 node is read right; "+
		"Local is the exporter's zone; or an IANA name such as Asia/Shanghai, or a UTC offset such as +08:00.", timezoneRule).
		Default(follow.TimezoneAuto).StringVar(&cfg.Timezone)
	return cfg
}

// timezoneRule: what --cannlog.timezone accepts (follow.ParseTimezone).
var timezoneRule = flagcheck.StringRule("auto, Local, an IANA zone such as Asia/Shanghai, or a UTC offset such as +08:00", func(s string) bool {
	_, _, err := follow.ParseTimezone(s)
	return err == nil
})
