package cannlog

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/logstate"
	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/parse"
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
	// zoneMaxDepth bounds the directory walk below a sort directory.
	zoneMaxDepth = 3
)

var (
	zoneOffsetDesc = prometheus.NewDesc("hccl_exporter_log_timezone_offset_seconds",
		"UTC offset the writers of a CANN log root print their times in, inferred from the newest file's modification time "+
			"and the time printed in its last line (whole quarter-hours). Absent while no file allows it.",
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
	lastTry   time.Time
	warnedFor string // the mismatch last warned about
}

// zones infers and applies the zone of every row of the table of log
// roots (roots.go): configured and discovered roots alike.
type zones struct {
	auto  bool
	fixed *time.Location // the configured zone when not auto
	local func() *time.Location
	t     *rootTable
}

func newZones(t *rootTable, auto bool, fixed *time.Location) *zones {
	return &zones{auto: auto, fixed: fixed, local: func() *time.Location { return time.Local }, t: t}
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
	retry := r.zone.inferred == nil && now.Sub(r.zone.lastTry) >= zoneRetry
	z.t.mu.Unlock()
	if retry {
		z.inferRoot(r, now, logWarn)
	}
	z.t.mu.Lock()
	defer z.t.mu.Unlock()
	return z.source(&r.zone)
}

// inferAll infers every root's zone again.
func (z *zones) inferAll(now time.Time, logWarn func(msg string, args ...any)) {
	for _, r := range z.t.rows() {
		z.inferRoot(r, now, logWarn)
	}
}

// inferRoot infers one root's zone from its newest log file and warns once
// per change when it differs from the zone the exporter would use.
func (z *zones) inferRoot(r *logRoot, now time.Time, logWarn func(msg string, args ...any)) {
	root := r.path
	path, mtime, ok := newestLog(root, r.nspid)
	var off time.Duration
	if ok {
		var printed time.Time
		printed, ok = lastPrintedTime(path)
		if ok {
			off, ok = logstate.InferOffset(printed, mtime)
		}
	}
	z.t.mu.Lock()
	defer z.t.mu.Unlock()
	rz := &r.zone
	rz.lastTry = now
	if !ok {
		return
	}
	rz.inferred, rz.offset, rz.from = logstate.ZoneForOffset(off), off, path
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
		"applied_offset", logstate.ZoneForOffset(time.Duration(appliedOff)*time.Second).String(), "inferred_from", path)
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

// newestLog finds the most recently modified CANN log under a root's sort
// directories; with pid set (a discovered root), the newest of that
// process's own files: the other ranks sharing the directory are inferred
// through their own rows.
func newestLog(root string, pid int) (path string, mtime time.Time, ok bool) {
	own := "-" + strconv.Itoa(pid) + "_"
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				if depth < zoneMaxDepth {
					walk(p, depth+1)
				}
				continue
			}
			if !isLogName(e.Name()) || (pid != 0 && !strings.Contains(e.Name(), own)) || e.Type()&os.ModeSymlink != 0 {
				continue
			}
			fi, err := e.Info()
			if err != nil || fi.Size() == 0 {
				continue
			}
			if fi.ModTime().After(mtime) {
				path, mtime, ok = p, fi.ModTime(), true
			}
		}
	}
	// The CANN log sort directories, as the follower and logstate.LogDir know them.
	for _, sd := range []string{"run", "debug", "security"} {
		walk(filepath.Join(root, sd), 0)
	}
	return path, mtime, ok
}

// lastPrintedTime returns the time printed in the last complete line of a
// plog that has one, read as if in UTC.
func lastPrintedTime(path string) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, false
	}
	start := max(fi.Size()-zoneTailBytes, 0)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return time.Time{}, false
	}
	// Drop a partial last line, then look from the end for a line with a time.
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[:i]
	}
	var p parse.PlogLine
	for len(buf) > 0 {
		i := bytes.LastIndexByte(buf, '\n')
		line := buf[i+1:]
		buf = buf[:max(i, 0)]
		if parse.ParsePlog(line, &p) {
			if t, ok := parse.ParsePlogTime(p.Time, time.UTC); ok {
				return t, true
			}
		}
		if i < 0 {
			break
		}
	}
	return time.Time{}, false
}
