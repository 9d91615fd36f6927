package follow

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

// TimezoneAuto is the --cannlog.timezone value that infers each log root's
// zone from its files.
const TimezoneAuto = "auto"

const (
	// zoneEvery is how often the zones of the log roots are inferred again
	// (a node's zone rarely changes; a new pod's root is inferred when its
	// first lines arrive).
	zoneEvery = 10 * time.Minute
	// zoneRetry bounds how often a root whose zone is unknown is tried again.
	zoneRetry = 30 * time.Second
	// zoneTailBytes is how much of a file's end is read for its last line.
	zoneTailBytes = 16 << 10
)

var (
	zoneOffsetDesc = prometheus.NewDesc("hccl_exporter_log_timezone_offset_seconds",
		"UTC offset the writers of a CANN log root print their times in, inferred from the newest file by the rule diagnose applies to a node "+
			"(its communicator identifiers' creation times, else its modification time, against the times it prints; whole quarter-hours). "+
			"Absent while no file allows it.",
		[]string{"root"}, nil)
	zoneAppliedDesc = prometheus.NewDesc("hccl_exporter_log_timezone_applied_offset_seconds",
		"UTC offset the exporter reads the times of a CANN log root in (--cannlog.timezone: the inferred one under auto).",
		[]string{"root"}, nil)
)

// ParseTimezone reads --cannlog.timezone: auto (nil location, auto true), or
// a zone as ParseZone reads it.
func ParseTimezone(s string) (loc *time.Location, auto bool, err error) {
	if s == TimezoneAuto || s == "" {
		return nil, true, nil
	}
	loc, err = logstate.ParseZone(s)
	if err != nil {
		return nil, false, fmt.Errorf("--cannlog.timezone=%q: %w; or auto, to infer it per log root", s, err)
	}
	return loc, false, nil
}

// rootZone is what is known of one log root's zone.
type rootZone struct {
	inferred  *time.Location // nil: not inferred
	offset    time.Duration
	from      string // the file it was inferred from
	basis     string // the evidence (logstate.ZoneBasis*)
	lastTry   time.Time
	warnedFor string // the mismatch last warned about
	// pending is the look at the root still running: one per root at
	// most, never waited for again once it outlived its deadline (a hung
	// file system); its answer is taken when it returns.
	pending chan zoneAnswer
}

// zoneAnswer is what one look at a root's files found.
type zoneAnswer struct {
	path   string
	offset time.Duration
	basis  string
	ok     bool
}

// zones infers and applies the zone of every row of the table of log
// roots (roots.go): configured and discovered roots alike.
//
// A root is a tree a tenant can write (a job's own root, or a host path
// its containers mount), so its files are looked at as the follower reads
// them (tail.OpenRootDir and friends): from the root's descriptor, CANN's
// layout only, no link followed, no mount point entered unless
// --cannlog.cross-filesystems, each file type-checked with fstat before
// it is read; and off the poll goroutine, waited for at most
// zoneDeadline: a hung FUSE file in one job's run/device-0 costs that
// root its zone, nobody else anything, and shutdown is not held up.
type zones struct {
	auto  bool
	fixed *time.Location // the configured zone when not auto
	local func() *time.Location
	t     *rootTable
	cross bool
	// hung counts looks abandoned at the deadline.
	hung atomic.Uint64
}

// zoneDeadline is how long the poll goroutine waits for a look at a root
// (as long as the follower waits for a call on one).
var zoneDeadline = tail.DefaultIODeadline

func newZones(t *rootTable, auto bool, fixed *time.Location, cross bool) *zones {
	return &zones{auto: auto, fixed: fixed, local: func() *time.Location { return time.Local }, t: t, cross: cross}
}

// source returns the zone to put on the Sources of a root: nil (the
// State's own zone, the exporter's) under auto until the root's is inferred.
func (z *zones) source(rz *rootZone) *time.Location {
	if !z.auto {
		return z.fixed
	}
	if rz != nil && rz.inferred != nil {
		return rz.inferred
	}
	return nil
}

// applied returns the zone the times of root are read in.
func (z *zones) applied(rz *rootZone) *time.Location {
	if loc := z.source(rz); loc != nil {
		return loc
	}
	return z.local()
}

// locationFor returns the zone for lines of a log directory; under auto a
// root not inferred yet is tried first (at most every zoneRetry).
func (z *zones) locationFor(dir string, now time.Time, logWarn func(msg string, args ...any)) *time.Location {
	z.t.mu.Lock()
	r := z.t.rootOfLocked(dir)
	if r == nil {
		z.t.mu.Unlock()
		return z.source(nil)
	}
	retry := r.zone.inferred == nil && (now.Sub(r.zone.lastTry) >= zoneRetry || r.zone.pending != nil)
	z.t.mu.Unlock()
	if retry {
		z.infer([]*logRoot{r}, now, logWarn)
	}
	z.t.mu.Lock()
	defer z.t.mu.Unlock()
	return z.source(&r.zone)
}

// inferAll infers every root's zone again.
func (z *zones) inferAll(now time.Time, logWarn func(msg string, args ...any)) {
	z.infer(z.t.rows(), now, logWarn)
}

// infer looks at the roots' files, each on a goroutine of its own, and
// waits for them together at most zoneDeadline. A look still running then
// is abandoned (counted; its root is not looked at again until it
// returns) and a look that returned since is taken.
func (z *zones) infer(rows []*logRoot, now time.Time, logWarn func(msg string, args ...any)) {
	type look struct {
		r     *logRoot
		ch    chan zoneAnswer
		fresh bool
	}
	var looks []look
	z.t.mu.Lock()
	for _, r := range rows {
		l := look{r: r, ch: r.zone.pending}
		if l.ch == nil {
			l.ch, l.fresh = make(chan zoneAnswer, 1), true
			r.zone.pending = l.ch
			path, anchor, pid, cross := r.path, r.anchor, r.nspid, z.cross
			go func(ch chan<- zoneAnswer) { ch <- lookAtRoot(path, anchor, pid, cross) }(l.ch)
		}
		looks = append(looks, l)
	}
	z.t.mu.Unlock()
	timer := time.NewTimer(zoneDeadline)
	defer timer.Stop()
	expired := false
	for _, l := range looks {
		var a zoneAnswer
		got := false
		if l.fresh && !expired {
			select {
			case a = <-l.ch:
				got = true
			case <-timer.C:
				expired = true
			}
		}
		if !got {
			select {
			case a = <-l.ch:
				got = true
			default:
			}
		}
		if !got {
			z.t.mu.Lock()
			l.r.zone.lastTry = now
			z.t.mu.Unlock()
			if l.fresh {
				z.hung.Add(1)
				logWarn("a CANN log root did not answer while its time zone was inferred (a hung file system?); its zone stays unknown until it does",
					"root", l.r.path, "deadline", zoneDeadline)
			}
			continue
		}
		z.apply(l.r, a, now, logWarn)
	}
}

// apply records what a look at r found and warns once per change when the
// zone differs from the one the exporter would use.
func (z *zones) apply(r *logRoot, a zoneAnswer, now time.Time, logWarn func(msg string, args ...any)) {
	z.t.mu.Lock()
	defer z.t.mu.Unlock()
	root := r.path
	rz := &r.zone
	rz.pending = nil
	rz.lastTry = now
	if !a.ok {
		return
	}
	off := a.offset
	rz.inferred, rz.offset, rz.from, rz.basis = logstate.ZoneForOffset(off), off, a.path, a.basis
	_, localOff := now.In(z.local()).Zone()
	_, appliedOff := now.In(z.applied(rz)).Zone()
	var msg string
	switch {
	case !z.auto && appliedOff != int(off.Seconds()):
		msg = "CANN log times are printed in another zone than --cannlog.timezone: fault times and the process TTL are off by the difference; set --cannlog.timezone=auto"
	case z.auto && localOff != int(off.Seconds()):
		msg = "CANN log times are printed in another zone than the exporter's; reading them in the inferred zone"
	}
	if msg == "" {
		rz.warnedFor = ""
		return
	}
	key := fmt.Sprint(off, appliedOff)
	if rz.warnedFor == key {
		return
	}
	rz.warnedFor = key
	logWarn(msg, "root", root, "writers_offset", logstate.ZoneForOffset(off).String(), "exporter_offset", logstate.ZoneForOffset(time.Duration(localOff)*time.Second).String(),
		"applied_offset", logstate.ZoneForOffset(time.Duration(appliedOff)*time.Second).String(), "inferred_from", a.path, "basis", a.basis)
}

// metrics sends the inferred and applied offset of every root.
func (z *zones) metrics(ch chan<- prometheus.Metric, now time.Time) {
	z.t.mu.Lock()
	defer z.t.mu.Unlock()
	for _, r := range z.t.order {
		rz := &r.zone
		if rz.inferred != nil {
			ch <- prometheus.MustNewConstMetric(zoneOffsetDesc, prometheus.GaugeValue, rz.offset.Seconds(), r.path)
		}
		_, applied := now.In(z.applied(rz)).Zone()
		ch <- prometheus.MustNewConstMetric(zoneAppliedDesc, prometheus.GaugeValue, float64(applied), r.path)
	}
}

// isLogName reports whether name is a CANN plog or device log.
func isLogName(name string) bool {
	return (strings.HasPrefix(name, "plog-") || strings.HasPrefix(name, "device-")) && strings.HasSuffix(name, ".log")
}

// Caps of one look at a root: CANN's layout holds a few directories and
// ten files per process and directory.
const (
	zoneMaxNames = tail.DefaultMaxEntriesPerRoot
	zoneMaxDirs  = tail.DefaultMaxDirsPerRoot
)

// lookAtRoot infers a root's zone (logstate.InferZone) from the newest CANN
// log below its sort directories, with pid set (a discovered root) the
// newest of that process's own files (the other ranks sharing the
// directory are inferred through their own rows): the communicator
// identifiers in its first and last zoneTailBytes, else its modification
// time against its last printed time. It blocks as the file system
// pleases: callers run it on a goroutine of its own.
func lookAtRoot(root, anchor string, pid int, cross bool) zoneAnswer {
	rfd, err := tail.OpenRootDir(root, anchor, cross)
	if err != nil {
		return zoneAnswer{}
	}
	defer syscall.Close(rfd)
	own := "-" + strconv.Itoa(pid) + "_"
	var (
		best      [3]string // sort dir, layout dir, name of the newest
		bestMtime time.Time
		names     = zoneMaxNames
		dirs      = zoneMaxDirs
	)
	// The CANN log sort directories, as the follower and logstate.LogDir know them.
	for _, sd := range []string{"run", "debug", "security"} {
		sfd, err := tail.OpenDirBelow(rfd, sd, cross)
		if err != nil {
			continue
		}
		subs, _, _ := tail.ListNames(sfd, max(names, 0))
		names -= len(subs)
		for _, sub := range subs {
			if !tail.LayoutDir(sub) || dirs <= 0 || names <= 0 {
				continue
			}
			dirs--
			dfd, err := tail.OpenDirBelow(sfd, sub, cross)
			if err != nil {
				continue
			}
			files, _, _ := tail.ListNames(dfd, names)
			names -= len(files)
			for _, n := range files {
				if !isLogName(n) || (pid != 0 && !strings.Contains(n, own)) {
					continue
				}
				var st syscall.Stat_t
				if tail.StatBelow(dfd, n, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size == 0 {
					continue // a link, a FIFO, a device node: not a log
				}
				if mt := time.Unix(st.Mtim.Sec, st.Mtim.Nsec); mt.After(bestMtime) {
					best, bestMtime = [3]string{sd, sub, n}, mt
				}
			}
			_ = syscall.Close(dfd)
		}
		_ = syscall.Close(sfd)
	}
	if bestMtime.IsZero() {
		return zoneAnswer{}
	}
	ev, ok := readZoneEvidence(rfd, best, cross)
	if !ok {
		return zoneAnswer{}
	}
	path := filepath.Join(root, best[0], best[1], best[2])
	off, _, basis, ok := logstate.InferZone(ev)
	return zoneAnswer{path: path, offset: off, basis: basis, ok: ok}
}

// readZoneEvidence opens <sd>/<sub>/<name> below the root's descriptor
// again (no link, type checked before the read) and reads the evidence of
// its first and last zoneTailBytes.
func readZoneEvidence(rfd int, at [3]string, cross bool) (logstate.ZoneEvidence, bool) {
	var ev logstate.ZoneEvidence
	sfd, err := tail.OpenDirBelow(rfd, at[0], cross)
	if err != nil {
		return ev, false
	}
	defer syscall.Close(sfd)
	dfd, err := tail.OpenDirBelow(sfd, at[1], cross)
	if err != nil {
		return ev, false
	}
	defer syscall.Close(dfd)
	fd, st, err := tail.OpenFileBelow(dfd, at[2])
	if err != nil {
		return ev, false
	}
	defer syscall.Close(fd)
	ev.ModTime = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	head := make([]byte, min(st.Size, zoneTailBytes))
	n, _ := tail.Pread(fd, head, 0)
	head = head[:n]
	start := max(st.Size-zoneTailBytes, 0)
	tailBuf := make([]byte, st.Size-start)
	n, _ = tail.Pread(fd, tailBuf, start)
	tailBuf = tailBuf[:n]
	zoneLines(&ev, head, false)
	zoneLines(&ev, tailBuf, true)
	return ev, true
}

// zoneLines adds the evidence of the complete lines of buf: the
// communicator identifiers its lines name with their printed times, and,
// with last set, the time printed in its last complete line.
func zoneLines(ev *logstate.ZoneEvidence, buf []byte, last bool) {
	// Drop a partial last line.
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[:i]
	} else {
		return
	}
	var p parse.PlogLine
	for len(buf) > 0 {
		i := bytes.LastIndexByte(buf, '\n')
		line := buf[i+1:]
		buf = buf[:max(i, 0)]
		if parse.ParsePlog(line, &p) {
			if t, ok := parse.ParsePlogTime(p.Time, time.UTC); ok {
				if last && ev.LastPrinted.IsZero() {
					ev.LastPrinted = t
				}
				if ci, ok := parse.ParseCommunicatorKeyInfo(p.Msg); ok {
					ev.AddIdentifier(ci.Identifier, t)
				}
			}
		}
		if i < 0 {
			break
		}
	}
}
